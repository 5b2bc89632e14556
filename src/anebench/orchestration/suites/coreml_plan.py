"""What a Core ML suite will build and call, known before anything is built: the dry run, the refusals.

Every Core ML suite (token roofline, compute, quantisation, size sweep) first lists its bundles: the
workload, storage, tokens per predict, the weight bytes the program will read (from the layout, or the
cache's manifest), whether the cache already holds it, and the measurement it serves. ``--dry-run``
prints that list; without it, a host that cannot predict is refused in one line before any build.
"""

from __future__ import annotations

from dataclasses import dataclass

from ...artifacts import BuildSpec, lookup
from ...engines.coreml_engine import COMPUTE_UNITS, CoreMLEngine
from ...errors import UserError
from ...system import preflight
from ...system.host import available_memory_bytes
from ...workloads import Workload
from ..preflight import MEMORY_HEADROOM

CORE_ML = "coreml"
DRY_RUN_HINT = "--dry-run lists the bundles it would build and the calls it would make"


@dataclass(frozen=True)
class PlannedBundle:
    workload: Workload  # as measured: its quant and tokens name the bundle
    quant: str
    tokens: int
    weight_bytes: int  # what one predict reads, from the program layout (or the cached manifest)
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
class CoreMLPlan:
    suite: str
    device: str
    bundles: list[PlannedBundle]
    notes: list[str]

    @property
    def to_build(self) -> list[PlannedBundle]:
        return [b for b in self.bundles if not b.cached]


def coreml_engine_for(engine: CoreMLEngine | None = None) -> CoreMLEngine:
    """The Core ML engine to plan with, available or not: planning needs no Mac."""
    return engine if engine is not None else CoreMLEngine()


def coreml_device(device: str | None) -> str:
    device = device or "ane"
    if device not in COMPUTE_UNITS:
        raise UserError(f"device {device!r} is not a Core ML device; valid: {', '.join(COMPUTE_UNITS)}")
    return device


def plan_bundle(engine: CoreMLEngine, workload: Workload, calls: str) -> PlannedBundle:
    spec = BuildSpec.for_workload(workload, repeat=engine.repeat, lut_mode=engine.lut_mode)
    found = lookup(spec, engine.cache_dir)
    weight_bytes = found.weight_bytes if found is not None else spec.expected_weight_bytes()
    return PlannedBundle(workload, spec.quant, spec.tokens, weight_bytes, found is not None, spec.key, calls)


def calls_text(engine: CoreMLEngine, device: str, what: str, runs: int, budget_s: float | None) -> str:
    limit = f", at most {budget_s:g} s" if budget_s else ""
    return (
        f"{what}: output check, warmup until steady, {runs} timed predicts{limit} on {engine.name}:{device}"
    )


def activation_bytes(workload: Workload) -> int:
    """Inputs and logits of one call: fp16 in the request, float32 once joined for the output check."""
    return workload.vectors * (workload.hidden + workload.vocab) * (2 + 4)


def fits_in_memory(engine: CoreMLEngine, device: str, workload: Workload) -> bool:
    needed = (engine.bytes_for(workload, device) + activation_bytes(workload)) * MEMORY_HEADROOM
    return needed <= available_memory_bytes()


def require_measurable(engine: CoreMLEngine, device: str, suite: str) -> None:
    """One line, before anything is built, where this host cannot run Core ML on the device."""
    availability = engine.available()
    problem = None if availability else availability.reason
    if problem is None and device == "ane":
        problem = preflight.ane_problem()
    if problem:
        raise UserError(f"{suite} -e coreml cannot measure here: {problem}; {DRY_RUN_HINT}")
