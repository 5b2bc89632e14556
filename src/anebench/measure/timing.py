"""The timing loop shared by every engine: warmup policy, resolution check, N runs or a time budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engines.base import Prepared
from ..errors import MeasurementError
from ..model import median
from .clock import MIN_TICKS_PER_CALL, PERF_COUNTER, Clock
from .warmup import WarmupPolicy

DEFAULT_RUNS = 300
ProgressCallback = Callable[[int, int], None]  # (done, total)


@dataclass
class Timing:
    samples_s: list[float]
    device_samples_s: list[float] | None
    warmup_runs: int
    warmup_steady: bool
    warmup_policy: str
    timer: str
    timer_resolution_s: float


def warm_up(prepared: Prepared, policy: WarmupPolicy, clock: Clock) -> tuple[list[float], bool]:
    samples: list[float] = []
    started = clock.now_ns()
    now, call = clock.now_ns, prepared.call
    while True:
        t0 = now()
        call()
        t1 = now()
        samples.append((t1 - t0) / 1e9)
        if policy.is_steady(samples):
            return samples, True
        if policy.must_stop(samples, (t1 - started) / 1e9):
            return samples, policy.fixed is not None


def timed_runs(
    prepared: Prepared,
    runs: int,
    clock: Clock,
    time_budget_s: float | None = None,
    progress: ProgressCallback | None = None,
) -> tuple[list[float], list[float] | None]:
    """``runs`` timed calls, or fewer when ``time_budget_s`` of call time runs out (at least 1).

    The inner loops do nothing but read the clock, call and append: progress and the budget are
    handled between chunks of about 1% of the runs, so they add nothing to a timed call.
    """
    now, call = clock.now_ns, prepared.call
    device_seconds = prepared.device_seconds
    has_device_time = device_seconds() is not None
    budget_ns = int(time_budget_s * 1e9) if time_budget_s else None
    ticks: list[int] = []
    device: list[float] = []
    tick, dev = ticks.append, device.append
    chunk = max(runs // 100, 1)
    done = 0
    while done < runs:
        size = min(chunk, runs - done)
        if has_device_time:
            for _ in range(size):
                t0 = now()
                call()
                t1 = now()
                tick(t1 - t0)
                dev(device_seconds())
        else:
            for _ in range(size):
                t0 = now()
                call()
                t1 = now()
                tick(t1 - t0)
        done += size
        if progress is not None:
            progress(done, runs)
        if budget_ns is not None and sum(ticks) >= budget_ns:
            break
    if progress is not None and done < runs:
        progress(runs, runs)
    return [t / 1e9 for t in ticks], (device if has_device_time else None)


def time_calls(
    prepared: Prepared,
    runs: int = DEFAULT_RUNS,
    warmup: WarmupPolicy | None = None,
    clock: Clock = PERF_COUNTER,
    time_budget_s: float | None = None,
    progress: ProgressCallback | None = None,
) -> Timing:
    """Warm up by policy, refuse calls too short for the timer, then time ``runs`` calls."""
    if runs < 1:
        raise ValueError("runs must be >= 1")
    warmup = warmup or WarmupPolicy()
    resolution = clock.resolution_s()
    warm_samples, steady = warm_up(prepared, warmup, clock)
    typical = median(warm_samples)
    if typical < MIN_TICKS_PER_CALL * resolution:
        raise MeasurementError(
            f"a call takes {typical * 1e9:.0f} ns, shorter than {MIN_TICKS_PER_CALL} ticks of the "
            f"{clock.name} timer ({resolution * 1e9:.0f} ns each); use a larger workload or --batch"
        )
    samples, device = timed_runs(prepared, runs, clock, time_budget_s, progress)
    return Timing(
        samples_s=samples,
        device_samples_s=device,
        warmup_runs=len(warm_samples),
        warmup_steady=steady,
        warmup_policy=warmup.describe(),
        timer=clock.name,
        timer_resolution_s=resolution,
    )
