"""The suites as library entries: a request in, an outcome out, as `run` is (orchestration/entry.py).

Each entry resolves its workloads and targets, refuses what it cannot measure before anything runs,
builds the options, measures every (target, workload) under one progress display, and returns the
records, each pair's result and the analyses that failed their gates (the records are kept; the caller
says "failed" and why). What the caller hears on the way is stated in :class:`SuiteEvents`. A dry run
of an engine that builds bundles is the suite's plan function (orchestration/suites/*), not an entry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Generic, TypeVar

from ..engines import get_engine
from ..measure.warmup import WarmupPolicy
from ..model import ResultRecord
from ..workloads import Workload
from .campaign import Target, resolve_targets, resolve_workloads
from .entry import Timing, run_options
from .session import RunOptions
from .suites.bundle_plan import require_measurable
from .suites.common import ProgressFactory, no_progress

if TYPE_CHECKING:  # the suites' modules are imported when a suite runs (the CLI's start-up time)
    from ..workloads.models import DecodeWorkload
    from .concurrency_plan import ConcurrencyPlan
    from .suites.decode import DecodeSuite, DecodeTarget

Result = TypeVar("Result")


def measuring_targets(engines: tuple[str, ...], device: str | None, suite: str) -> list[Target]:
    """The targets to measure; one on an engine that builds bundles but cannot run here is refused
    first, in one line."""
    for name in engines:
        engine = get_engine(name)
        if engine.plans_bundles:
            require_measurable(engine, engine.planning_device(device), suite)
    return resolve_targets(engines, device)


def _nothing(*_args: object) -> None:
    return None


@contextmanager
def _no_display() -> Iterator[ProgressFactory]:
    yield no_progress


@dataclass(frozen=True)
class SuiteEvents:
    """What the caller hears while a suite runs, each optional. ``planned(workloads)``: the workloads,
    before the targets are checked (the CLI names a checkpoint's weights); ``ready()``: targets and
    workloads accepted, before the options and any measurement (the CLI checks where the results go);
    ``progress()``: one progress display around the measuring; ``finished(records)``: the records so far
    as each point finishes (a sweep's checkpoint)."""

    planned: Callable[[list[Workload]], None] = _nothing
    ready: Callable[[], None] = _nothing
    progress: Callable[[], AbstractContextManager[ProgressFactory]] = _no_display
    finished: Callable[[list[ResultRecord]], None] = _nothing


@dataclass(frozen=True)
class SuiteRequest:
    """What every suite asks: engines (none: the best here) on a device, base workloads (none: the
    suite's default), how each measurement is timed, and whether energy is read."""

    engines: tuple[str, ...] = ()
    device: str | None = None
    workloads: tuple[str, ...] = ()
    timing: Timing = field(default_factory=Timing)
    power: bool | None = False


@dataclass
class SuiteOutcome(Generic[Result]):
    """Each (target, workload)'s result in order, all their records, and the analyses that failed their
    stated gates (empty: every analysis was made)."""

    results: list[tuple[Target, Workload, Result]]
    records: list[ResultRecord]
    failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what the suite found on the way (a sweep run for it)


def _setup(request: SuiteRequest, suite: str, events: SuiteEvents, default: str = "llama_lm_head"
           ) -> tuple[list[Workload], list[Target], RunOptions]:
    bases = resolve_workloads(request.workloads, default)
    events.planned(bases)
    targets = measuring_targets(request.engines, request.device, suite)
    events.ready()
    return bases, targets, run_options(request.timing, suite=suite, power=request.power)


def _measure_each(targets: list[Target], bases: list[Workload], events: SuiteEvents,
                  measure: Callable[[Target, Workload, ProgressFactory], Result]
                  ) -> list[tuple[Target, Workload, Result]]:
    with events.progress() as factory:
        return [(target, base, measure(target, base, factory)) for target in targets for base in bases]


@dataclass(frozen=True)
class ComputeRequest(SuiteRequest):
    """Peak matrix throughput: ``batch`` vectors per call in each of ``dtypes`` (default: the workload's);
    engines that build token-batched bundles: the most tokens per call that fit (up to ``max_tokens``)."""

    timing: Timing = field(default_factory=lambda: Timing(runs=20, time_budget_s=3.0))
    batch: int = 512
    dtypes: tuple[str, ...] = ()
    max_tokens: int | None = None  # None: the suites' default


def compute(request: ComputeRequest, events: SuiteEvents | None = None
            ) -> SuiteOutcome[list[ResultRecord]]:
    """The compute suite; a record whose FLOP/s is not a peak (not compute-bound) is a failure."""
    from .suites.compute import run_compute_suite
    from .suites.roofline import DEFAULT_MAX_TOKENS

    events = events or SuiteEvents()
    max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
    bases, targets, options = _setup(request, "compute", events, default="lm_head:4096x4096")
    results = _measure_each(targets, bases, events, lambda target, base, factory: run_compute_suite(
        target.engine, target.device, base, request.batch, request.dtypes, max_tokens, options, factory))
    records = [record for *_, found in results for record in found]
    failures = [
        f"{r.engine.name}:{r.engine.device} {r.workload.name}: not compute-bound ({r.compute.rule}, "
        f"grew {r.compute.growth_from_half:.2f}x)"
        for r in records if r.compute and not r.compute.compute_bound
    ]
    return SuiteOutcome(results, records, failures)


@dataclass(frozen=True)
class RooflineRequest(SuiteRequest):
    """A batch sweep of the same weights (1, 2, 4, ... ``max_batch``); engines that build token-batched
    bundles: tokens per call up to ``max_tokens``. ``first_look_warmup_s``: the CPU first look's warmup
    cap (with no fixed warmup)."""

    timing: Timing = field(default_factory=lambda: Timing(runs=30, time_budget_s=5.0))
    max_batch: int = 1024
    max_tokens: int | None = None  # None: the suites' default
    first_look_warmup_s: float | None = None


def roofline(request: RooflineRequest, events: SuiteEvents | None = None) -> SuiteOutcome:
    """The roofline suite; a ridge that could not be placed is a failure."""
    from .suites.roofline import DEFAULT_MAX_TOKENS, run_roofline_suite

    events = events or SuiteEvents()
    max_tokens = request.max_tokens or DEFAULT_MAX_TOKENS
    bases, targets, options = _setup(request, "roofline", events)
    if request.first_look_warmup_s is not None and request.timing.warmup is None:
        options = replace(options, warmup=replace(options.warmup, max_seconds=request.first_look_warmup_s))
    results = _measure_each(targets, bases, events, lambda target, base, factory: run_roofline_suite(
        target.engine, target.device, base, request.max_batch, max_tokens, options, factory))
    failures = [f"{t.engine.name}:{t.device} {b.name}: {res.analysis.ridge_error}"
                for t, b, res in results if res.analysis.ridge_error]
    return SuiteOutcome(results, [r for *_, res in results for r in res.records], failures)


def _after(before: list[ResultRecord], heard: Callable[[list[ResultRecord]], None]
           ) -> Callable[[list[ResultRecord]], None]:
    """A sweep's points as they finish, after the records of the plans before it."""
    return lambda points: heard(before + points)


@dataclass(frozen=True)
class SweepRequest(SuiteRequest):
    """Latency over weight sizes from ``min_bytes`` to ``max_bytes`` (None: the suite's defaults) in
    ``points`` sizes; ``cache_bytes`` the device's last-level cache (-1: detect it; None: unknown, the
    knee is found from the data)."""

    timing: Timing = field(default_factory=lambda: Timing(runs=50, time_budget_s=2.0))
    min_bytes: int | None = None
    max_bytes: int | None = None
    points: int | None = None
    cache_bytes: int | None = -1


def sweep(request: SweepRequest, events: SuiteEvents | None = None) -> SuiteOutcome:
    """The sweep suite: every size of every plan refused or accepted before anything is measured; each
    finished point is heard (``events.finished``, the records so far); a fit that fails its gates is a
    failure."""
    from .suites.sweep import plan_engine_sweep, run_sweep, sweep_workloads

    events = events or SuiteEvents()
    bases, targets, options = _setup(request, "sweep", events)
    plans = [
        (target, base, plan_engine_sweep(target.engine, target.device, base, request.min_bytes,
                                         request.max_bytes, request.points, request.cache_bytes))
        for target in targets for base in bases
    ]
    for target, base, plan in plans:  # every refusal before anything is measured
        sweep_workloads(target.engine, target.device, base, plan)
    finished: list[ResultRecord] = []
    results = []
    with events.progress() as factory:
        for target, base, plan in plans:
            result = run_sweep(target.engine, target.device, base, plan, options, factory,
                               finished=_after(list(finished), events.finished))
            results.append((target, base, result))
            finished += result.records
    failures = [f"{t.engine.name}:{t.device}: {res.error}" for t, _, res in results if res.error]
    return SuiteOutcome(results, finished, failures)


@dataclass(frozen=True)
class LatencyRequest(SuiteRequest):
    """Dispatch cost: each workload (none: the smallest each engine accepts) beside the fitted overhead of
    ``sweeps`` (saved sweep records, from ``sweeps_from``; ``this_host_only``: only those measured on
    this host), or of a small sweep run for it where there is none (``sweep_if_missing``)."""

    timing: Timing = field(default_factory=lambda: Timing(runs=1000, time_budget_s=2.0))
    sweeps: tuple[ResultRecord, ...] = ()
    sweeps_from: str | None = None
    this_host_only: bool = False
    sweep_if_missing: bool = True


def latency(request: LatencyRequest, events: SuiteEvents | None = None) -> SuiteOutcome:
    """The latency suite, its notes (where each overhead came from) in the outcome."""
    from .suites.latency import LatencyTarget, run_latency_suite

    events = events or SuiteEvents()
    targets = [LatencyTarget(t.engine, t.device) for t in resolve_targets(request.engines, request.device)]
    bases = resolve_workloads(request.workloads) if request.workloads else []
    events.planned(bases)
    events.ready()
    options = run_options(request.timing, suite="latency", power=request.power)
    host = options.host.info().fingerprint if request.this_host_only else None
    with events.progress() as factory:
        suite = run_latency_suite(targets, bases or [None], options, request.sweeps, request.sweeps_from,
                                  host, sweep_if_missing=request.sweep_if_missing, progress=factory)
    return SuiteOutcome([], suite.records, notes=list(suite.notes))


# A token takes 0.1-1 s: steady after a few, never 15 s of warmup per depth.
DECODE_WARMUP = WarmupPolicy(min_runs=2, window=2, tolerance=0.05, max_runs=20, max_seconds=5.0)


def decode_options(timing: Timing, power: bool | None) -> RunOptions:
    """The decode suite's options: its own warmup unless a fixed one is given."""
    options = run_options(timing, suite="decode", power=power)
    return options if timing.warmup is not None else replace(options, warmup=DECODE_WARMUP)


@dataclass(frozen=True)
class DecodeRequest:
    """A model's decode stream (``workloads``: one per context depth) on each of ``targets``, beside the
    tok/s its sweep curve predicts (from ``sweeps``, else a small sweep where ``sweep_if_missing``).
    ``predict_only``: the predictions, nothing measured. ``chunk_bytes``: the most weight bytes per
    chunk of an engine that chains bundles."""

    targets: tuple[DecodeTarget, ...]
    workloads: tuple[DecodeWorkload, ...]
    timing: Timing = field(default_factory=lambda: Timing(runs=10, time_budget_s=10.0))
    power: bool | None = False
    sweeps: tuple[ResultRecord, ...] = ()
    sweeps_from: str | None = None
    predict_only: bool = False
    sweep_if_missing: bool = True
    chunk_bytes: int = 1_000_000_000


def decode(request: DecodeRequest, events: SuiteEvents | None = None) -> DecodeSuite:
    """The decode suite: its records (none when ``predict_only``), predictions and notes."""
    from .suites.decode import run_decode

    events = events or SuiteEvents()
    events.ready()
    options = decode_options(request.timing, request.power)
    with events.progress() as factory:
        return run_decode(list(request.targets), list(request.workloads), options, request.sweeps,
                          request.sweeps_from, options.host.info().fingerprint, request.predict_only,
                          request.sweep_if_missing, request.chunk_bytes, factory)


@dataclass(frozen=True)
class ConcurrentRequest(SuiteRequest):
    """N ``copies`` of a workload solo, then together from a common start; ``mode`` threads or processes
    (None: the engine says), ``devices`` one copy per device, ``threads_per_copy`` a CPU copy's threads.
    ``dry_run``: the plans only."""

    timing: Timing = field(default_factory=lambda: Timing(runs=50, time_budget_s=10.0))
    copies: int | None = None
    mode: str | None = None
    devices: str | None = None
    threads_per_copy: int | None = None
    dry_run: bool = False


@dataclass
class ConcurrentOutcome(SuiteOutcome):
    plans: list[ConcurrencyPlan] = field(default_factory=list)  # each (target, workload)'s, in order


def concurrent(request: ConcurrentRequest, events: SuiteEvents | None = None,
               starting: Callable[[Target, Workload, ConcurrencyPlan], None] = _nothing
               ) -> ConcurrentOutcome:
    """The concurrency suite: every plan is made (and refused) before anything is loaded; each plan is
    measured under its own progress display, ``starting(target, workload, plan)`` said before it. An
    inconclusive verdict is a failure."""
    from .concurrency_plan import plan_concurrent
    from .suites.concurrent import run_plan

    events = events or SuiteEvents()
    bases = resolve_workloads(request.workloads)
    events.planned(bases)
    targets = resolve_targets(request.engines, request.device)
    events.ready()
    options = run_options(request.timing, suite="concurrency", power=request.power)
    planned = [
        (target, base, plan_concurrent(target.engine, target.device, base, request.copies, request.mode,
                                       request.devices, request.threads_per_copy))
        for target in targets for base in bases
    ]
    if request.dry_run:
        return ConcurrentOutcome([], [], plans=[plan for *_, plan in planned])
    results = []
    for target, base, plan in planned:
        starting(target, base, plan)
        with events.progress() as factory:
            results.append((target, base, run_plan(plan, options, factory)))
    failures = [
        f"{t.engine.name}:{t.device} {b.name}: verdict inconclusive (scaling "
        f"{res.analysis.verdict.scaling:.2f}; {res.analysis.verdict.rule})"
        for t, b, res in results if res.analysis.verdict.verdict == "inconclusive"
    ]
    records = [r for *_, res in results for r in res.records]
    return ConcurrentOutcome(results, records, failures, plans=[plan for *_, plan in planned])


@dataclass(frozen=True)
class QuantRequest(SuiteRequest):
    """fp16, int8, lut6 and lut4 of the same head, each as the engine stores it."""

    timing: Timing = field(default_factory=lambda: Timing(runs=100, time_budget_s=5.0))


def quant(request: QuantRequest, events: SuiteEvents | None = None,
          stored: Callable[[list[tuple[str, dict[str, str | None]]]], None] = _nothing) -> SuiteOutcome:
    """The quant suite: ``stored`` hears, before anything is measured, which variants each engine stores
    (label, {variant: why not, or None}); only engines that store fp16 and a quantised variant are
    measured (none: an empty outcome). An inconclusive streaming inference is a failure."""
    from ..measure.quant import INCONCLUSIVE
    from .suites.quant import as_stored, measurable, plan_quant, run_quant

    events = events or SuiteEvents()
    bases, targets, options = _setup(request, "quant", events)
    found, jobs = [], []
    for target in targets:
        for base in bases:
            capabilities = as_stored(target.engine, target.device, base)
            found.append((f"{target.engine.name}:{target.device}", capabilities))
            variants = measurable(capabilities)
            if variants:
                plan = plan_quant(target.engine, target.device, base, variants, request.timing.runs,
                                  request.timing.time_budget_s)
                jobs.append((target, base, plan))
    stored(found)
    results = []
    if jobs:
        with events.progress() as factory:
            results = [(t, b, run_quant(t.engine, t.device, plan, options, factory)) for t, b, plan in jobs]
    failures = [f"{t.engine.name}:{t.device}: {res.inference.inference}"
                for t, _, res in results if INCONCLUSIVE in res.inference.inference]
    return SuiteOutcome(results, [r for *_, res in results for r in res.records], failures)


__all__ = [
    "ComputeRequest",
    "ConcurrentOutcome",
    "ConcurrentRequest",
    "QuantRequest",
    "RooflineRequest",
    "SuiteEvents",
    "SuiteOutcome",
    "SuiteRequest",
    "LatencyRequest",
    "SweepRequest",
    "DECODE_WARMUP",
    "DecodeRequest",
    "compute",
    "concurrent",
    "decode",
    "decode_options",
    "latency",
    "sweep",
    "measuring_targets",
    "quant",
    "roofline",
]
