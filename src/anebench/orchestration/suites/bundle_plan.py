"""What a suite will build and call on an engine that builds bundles, known before anything is built:
the dry run, the refusals.

Every such suite (token roofline, compute, quantisation, size sweep) first lists its bundles: the
workload, storage, tokens per call, the weight bytes the program will read (from the layout, or the
cache's manifest), whether the cache already holds it, and the measurement it serves. ``--dry-run``
prints that list; without it, a host that cannot run the engine is refused in one line before any build.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...engines.base import Engine
from ...errors import UserError
from ...system.host import available_memory_bytes
from ...workloads import Workload
from ..executor import active_executor
from ..preflight import MEMORY_HEADROOM
from ..session import Measurement, RunOptions
from .common import ProgressFactory

DRY_RUN_HINT = "--dry-run lists the bundles it would build and the calls it would make"


@dataclass(frozen=True)
class PlannedBundle:
    workload: Workload  # as measured: its quant and tokens name the bundle
    quant: str
    tokens: int
    weight_bytes: int  # what one call reads, from the program layout (or the cached manifest)
    cached: bool
    key: str
    calls: str  # the measurement this bundle serves

    def as_dict(self) -> dict:
        return {
            "workload": self.workload.name,
            "quant": self.quant,
            "tokens": self.tokens,
            "weight_bytes": self.weight_bytes,
            "cached": self.cached,
            "key": self.key,
            "calls": self.calls,
        }


@dataclass(frozen=True)
class BundlePlan:
    suite: str
    engine: str
    device: str
    bundles: list[PlannedBundle]
    notes: list[str]

    @property
    def to_build(self) -> list[PlannedBundle]:
        return [b for b in self.bundles if not b.cached]


def plan_bundle(engine: Engine, workload: Workload, calls: str) -> PlannedBundle:
    spec = engine.plan_bundle(workload)
    return PlannedBundle(workload, spec.quant, spec.tokens, spec.weight_bytes, spec.cached, spec.key, calls)


def calls_text(engine: Engine, device: str, what: str, runs: int, budget_s: float | None) -> str:
    limit = f", at most {budget_s:g} s" if budget_s else ""
    return (
        f"{what}: output check, warmup until steady, {runs} timed {engine.call_name}s{limit} on "
        f"{engine.name}:{device}"
    )


def activation_bytes(workload: Workload) -> int:
    """Inputs and logits of one call: fp16 in the request, float32 once joined for the output check."""
    return workload.vectors * (workload.hidden + workload.vocab) * (2 + 4)


def fits_in_memory(engine: Engine, device: str, workload: Workload) -> bool:
    needed = (engine.bytes_for(workload, device) + activation_bytes(workload)) * MEMORY_HEADROOM
    return needed <= available_memory_bytes()


def require_measurable(engine: Engine, device: str, suite: str) -> None:
    """One line, before anything is built, where this host cannot run the engine on the device."""
    problem = engine.device_problem(device)
    if problem:
        raise UserError(f"{suite} -e {engine.name} cannot measure here: {problem}; {DRY_RUN_HINT}")


def measure_bundle(engine: Engine, device: str, bundle: PlannedBundle, options: RunOptions,
                   progress: ProgressFactory, suite: str) -> Measurement:
    label = f"{suite} {engine.name}:{device} {bundle.workload.name} {bundle.quant} {bundle.tokens} tokens"
    return active_executor().measure_parts(engine, device, bundle.workload, options,
                                           progress(label, options.runs))
