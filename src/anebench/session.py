"""One measurement end to end: preflight, prepare, check the output, time, summarise, record.

The CLI and every suite go through ``measure_workload`` so that all records are made the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from . import __version__
from .engines.base import Engine, Prepared, check_streams_as_stored
from .errors import MeasurementError, UserError
from .measure.check import check_output
from .measure.clock import PERF_COUNTER, Clock
from .measure.stats import cache_warning, stability_warnings, summarize
from .measure.timing import DEFAULT_RUNS, ProgressCallback, time_calls
from .measure.warmup import WarmupPolicy
from .model import EngineInfo, MethodInfo, ResultRecord, ToolInfo, WorkloadInfo, utc_now
from .model import gbps as gbps_of
from .model import median as median_of
from .system.host import available_memory_bytes, describe_host
from .workloads import Workload

MEMORY_HEADROOM = 1.15  # weights plus the engine's own buffers and the generator's block
DEVICE_GAP_LIMIT = 0.10


@dataclass
class RunOptions:
    runs: int = DEFAULT_RUNS
    time_budget_s: float | None = None
    warmup: WarmupPolicy = field(default_factory=WarmupPolicy)
    clock: Clock = PERF_COUNTER
    mitigations: list[str] = field(default_factory=list)
    suite: str = "run"
    timing: str = "wall clock per call"
    power: bool = False  # sample an energy counter around the calls (extras["energy"])


def preflight_memory(engine: Engine, device: str, workload: Workload) -> None:
    """Refuse, before allocating anything, a workload the engine cannot stream as stored or one larger
    than the memory free for it."""
    check_streams_as_stored(engine, workload, device)
    needed = engine.bytes_for(workload, device) * MEMORY_HEADROOM
    free = engine.free_memory(device)
    if free is None:  # the weights live in host memory (0 free on a GPU is an answer, not "unknown")
        free = available_memory_bytes()
    if needed > free:
        raise UserError(
            f"workload {workload.name!r} needs {needed / 1e9:.2f} GB for its weights on "
            f"{engine.name}:{device}, but only {free / 1e9:.2f} GB is free; choose a smaller workload"
        )


@contextmanager
def prepared_workload(engine: Engine, device: str, workload: Workload) -> Iterator[Prepared]:
    preflight_memory(engine, device, workload)
    prepared = engine.prepare(workload, device)
    try:
        yield prepared
    finally:
        prepared.close()


def verify_output(prepared: Prepared):
    prepared.call()
    check = check_output(prepared)
    if not check.passed:
        raise MeasurementError(
            f"output check failed on {prepared.workload.name}: relative error {check.relative_error:.3g} "
            f"> {check.tolerance:g}; the engine did not compute W @ x"
        )
    return check


def measure_workload(
    engine: Engine,
    device: str,
    workload: Workload,
    options: RunOptions | None = None,
    progress: ProgressCallback | None = None,
    on_prepared: Callable[[Prepared], None] | None = None,
) -> ResultRecord:
    options = options or RunOptions()
    with prepared_workload(engine, device, workload) as prepared:
        if on_prepared is not None:
            on_prepared(prepared)
        check = verify_output(prepared)
        window = energy_window(device) if options.power else None
        timing = time_calls(prepared, options.runs, options.warmup, options.clock, options.time_budget_s,
                            progress)
        extras = {"energy": finish_energy(window, prepared, timing)} if window is not None else None
        return build_record(engine, device, workload, prepared, options, timing, check, extras)


def energy_window(device: str):
    from .system.power import EnergyWindow, energy_meter

    return EnergyWindow(energy_meter(device))


def finish_energy(window, prepared: Prepared, timing) -> dict:
    calls = timing.warmup_runs + len(timing.samples_s)
    median = median_of(timing.samples_s)
    return window.finish(calls, prepared.weight_bytes, median, "warmup and timed calls")


def build_record(engine, device, workload, prepared, options, timing, check, extras) -> ResultRecord:
    host = describe_host()
    summary = summarize(timing.samples_s)
    warnings = stability_warnings(timing.samples_s, summary)
    warnings.extend(prepared.warnings)
    cache = cache_warning(prepared.weight_bytes, engine.cache_bytes(device))
    if cache:
        warnings.append(cache)
    if not timing.warmup_steady:
        warnings.append(f"warmup hit its cap after {timing.warmup_runs} calls without becoming steady")
    gbps = gbps_of(prepared.weight_bytes, summary.median)
    device_summary = device_gbps = None
    if timing.device_samples_s:
        device_summary = summarize(timing.device_samples_s)
        device_gbps = gbps_of(prepared.weight_bytes, device_summary.median)
        gap = (summary.median - device_summary.median) / summary.median
        if gap > DEVICE_GAP_LIMIT:
            warnings.append(f"wall clock is {gap:.0%} above device time: host-side overhead in each call")
    record = ResultRecord(
        tool=ToolInfo(version=__version__),
        created=utc_now(),
        suite=options.suite,
        host=host,
        engine=EngineInfo(
            name=engine.name,
            version=engine.version(),
            device=device,
            compute_units=prepared.compute_units,
            run_dtype=prepared.run_dtype,
            dtype_note=prepared.dtype_note,
            details=prepared.details,
        ),
        workload=WorkloadInfo.of(
            workload,
            prepared.weight_bytes,
            fingerprint=workload.streamed_fingerprint(prepared.run_dtype),  # identity = the bytes read
            source=workload.weights.description().get("source", "synthetic"),
            artifact_sha256=prepared.artifact_sha256,
            origin=workload.weights.provenance(),
        ),
        method=MethodInfo(
            runs=len(timing.samples_s),
            warmup_policy=timing.warmup_policy,
            warmup_runs=timing.warmup_runs,
            warmup_steady=timing.warmup_steady,
            timer=timing.timer,
            timer_resolution_s=timing.timer_resolution_s,
            statistic="median",
            timing=options.timing,
            mitigations=list(options.mitigations),
            output_check=check,
        ),
        summary=summary,
        samples_s=timing.samples_s,
        device_samples_s=timing.device_samples_s,
        device_summary=device_summary,
        device_time=prepared.device_time_note,
        gbps=gbps,
        device_gbps=device_gbps,
        warnings=warnings,
        **(extras or {}),
    )
    return record.with_id()
