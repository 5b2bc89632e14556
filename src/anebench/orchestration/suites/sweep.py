"""`anebench sweep`: one engine and device over log-spaced weight sizes, then the overhead/bandwidth fit."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ...engines.base import Engine
from ...errors import UserError, setting
from ...measure.line_fit import MIN_FIT_POINTS
from ...measure.sweep import CACHE_FACTOR, MiB, SweepAnalysis, analyse_sweep, sweep_sizes
from ...model import GB, LineFitInfo, ResultRecord, SweepPoint
from ...system.chips import figure_chip_name, host_config, memory_bound_gbps
from ...system.host import SYSTEM_HOST, Host
from ...workloads import Workload
from ..executor import Executor, active_executor
from ..session import Measurement, RunOptions
from .bundle_plan import BundlePlan, calls_text, plan_bundle
from .common import ProgressFactory, latency_of, no_progress, resized, synthetic_only
from .sweep_rounds import measure_in_rounds, rounds_of, sequential_reason

DEFAULT_MIN_BYTES = 1 * MiB
UNKNOWN_CACHE_MAX_BYTES = 1024 * MiB
# Up to 32x the cache: the sizes past the knee (STREAM's 4x) span a factor of 8. Over a factor of 2 the
# fit's slope rested on 4-5 close sizes and on a noisy machine fitted 0.84-0.87 R² or an impossible line.
DEFAULT_MAX_CACHE_FACTOR = 32
MIN_FIT_SPAN = 8  # the span past the knee the default aims for (less only where memory stops it)
FIT_POINTS = 6  # sizes past the knee, log-spaced over the span
MEMORY_SHARE = 0.25  # the default sweep never takes more than a quarter of the free memory
REPETITIONS = 3  # each size in repetitions, so each has its own between-run interval (the fit's gate)
DEFAULT_POINTS = 12
# Engines that build a bundle per size: from a few MB up to the full head (the knee comes from the data).
BUNDLE_MIN_BYTES = 4 * MiB
BUNDLE_POINTS = 8


@dataclass
class SweepPlan:
    sizes: list[int]
    cache_bytes: int | None
    notes: list[str] = field(default_factory=list)  # what sized it (`--dry-run` shows them)


@dataclass
class SweepResult:
    records: list[ResultRecord]
    analysis: SweepAnalysis  # analysis.fit None: the fit failed its gates (``error`` says why)
    cache_bytes: int | None
    error: str | None = None


def plan_sweep(
    engine: Engine,
    device: str,
    min_bytes: int | None,
    max_bytes: int | None,
    points: int,
    cache_bytes: int | None = -1,
    host: Host = SYSTEM_HOST,
) -> SweepPlan:
    """Default sizes: 1 MiB to 8x the device's cache (1 GiB when unknown), capped by free memory.

    ``cache_bytes``: -1 detects the device's cache, None treats it as unknown (knee from the data).
    """
    cache = engine.cache_bytes(device) if cache_bytes == -1 else cache_bytes
    notes = []
    if max_bytes is None:
        wanted = DEFAULT_MAX_CACHE_FACTOR * cache if cache else UNKNOWN_CACHE_MAX_BYTES
        memory = int(MEMORY_SHARE * host.available_memory_bytes())
        max_bytes = int(min(wanted, memory))
        if memory < wanted:
            notes.append(f"largest size {max_bytes / MiB:.0f} MiB: a quarter of the free memory "
                         f"(wanted {wanted / MiB:.0f} MiB)")
    min_bytes = min_bytes or DEFAULT_MIN_BYTES
    fit_from = CACHE_FACTOR * cache if cache else None
    sizes = sweep_sizes(min_bytes, max_bytes, points, fit_from, FIT_POINTS)
    if fit_from is not None and cache:
        span = max_bytes / fit_from
        notes.append(f"fit sizes {fit_from / MiB:.0f}-{max_bytes / MiB:.0f} MiB: past the knee at "
                     f"{CACHE_FACTOR}x the {cache / MiB:.1f} MiB cache, spanning {span:.1f}x"
                     + ("" if span >= MIN_FIT_SPAN else f" (less than {MIN_FIT_SPAN}x: raise --max-mb where "
                                                        "memory allows)"))
    else:
        notes.append("cache unknown: the knee is found from the data")
    notes.append(f"each size in {REPETITIONS} repetitions (its between-run interval is the fit's agreement "
                 "gate), timed in interleaved rounds (every size once per round, ascending then descending) "
                 "so all sizes share the host's phases; one after the other where memory cannot hold every "
                 "size at once, with --power, or on a CUDA device")
    if fit_from is not None and sum(s >= fit_from for s in sizes) < MIN_FIT_POINTS:
        raise UserError(
            f"sweep up to {max_bytes / MiB:.1f} MiB: the fit needs {MIN_FIT_POINTS} sizes past "
            f"{CACHE_FACTOR}x the cache ({fit_from / MiB:.1f} MiB); raise {setting('max_mb')} above that "
            f"or set {setting('cache_mb')} (0: unknown, the knee is found from the data)"
        )
    return SweepPlan(sizes, cache, notes)


def plan_engine_sweep(
    engine: Engine,
    device: str,
    base: Workload,
    min_bytes: int | None,
    max_bytes: int | None,
    points: int | None,
    cache_bytes: int | None = -1,
) -> SweepPlan:
    """The sizes this engine sweeps: bundles up to the full head where it builds one per size, else
    ``plan_sweep``'s sizes around the device's cache."""
    if engine.plans_bundles:
        return plan_bundle_sweep(engine, base, min_bytes, max_bytes, points)
    return plan_sweep(engine, device, min_bytes, max_bytes, points or DEFAULT_POINTS, cache_bytes)


def plan_bundle_sweep(engine: Engine, base: Workload, min_bytes: int | None, max_bytes: int | None,
                      points: int | None) -> SweepPlan:
    """Sizes from a few MB up to the full head (fp16 bytes); the knee comes from the data (no cache size)."""
    full = base.bytes_as("fp16")
    max_bytes = min(max_bytes or full, full)
    min_bytes = min_bytes or BUNDLE_MIN_BYTES
    if min_bytes >= max_bytes:
        raise UserError(f"sweep on {engine.name}: {setting('min_mb')} ({min_bytes / MiB:.1f}) must be below "
                        f"the largest size ({max_bytes / MiB:.1f} MiB, at most the full head)")
    return SweepPlan(sweep_sizes(min_bytes, max_bytes, points or BUNDLE_POINTS), None)


def plan_sweep_bundles(engine: Engine, device: str, base: Workload, plan: SweepPlan, runs: int,
                       budget_s: float | None) -> BundlePlan:
    """The bundles of a sweep on an engine that builds one per size, for its dry run."""
    bundles = [
        plan_bundle(engine, w, calls_text(engine, device, f"{w.weight_bytes / 1e6:.1f} MB {engine.call_name}",
                                          runs, budget_s))
        for w in sweep_workloads(engine, device, base, plan)
    ]
    notes = ["fit: latency = overhead + bytes / bandwidth past the knee"]
    if engine.sweep_context:
        notes.append(engine.sweep_context)
    return BundlePlan("sweep", engine.name, device, bundles, notes)


def sweep_workloads(
    engine: Engine, device: str, base: Workload, plan: SweepPlan, host: Host = SYSTEM_HOST,
    executor: Executor | None = None,
) -> list[Workload]:
    """The sweep's workloads, refused up front when the base cannot be resized or the largest won't fit."""
    synthetic_only(base, "sweep")
    if base.quant:
        raise UserError(
            f"sweep: workload {base.name!r} is quantized ({base.quant}); the sweep resizes plain "
            "heads, so give an unquantized one (a catalog name or lm_head:HIDDENxVOCAB)"
        )
    run_dtype = engine.dtype_for(base, device).run_dtype
    workloads = [resized(base, size, run_dtype) for size in plan.sizes]
    (executor or active_executor()).check_memory(engine, device, workloads[-1], host)
    return workloads


def run_sweep(
    engine: Engine,
    device: str,
    base: Workload,
    plan: SweepPlan,
    options: RunOptions,
    progress: ProgressFactory = no_progress,
    finished: Callable[[list[ResultRecord]], None] | None = None,
    executor: Executor | None = None,
) -> SweepResult:
    """Measure every point (in interleaved rounds where it can: sweep_rounds), then fit; ``finished`` gets
    the points so far after each repetition (the CLI saves them, so an interrupted sweep keeps what it
    measured). ``executor``: see orchestration/executor.py."""
    executor = executor or active_executor()
    workloads = sweep_workloads(engine, device, base, plan, options.host, executor)
    options = replace(options, repetitions=min(max(options.repetitions, REPETITIONS), options.runs))
    sequential = sequential_reason(engine, device, workloads, options)
    if sequential is None:
        measured = measure_in_rounds(engine, device, workloads, options, progress, finished)
        how = (f"sizes measured in {options.repetitions} interleaved rounds (ascending, then descending), "
               "each round one repetition of every size, so all sizes share the host's phases")
    else:
        measured, how = [], sequential
        for i, workload in enumerate(workloads):
            # the bytes one call reads as the engine runs it (fp32 where fp16 is widened), as the table counts
            label = (
                f"sweep {engine.name}:{device} {engine.bytes_for(workload, device) / 1e6:.3g} MB "
                f"({i + 1}/{len(workloads)})"
            )
            measured.append(executor.measure_parts(engine, device, workload, options,
                                                   progress(label, options.runs)))
            if finished is not None:  # the points so far, without the fit that needs them all
                finished([m.draft for m in measured])
    return finish_sweep(measured, plan.cache_bytes, how)


def finish_sweep(measured: list[Measurement], cache_bytes: int | None, how: str | None = None) -> SweepResult:
    """Fit the measured points (gated: measure.line_fit.FIT_GATES; per round where they were measured in
    rounds), then build each point's record once, with its sweep section. ``how``: how the sizes were
    measured (a note)."""
    drafts = [m.draft for m in measured]
    sizes = [r.workload.weight_bytes for r in drafts]
    latencies = [latency_of(r) for r in drafts]
    first = drafts[0]
    chip = figure_chip_name(first.engine.device, first.engine.details, first.host.chip)
    bound = memory_bound_gbps(chip, host_config(first.host.cores_physical, first.host.memory_bytes))
    analysis = analyse_sweep(sizes, latencies, cache_bytes, bound, [r.between_run() for r in drafts],
                             rounds_of(drafts))
    if how:
        analysis.notes.append(how)
    error = analysis.fit_error
    records = []
    by_size = sorted(zip(drafts, measured), key=lambda pair: pair[0].workload.weight_bytes)
    for i, (draft, measurement) in enumerate(by_size):
        in_fit = analysis.fit is not None and draft.workload.weight_bytes >= analysis.knee.size_bytes
        point = sweep_point(analysis, i, len(drafts), in_fit, cache_bytes)
        records.append(measurement.record({"sweep": point}))
    return SweepResult(records, analysis, cache_bytes, error)


def sweep_point(
    analysis: SweepAnalysis, index: int, points: int, in_fit: bool, cache_bytes: int | None
) -> SweepPoint:
    fit = analysis.fit
    return SweepPoint(
        point=index,
        points=points,
        in_fit=in_fit,
        cache_bytes=cache_bytes,
        knee_bytes=analysis.knee.size_bytes,
        knee_rule=analysis.knee.rule,
        fit=None
        if fit is None
        else LineFitInfo(
            overhead_s=fit.overhead_s,
            overhead_se_s=fit.overhead_se_s,
            overhead_resolved=fit.overhead_resolved,
            bandwidth_gbps=fit.bandwidth_bps / GB,
            r_squared=fit.r_squared,
            median_abs_rel_residual=fit.median_abs_rel_residual,
            max_abs_rel_residual=fit.max_abs_rel_residual,
            points=fit.points,
            method=fit.method,
        ),
        fit_error=analysis.fit_error,
        cache_peak_gbps=analysis.cache_peak_gbps,
        cache_peak_bytes=analysis.cache_peak_bytes,
        notes=list(analysis.notes),
    )


def sweep_from_records(records: list[ResultRecord], engine: str, device: str) -> LineFitInfo | None:
    """The saved fit of a sweep of ``engine:device`` (the latency suite shows it beside dispatch cost)."""
    for record in records:
        point = record.sweep
        if record.engine.name == engine and record.engine.device == device and point and point.fit:
            return point.fit
    return None
