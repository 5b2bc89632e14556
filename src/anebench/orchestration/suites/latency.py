"""`anebench latency`: dispatch cost beside the sweep's fitted overhead, as one library call.

The fitted overhead comes, in order, from the sweep records given (a saved file or the results store: the
newest sweep of the same engine and device on this host), else from a small sweep run here and said so
(seconds: a few sizes that stay in memory, never the full sweep), else it is left out with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace

from ...engines.base import Engine
from ...errors import MeasurementError
from ...measure.sweep import MiB
from ...model import LatencyResult, LineFitInfo, ResultRecord
from ...workloads import Workload, resolve_workload
from ..executor import active_executor
from ..session import RunOptions
from . import sweep as sweep_suite
from .common import ProgressFactory, latency_of, no_progress, parametric
from .sweep import DEFAULT_MAX_CACHE_FACTOR

# The small sweep: sizes that generate and time in seconds; the knee comes from the data (cache unknown),
# and the line's intercept is the per-call overhead the latency table shows beside the dispatch cost.
SMALL_SWEEP_MIN_BYTES = 1 * MiB
SMALL_SWEEP_MAX_BYTES = 32 * MiB
SMALL_SWEEP_CAP_BYTES = 128 * MiB  # past this, 8x the cache is no longer a sweep of seconds
SMALL_SWEEP_POINTS = 6
SMALL_SWEEP_RUNS = 15
SMALL_SWEEP_BUDGET_S = 0.3


def latency_result(record: ResultRecord, refused: list[str], fit: LineFitInfo | None) -> LatencyResult:
    """The latency section of ``record`` (its dispatch cost), with ``fit``'s overhead where there is one."""
    return LatencyResult(
        median_us=latency_of(record) * 1e6,
        p95_us=(record.summary.p95 or 0.0) * 1e6,
        refused_as_too_short=refused,
        sweep_overhead_us=fit.overhead_s * 1e6 if fit else None,
        sweep_overhead_se_us=fit.overhead_se_s * 1e6 if fit and fit.overhead_se_s is not None else None,
        sweep_overhead_resolved=fit.overhead_resolved if fit else None,
        sweep_bandwidth_gbps=fit.bandwidth_gbps if fit else None,
    )


LATENCY_START = (64, 64)  # hidden, vocab: 16 KB of fp32, far inside any cache
LATENCY_GROWTH = 4
LATENCY_TRIES = 8


def run_latency(
    engine: Engine,
    device: str,
    workload: Workload | None,
    options: RunOptions,
    progress: ProgressFactory = no_progress,
    fit: LineFitInfo | None = None,
) -> ResultRecord:
    """Dispatch cost: the smallest workload the engine accepts, growing it when a call is too short to
    time; ``fit``: a sweep's line, whose overhead the record shows beside the dispatch cost."""
    if workload is not None:
        candidates = [workload]
    else:
        hidden, vocab = LATENCY_START
        candidates = [parametric(hidden, vocab * LATENCY_GROWTH**i, "fp32") for i in range(LATENCY_TRIES)]
    refused: list[str] = []
    for candidate in candidates:
        try:
            measurement = active_executor().measure_parts(
                engine,
                device,
                candidate,
                options,
                progress(f"latency {engine.name}:{device} {candidate.name}", options.runs),
            )
            draft = measurement.draft  # the checks (a call too short to time) run as the record is built
        except MeasurementError as exc:
            if workload is not None or "shorter than" not in str(exc):
                raise
            refused.append(candidate.name)
            continue
        return measurement.record({"latency": latency_result(draft, refused, fit)})
    raise MeasurementError(f"every latency workload up to {candidates[-1].name} was too short for the timer")


@dataclass
class LatencyTarget:
    engine: Engine
    device: str


@dataclass
class LatencySuite:
    records: list[ResultRecord]
    notes: list[str] = field(default_factory=list)  # where each overhead came from, or why there is none
    swept_bytes: dict[str, list[int]] = field(default_factory=dict)  # engine:device -> sizes swept here


