"""The timing loop shared by every engine: warmup policy, resolution check, N runs or a time budget."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engines.base import Prepared
from ..errors import MeasurementError, UserError
from ..model import Repetition
from .clock import MIN_TICKS_PER_CALL, PERF_COUNTER, Clock
from .warmup import WarmupPolicy

DEFAULT_RUNS = 300  # timed calls in all, split over the repetitions (3 x 100 by default)
DEFAULT_REPETITIONS = 3
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
    # How samples_s splits into independent repetitions (each after its own warmup); None: one.
    repetitions: list[Repetition] | None = None
    fresh_processes: bool = False

    def repetition_list(self) -> list[Repetition]:
        return self.repetitions or [Repetition(runs=len(self.samples_s), warmup_runs=self.warmup_runs,
                                               warmup_steady=self.warmup_steady)]


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
    typical = sorted(warm_samples)[len(warm_samples) // 2]
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


def split_runs(runs: int, repetitions: int) -> list[int]:
    """``runs`` timed calls over ``repetitions`` repetitions, sizes differing by at most one."""
    if repetitions < 1:
        raise UserError(f"--repetitions {repetitions}: give at least 1")
    if runs < repetitions:
        raise UserError(f"--runs {runs} is fewer than --repetitions {repetitions}: each repetition needs "
                        f"at least one timed call (give --repetitions {runs} or more --runs)")
    base, extra = divmod(runs, repetitions)
    return [base + (1 if i < extra else 0) for i in range(repetitions)]


def combine(parts: list[Timing], fresh_processes: bool = False) -> Timing:
    """One Timing of independent repetitions laid end to end; each keeps its warmup in ``repetitions``."""
    if not parts:
        raise ValueError("no repetitions to combine")
    device: list[float] | None = []
    for part in parts:
        device = device + part.device_samples_s if device is not None and part.device_samples_s else None
    return Timing(
        samples_s=[s for p in parts for s in p.samples_s],
        device_samples_s=device,
        warmup_runs=sum(p.warmup_runs for p in parts),
        warmup_steady=all(p.warmup_steady for p in parts),
        warmup_policy=parts[0].warmup_policy + (" (each repetition)" if len(parts) > 1 else ""),
        timer=parts[0].timer,
        timer_resolution_s=max(p.timer_resolution_s for p in parts),
        repetitions=[Repetition(runs=len(p.samples_s), warmup_runs=p.warmup_runs,
                                warmup_steady=p.warmup_steady) for p in parts],
        fresh_processes=fresh_processes,
    )


def time_repetitions(
    prepared: Prepared,
    runs: int = DEFAULT_RUNS,
    repetitions: int = DEFAULT_REPETITIONS,
    warmup: WarmupPolicy | None = None,
    clock: Clock = PERF_COUNTER,
    time_budget_s: float | None = None,
    progress: ProgressCallback | None = None,
) -> Timing:
    """``runs`` timed calls as ``repetitions`` repetitions in this process, each warmed up afresh by the
    policy (after the previous one's calls the state may have moved: frequency, caches, background load)
    and each given an equal share of ``time_budget_s``."""
    sizes = split_runs(runs, repetitions)
    share = time_budget_s / repetitions if time_budget_s else None
    parts: list[Timing] = []
    for i, size in enumerate(sizes):
        step = _offset(progress, sum(sizes[:i]), runs) if progress is not None else None
        parts.append(time_calls(prepared, size, warmup, clock, share, step))
    return combine(parts)


def _offset(progress: ProgressCallback, before: int, runs: int) -> ProgressCallback:
    """One bar over all repetitions, counted by planned sizes (a budget may end one early: no step back)."""
    return lambda done, _total: progress(before + done, runs)
