"""`run`'s campaign as a library function: the plan of (engine, device, workload) steps, then each step
measured in turn with the keep-awake hooks; an interrupt keeps the steps already finished.

The CLI only parses, calls :func:`plan_run` and :func:`run_campaign`, and prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engines import best_engine, get_engine, resolve_device, usable_engine
from ..engines.base import Engine
from ..measure.timing import ProgressCallback
from ..model import ResultRecord
from ..system.preflight import check_native_host
from ..workloads import Workload, resolve_workload
from .executor import Executor, active_executor
from .fresh_processes import measure_in_fresh_processes
from .runplan import Mitigations, Step, check_ane_reachable, is_default_run, published_campaign
from .session import RunOptions

DEFAULT_WORKLOAD = "llama_lm_head"

# Called once per step with (label, planned calls); returns the step's progress callback.
StepStarted = Callable[[str, int], ProgressCallback | None]


@dataclass
class Target:
    engine: Engine
    device: str


@dataclass
class Plan:
    steps: list[Step]
    campaign: bool  # the published Mac campaign (no engine, device or workload given)

    @property
    def workloads(self) -> list[Workload]:
        seen: dict[int, Workload] = {}  # by identity: a checkpoint's fingerprint would hash every byte
        for step in self.steps:
            seen.setdefault(id(step.workload), step.workload)
        return list(seen.values())


@dataclass
class CampaignResult:
    records: list[ResultRecord]  # the finished steps, in plan order
    planned: int  # steps in the plan
    interrupted: bool  # Ctrl-C (or SIGTERM turned into it) after at least one finished step


def resolve_targets(engine_names: tuple[str, ...], device: str | None) -> list[Target]:
    """The named engines on ``device`` (each engine's first device when none), or the best engine here."""
    if not engine_names:
        engine, default_device = best_engine()
        return [Target(engine, resolve_device(engine, device) if device else default_device)]
    return [Target(e, resolve_device(e, device)) for e in (usable_engine(n) for n in engine_names)]


@dataclass(frozen=True)
class Unrunnable:
    """A named engine this host cannot run: why, and what it would build and measure where it can."""

    engine: str
    reason: str
    notes: list[str]


def unrunnable_engines(engine_names: tuple[str, ...], workload_specs: tuple[str, ...]) -> list[Unrunnable]:
    """The named engines that cannot run here (a dry run explains them instead of refusing)."""
    found = []
    for name in dict.fromkeys(engine_names):
        engine = get_engine(name)
        availability = engine.available()
        if not availability:
            notes = engine.plan_notes(resolve_workloads(workload_specs))
            found.append(Unrunnable(name, availability.reason, notes))
    return found


def resolve_workloads(specs: tuple[str, ...], default: str = DEFAULT_WORKLOAD) -> list[Workload]:
    return [resolve_workload(s) for s in (specs or (default,))]


def plan_run(
    engine_names: tuple[str, ...],
    device: str | None,
    workload_specs: tuple[str, ...],
    mitigations: Mitigations,
) -> Plan:
    """The published campaign on a Mac with no engine, device or workload; else engines x workloads.
    Everything that can be refused is refused here, before any work."""
    check_native_host()  # Rosetta: stop before any work, whatever the engine
    check_ane_reachable(engine_names, device)
    campaign = published_campaign() if is_default_run(engine_names, device, workload_specs) else None
    if campaign is None:
        targets = resolve_targets(engine_names, device)
        specs = resolve_workloads(workload_specs)
        steps = [Step(t.engine, t.device, w) for t in targets for w in specs]
    else:
        steps = campaign
    mitigations.check(steps, bool(engine_names))
    return Plan([mitigations.apply(step) for step in steps], campaign is not None)


def preflight_steps(steps: list[Step], executor: Executor | None = None) -> None:
    """Every step's memory check before the first is measured: a late refusal would waste the others."""
    executor = executor or active_executor()
    for step in steps:
        executor.check_memory(step.engine, step.device, step.workload)


def step_label(step: Step) -> str:
    return f"{step.engine.name}:{step.device} {step.workload.name}"


def run_campaign(
    steps: list[Step],
    options: RunOptions,
    mitigations: Mitigations,
    started: StepStarted | None = None,
    finished: Callable[[list[ResultRecord]], None] | None = None,
    executor: Executor | None = None,
) -> CampaignResult:
    """Measure each step in turn (keep-awake around each); an interrupt after a finished step returns
    what finished with ``interrupted`` set, and one before any step finished propagates. ``finished``
    gets the records so far after each step (the CLI saves them: a SIGKILL loses only the running step).
    ``executor`` measures each step (default: the active one, see orchestration/executor.py)."""
    measure = (executor or active_executor()).measure
    records: list[ResultRecord] = []
    try:
        for step in steps:
            advance = started(step_label(step), options.runs) if started is not None else None
            with mitigations.awake(step) as awake:
                step_options = mitigations.options(options, step)
                if step_options.fresh_processes:  # the campaign chooses how repetitions run
                    # each process runs its own spinner (RunOptions.keep_awake): the measurement carries it
                    record = measure_in_fresh_processes(step.engine, step.device, step.workload, step_options,
                                                        advance).record()
                else:
                    record = measure(
                        step.engine,
                        step.device,
                        step.workload,
                        step_options,
                        advance,
                        awake.measure_hooks(),
                    )
                records.append(record)
            if finished is not None:
                finished(list(records))
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM turned into it by the caller
        if not records:
            raise
        return CampaignResult(records, len(steps), True)
    return CampaignResult(records, len(steps), False)


__all__ = [
    "CampaignResult",
    "Plan",
    "StepStarted",
    "Target",
    "Unrunnable",
    "plan_run",
    "preflight_steps",
    "resolve_targets",
    "resolve_workloads",
    "run_campaign",
    "step_label",
    "unrunnable_engines",
]