def newest_sweep_fit(
    records: Sequence[ResultRecord], engine: str, device: str, host_fingerprint: str | None = None
) -> ResultRecord | None:
    """The newest sweep record of ``engine:device`` with a fit (on ``host_fingerprint`` where given)."""
    found = [
        r
        for r in records
        if r.suite == "sweep"
        and r.sweep is not None
        and r.sweep.fit is not None
        and r.engine.name == engine
        and r.engine.device == device
        and (host_fingerprint is None or r.host.fingerprint == host_fingerprint)
    ]
    return max(found, key=lambda r: r.created) if found else None


def small_sweep(
    engine: Engine, device: str, options: RunOptions, progress: ProgressFactory, base: Workload | None = None
) -> tuple[LineFitInfo | None, str, list[int]]:
    """(fit or None, what to say, the sizes measured) of a sweep that costs seconds: up to 8x the device's
    cache where that is at most SMALL_SWEEP_CAP_BYTES (the fit past 4x the cache, STREAM's rule), else
    1-32 MiB with the knee found from the data."""
    cache = engine.cache_bytes(device)
    if cache and DEFAULT_MAX_CACHE_FACTOR * cache <= SMALL_SWEEP_CAP_BYTES:
        plan = sweep_suite.plan_sweep(
            engine,
            device,
            SMALL_SWEEP_MIN_BYTES,
            DEFAULT_MAX_CACHE_FACTOR * cache,
            SMALL_SWEEP_POINTS,
            cache,
            options.host,
        )
    else:
        plan = sweep_suite.plan_sweep(
            engine,
            device,
            SMALL_SWEEP_MIN_BYTES,
            SMALL_SWEEP_MAX_BYTES,
            SMALL_SWEEP_POINTS,
            None,
            options.host,
        )
    quick = dc_replace(
        options, runs=SMALL_SWEEP_RUNS, time_budget_s=SMALL_SWEEP_BUDGET_S, suite="latency-sweep", power=False
    )
    swept = sweep_suite.run_sweep(
        engine, device, base or resolve_workload("llama_lm_head"), plan, quick, progress
    )
    label = f"{engine.name}:{device}"
    sizes = [r.workload.weight_bytes for r in swept.records] or list(plan.sizes)
    span = f"{len(sizes)} sizes, {min(sizes) / 1e6:.3g}-{max(sizes) / 1e6:.3g} MB"
    full = "`anebench sweep --store` measures the full one into the results store, where `latency` finds it"
    if swept.analysis.fit is None:  # the dispatch cost still stands; only the overhead column is empty
        return (
            None,
            f"{label}: no sweep-fitted overhead ({swept.error}); from a small sweep ({span}); {full}",
            sizes,
        )
    fit = sweep_suite.sweep_from_records(swept.records, engine.name, device)
    return fit, f"{label}: no stored sweep; ran a small one ({span}) for the overhead; {full}", sizes


def run_latency_suite(
    targets: Sequence[LatencyTarget],
    workloads: Sequence[Workload | None],
    options: RunOptions,
    saved: Sequence[ResultRecord] = (),
    saved_from: str | None = None,
    host_fingerprint: str | None = None,
    sweep_if_missing: bool = True,
    progress: ProgressFactory = no_progress,
    on_note: Callable[[str], None] | None = None,
) -> LatencySuite:
    """Dispatch cost of each workload (None: the smallest the engine times) on each target, with the fitted
    overhead of a saved sweep (``saved``, described by ``saved_from``), or of a small sweep run here."""
    suite = LatencySuite([])

    def note(line: str) -> None:
        suite.notes.append(line)
        if on_note is not None:
            on_note(line)

    for target in targets:
        engine, device = target.engine, target.device
        found = newest_sweep_fit(saved, engine.name, device, host_fingerprint)
        fit = found.sweep.fit if found is not None and found.sweep is not None else None
        if found is not None and saved_from:
            note(
                f"{engine.name}:{device}: overhead from the sweep of {found.created:%Y-%m-%d %H:%M} "
                f"in {saved_from}"
            )
        if fit is None and sweep_if_missing:
            fit, line, sizes = small_sweep(engine, device, options, progress)
            suite.swept_bytes[f"{engine.name}:{device}"] = sizes
            note(line)
        for workload in workloads:
            suite.records.append(run_latency(engine, device, workload, options, progress, fit))
    return suite
