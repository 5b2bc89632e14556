"""What `anebench run` measures: the (engine, device, workload) plan and the idle-state mitigations.

On a Mac, a run with no engine, device or workload is the published campaign: the three published
heads on the Neural Engine, the fp16 head through Core AI on the Neural Engine too (macOS 27+, where
coreai-core is installed: the same bytes as the published engine's bundle), then the same fp16 head on
the GPU and CPU through the published engine, MLX and torch MPS — the same-model, same-machine
comparison no published source has — with energy read around every step (IOReport: ANE, GPU, CPU, DRAM
and the package; `--no-power` to skip). The mitigations (--keep-awake, --predicts-per-call, --repeat)
are recorded in every record they touched, with what they change in the bytes per call.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, replace
from typing import Any

from ..engines import PUBLISHED_ANE_ENGINE, available_engine, engines_with, get_engine
from ..engines.base import Engine, Prepared
from ..errors import UserError, setting
from ..model import RecordWarning
from ..system import preflight
from ..workloads import PUBLISHED_HEADS, Workload, resolve_workload
from .keepawake import KeepAwakeProcess, share_warning, spinner_threads
from .mitigations import UsedMitigations
from .session import MeasureHooks, RunOptions

ANE_ENGINE = PUBLISHED_ANE_ENGINE  # the published heads' engine: the campaign runs them on it first
CORE_AI = "coreai"
CAMPAIGN_ANE = PUBLISHED_HEADS
CAMPAIGN_COMPARE = "llama_lm_head"


@dataclass
class Step:
    engine: Engine
    device: str
    workload: Workload


# (engine, device, workload) in order, whatever this host has: the ANE heads (the published engine, then
# Core AI's fp16 head where macOS 27 has it), then the same fp16 head on the GPU (the published engine,
# MLX, torch MPS) and the CPU (the published engine, MLX).
CAMPAIGN: tuple[tuple[str, str, str], ...] = (
    *((ANE_ENGINE, "ane", name) for name in CAMPAIGN_ANE),
    (CORE_AI, "ane", CAMPAIGN_COMPARE),
    (ANE_ENGINE, "gpu", CAMPAIGN_COMPARE), (ANE_ENGINE, "cpu", CAMPAIGN_COMPARE),
    ("mlx", "gpu", CAMPAIGN_COMPARE), ("mlx", "cpu", CAMPAIGN_COMPARE),
    ("torch", "mps", CAMPAIGN_COMPARE),
)


def published_campaign() -> list[Step] | None:
    """The Mac campaign, or None where the published engine cannot predict (then `run` keeps its usual
    default); engines and devices this Mac lacks are left out."""
    if available_engine(ANE_ENGINE) is None:
        return None
    engines: dict[str, tuple[Engine | None, list[str]]] = {}
    steps = []
    for name, device, workload in CAMPAIGN:
        if name not in engines:
            engine = available_engine(name)
            engines[name] = (engine, engine.devices() if engine else [])
        engine, devices = engines[name]
        if engine is not None and device in devices:
            steps.append(Step(engine, device, resolve_workload(workload)))
    return steps


@dataclass(frozen=True)
class PlannedStep:
    """One step of a plan as printed by `run --dry-run`: names only, so any host can show any plan."""

    engine: str
    device: str
    workload: str
    power: bool
    energy_source: str  # what --power reads there, or "-" without --power


def describe_plan(steps: list[tuple[str, str, str]], power: bool, platform: str) -> list[PlannedStep]:
    from ..system.energy_sources import planned_source

    return [PlannedStep(engine, device, workload, power, planned_source(device, platform) if power else "-")
            for engine, device, workload in steps]


def mac_campaign_plan(power: bool = True) -> list[PlannedStep]:
    """The campaign a Mac with every engine runs with no options (power on by default)."""
    return describe_plan(list(CAMPAIGN), power, "darwin")


def is_default_run(engines: tuple[str, ...], device: str | None, workloads: tuple[str, ...]) -> bool:
    return not engines and device is None and not workloads and preflight.on_macos()


def check_ane_reachable(engines: tuple[str, ...], device: str | None) -> None:
    """An explicit --device ane says why the Neural Engine is out of reach (Intel Mac, Rosetta, Linux)."""
    if device == "ane" and (not engines or ANE_ENGINE in engines):
        problem = preflight.ane_problem(get_engine(ANE_ENGINE).title)
        if problem:
            raise UserError(problem)


def concurrency_hint(chip: str | None) -> str | None:
    """The command that tells whether a chip's Neural Engines share one ceiling. Its copies are processes
    (`concurrent` plans them so where a call holds the GIL, and the command says so): predict() holds the
    GIL, so copies in threads of one process would run one at a time and always look like a shared
    ceiling."""
    engines = preflight.neural_engine_count(chip)
    if engines < 2:
        return None
    return (
        f"this chip has {engines} Neural Engines: see whether they share one memory ceiling with "
        f"`{CONCURRENCY_COMMAND} {engines} --processes` (each copy in its own process: predict() holds the "
        "GIL, so threads would serialise)"
    )


CONCURRENCY_COMMAND = (
    f"anebench concurrent --engine {ANE_ENGINE} --device ane --workload llama_lm_head --copies"
)


@dataclass(frozen=True)
class Mitigations:
    """The idle-state mitigations asked for; K calls and R weight sets per call apply to the engines
    with ``call_mitigations``, keep-awake to all. K predicts per call each re-read every weight: repeated
    reads, not a batch (a token-batched bundle, ``Workload.tokens``, is the batch)."""

    keep_awake: bool = False
    predicts: int = 1
    repeat: int = 1

    def check(self, steps: list[Step], explicit_engines: bool) -> None:
        if (self.predicts > 1 or self.repeat > 1) and not any(s.engine.call_mitigations for s in steps):
            named = setting("predicts_per_call") if self.predicts > 1 else setting("repeat")
            able = engines_with(lambda e: e.call_mitigations)
            message = (
                f"{named} is a {' or '.join(e.title for e in able)} mitigation (K predicts / R weight sets "
                f"per call); add {setting('engine')} {able[0].name}"
            )
            raise UserError(message if explicit_engines else f"{message} on a Mac")

    def apply(self, step: Step) -> Step:
        """The step as measured: K predicts and R weight sets where the engine has them, else unchanged."""
        if not step.engine.call_mitigations or (self.predicts == 1 and self.repeat == 1):
            return step
        engine = step.engine.with_weight_sets(self.repeat)
        return Step(engine, step.device, step.workload.with_batch(self.predicts))

    def spinner_threads(self, step: Step) -> int | None:
        """With keep-awake on a CPU engine, the engine's threads: one core fewer, so the spinner has a core
        of its own (sharing one would leave it well below its share and the figure unmitigated)."""
        return spinner_threads(step.engine, step.device) if self.keep_awake else None

    def used(self, step: Step) -> UsedMitigations:
        """The mitigations ``step`` runs with, as values (K and R only where the engine has them)."""
        calls = step.engine.call_mitigations
        return UsedMitigations(keep_awake=self.keep_awake, spinner_threads=self.spinner_threads(step),
                               predicts=self.predicts if calls else 1, repeat=self.repeat if calls else 1)

    def describe(self, step: Step) -> list[str]:
        return self.used(step).describe()

    def options(self, base: RunOptions, step: Step) -> RunOptions:
        timing = base.timing
        if step.engine.call_mitigations and self.predicts > 1:
            timing = f"wall clock per call of {self.predicts} predicts"
        return replace(base, mitigations=base.mitigations.with_(self.used(step)), timing=timing)

    @contextmanager
    def awake(self, step: Step | None = None) -> Iterator[AwakeHooks]:
        """Yields the hooks of one measurement: ``on_prepared`` starts the spinner process (so loading
        is not slowed, and it spins through warmup), ``phase`` marks the timed window, ``finish`` gives
        the measured share in the record; the process stops when the measurement ends, however it ends.
        On a CPU engine the engine's threads leave the spinner a core (``spinner_threads``)."""
        helper = KeepAwakeProcess() if self.keep_awake else None
        threads = self.spinner_threads(step) if step is not None else None
        limit = (step.engine.thread_limit(threads) if step is not None and threads is not None
                 else nullcontext())
        try:
            with limit:
                yield AwakeHooks(helper)
        finally:
            if helper is not None:
                helper.stop()


@dataclass
class AwakeHooks:
    helper: KeepAwakeProcess | None

    def on_prepared(self, _prepared: Prepared) -> None:
        if self.helper is not None:
            self.helper.start()

    def phase(self, name: str) -> None:
        if self.helper is not None:
            self.helper.mark(name)

    def measure_hooks(self) -> MeasureHooks:
        """These hooks as one value, as ``measure_workload`` takes them."""
        return MeasureHooks(on_prepared=self.on_prepared, phase=self.phase, finish=self.finish)

    def finish(self) -> tuple[dict[str, Any], list[RecordWarning]]:
        """The spinner's measured CPU share for the step's record, and a warning where it did not hold."""
        section = self.helper.section() if self.helper is not None else None
        if section is None:
            return {}, []
        warning = share_warning(section)
        return {"keep_awake": section}, [warning] if warning else []
