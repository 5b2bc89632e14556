"""One library entry per measuring command: a request in, an outcome out (hyperfine's ``Options`` ->
``Scheduler`` -> results). The CLI builds the request from its settings and options and maps the outcome
to output; a library caller (a notebook, a test) does the same without click.

`run` (:func:`run`): the plan, the memory and thread checks before anything is measured, the options,
the measurement (the campaign step by step, or interleaved rounds) and an interrupt that keeps the
finished steps. What the caller wants to hear while the run goes on is stated in :class:`RunEvents`.
The suites' entries are in orchestration/suites/entries.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field

from ..errors import UserError, setting
from ..measure.timing import DEFAULT_RUNS, split_runs
from ..measure.warmup import WarmupPolicy
from ..model import ResultRecord
from ..system import power as power_counters
from ..system.host import busy_warning
from ..workloads import Workload
from .campaign import (
    Plan,
    StepStarted,
    Unrunnable,
    plan_run,
    preflight_steps,
    run_campaign,
    unrunnable_engines,
)
from .executor import Executor
from .interleave import Configuration, check_interleavable, run_interleaved
from .runplan import Mitigations, PlannedStep, concurrency_hint, describe_plan
from .session import RunOptions, check_threads


@dataclass(frozen=True)
class Timing:
    """How each measurement is timed: calls (split over the repetitions), a time budget, the warmup
    (None: until steady, capped), the CPU threads per call (None: the engine's own)."""

    runs: int = DEFAULT_RUNS
    time_budget_s: float | None = None
    warmup: int | None = None
    threads: int | None = None
    repetitions: int = 1
    fresh_processes: bool = False


def run_options(
    timing: Timing, suite: str = "run", power: bool | None = False, keep_awake: bool = False
) -> RunOptions:
    """The options of every measurement of a command; a combination that cannot be honoured is refused
    before any work."""
    policy = WarmupPolicy(fixed=timing.warmup) if timing.warmup is not None else WarmupPolicy()
    split_runs(timing.runs, timing.repetitions)  # refuse fewer runs than repetitions before any work
    if power and timing.fresh_processes:
        raise UserError(
            f"{setting('power')} with {setting('fresh_processes')}: the energy counter is read in one "
            "process; drop one of them"
        )
    if timing.threads is not None and keep_awake:
        raise UserError(
            f"{setting('threads')} with {setting('keep_awake')}: keep-awake already gives a CPU engine one "
            "thread fewer than the cores; drop one of them"
        )
    return RunOptions(
        threads=timing.threads,
        runs=timing.runs,
        time_budget_s=timing.time_budget_s,
        warmup=policy,
        suite=suite,
        power=bool(power),
        repetitions=timing.repetitions,
        fresh_processes=timing.fresh_processes,
    )


@dataclass(frozen=True)
class RunRequest:
    """`run`: engines x workloads (none given: the best engine here, or the published campaign on a
    Mac), timed as ``timing`` says. ``power`` None: on for the Mac campaign, else off. ``interleave``:
    the configurations (engines x workloads x ``thread_limits``) alternate repetition by repetition.
    ``dry_run``: the plan only."""

    engines: tuple[str, ...] = ()
    device: str | None = None
    workloads: tuple[str, ...] = ()
    timing: Timing = field(default_factory=Timing)
    power: bool | None = None
    mitigations: Mitigations = field(default_factory=Mitigations)
    interleave: bool = False
    thread_limits: tuple[int | None, ...] = (None,)
    dry_run: bool = False


def _nothing(*_args: object) -> None:
    return None


@contextmanager
def _no_progress(_steps: int) -> Iterator[StepStarted | None]:
    yield None


@dataclass(frozen=True)
class RunEvents:
    """What the caller hears while a run goes on, each optional. ``planned(plan, measuring)``: the plan,
    before anything is checked (``measuring`` false for a dry run); ``warn(text)``: a warning said before
    measuring (a busy machine); ``progress(steps)``: one progress display around the measuring, giving
    each step's progress callback; ``finished(records)``: the records so far after each campaign step
    (a checkpoint, so an interrupt loses only the running step)."""

    planned: Callable[[Plan, bool], None] = _nothing
    warn: Callable[[str], None] = _nothing
    progress: Callable[[int], AbstractContextManager[StepStarted | None]] = _no_progress
    finished: Callable[[list[ResultRecord]], None] | None = None


@dataclass
class RunOutcome:
    """What a run did: the records (of the finished steps, in plan order, when ``interrupted``), how many
    steps were planned, whether they were the Mac campaign, the workloads measured, and for a dry run the
    plan as described and the named engines this host cannot run."""

    records: list[ResultRecord] = field(default_factory=list)
    steps: int = 0
    campaign: bool = False
    interrupted: bool = False
    measured: bool = False
    workloads: list[Workload] = field(default_factory=list)
    plan: list[PlannedStep] = field(default_factory=list)
    unrunnable: list[Unrunnable] = field(default_factory=list)
    configurations: int = 0  # interleaved: the configurations alternated
    hint: str | None = None  # after the Mac campaign: how to measure the ANE's concurrency


def _described(plan: Plan, power: bool) -> list[PlannedStep]:
    steps = [(s.engine.name, s.device, s.workload.name) for s in plan.steps]
    return describe_plan(steps, power, power_counters.current_platform())


def _dry_run(request: RunRequest, events: RunEvents) -> RunOutcome:
    """The plan, measuring nothing; named engines this host cannot run are explained, not refused (the
    engines that can run are planned)."""
    unrunnable = unrunnable_engines(request.engines, request.workloads) if request.engines else []
    if unrunnable:
        cannot = {u.engine for u in unrunnable}
        runnable = tuple(name for name in request.engines if name not in cannot)
        plan = None
        if runnable:
            plan = plan_run(runnable, request.device, request.workloads, request.mitigations)
            events.planned(plan, False)
        described = _described(plan, bool(request.power)) if plan is not None else []
        workloads = plan.workloads if plan is not None else []
        return RunOutcome(plan=described, unrunnable=unrunnable, workloads=workloads)
    plan = plan_run(request.engines, request.device, request.workloads, request.mitigations)
    events.planned(plan, False)
    power = plan.campaign if request.power is None else request.power
    return RunOutcome(steps=len(plan.steps), campaign=plan.campaign, workloads=plan.workloads,
                      plan=_described(plan, power))


def run(request: RunRequest, events: RunEvents | None = None, executor: Executor | None = None) -> RunOutcome:
    """`run` end to end: everything that can be refused is refused before the first step is measured;
    Ctrl-C (or SIGTERM turned into it) after a finished step returns the finished steps with
    ``interrupted`` set (before any, it propagates)."""
    events = events or RunEvents()
    if request.dry_run:
        return _dry_run(request, events)
    plan = plan_run(request.engines, request.device, request.workloads, request.mitigations)
    events.planned(plan, True)
    power = plan.campaign if request.power is None else request.power  # the Mac campaign reads energy
    preflight_steps(plan.steps, executor)
    for step in plan.steps:  # every engine of the plan, before the first is measured
        check_threads(step.engine, request.timing.threads)
    options = run_options(request.timing, power=power, keep_awake=request.mitigations.keep_awake)
    configurations = [
        Configuration(s.engine, s.device, s.workload, t) for s in plan.steps for t in request.thread_limits
    ]
    if request.interleave:
        check_interleavable(configurations, options)
    busy = busy_warning(options.host.state(), options.host.info().cores_logical)
    if busy:  # said before measuring, so the user can stop and retry on a quiet machine
        events.warn(busy.text)
    outcome = RunOutcome(
        steps=len(plan.steps), campaign=plan.campaign, workloads=plan.workloads, measured=True
    )
    if request.interleave:
        with events.progress(len(configurations)) as started:
            outcome.records = run_interleaved(configurations, options, started)
        outcome.configurations = len(configurations)
        return outcome
    with events.progress(len(plan.steps)) as started:
        result = run_campaign(plan.steps, options, request.mitigations, started, events.finished, executor)
    outcome.records, outcome.interrupted = result.records, result.interrupted
    if plan.campaign and not result.interrupted:
        outcome.hint = concurrency_hint(options.host.info().chip)
    return outcome


__all__ = ["RunEvents", "RunOutcome", "RunRequest", "Timing", "run", "run_options"]
