"""The one timing loop shared by every engine and phase, parameterised by its stop rule.

Warmup (until steady), timed runs (N runs or a time budget) and the concurrency "together" phase
(until every copy is done) are the same loop with different stop rules. The inner loop does nothing
but read the clock, call and append; the rule is asked between chunks of calls, so progress, budgets
and the copies' shared flags add nothing to a timed call. The too-short-call refusal and device-time
collection live here once.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSequence
from dataclasses import dataclass
from typing import cast

from ..engines.base import Prepared
from ..errors import MeasurementError, UserError, setting
from ..model import Repetition, median
from .clock import MIN_TICKS_PER_CALL, PERF_COUNTER, Clock
from .warmup import WarmupPolicy

DEFAULT_RUNS = 300  # timed calls in all, split over the repetitions (3 x 100 by default)
DEFAULT_REPETITIONS = 3
ProgressCallback = Callable[[int, int], None]  # (done, total)
PhaseCallback = Callable[[str], None]  # "timed" before the timed calls, "timed-end" after them


@dataclass
class LoopState:
    """What a stop rule sees between chunks: the lists the loop appends to (never copied)."""

    ticks: list[int]  # each call's duration (ns)
    starts: list[int] | None  # each call's start (ns), when the loop records spans
    began_ns: int
    now_ns: int


class StopRule:
    """Says how many calls to make before it is asked again; 0 ends the loop."""

    def next_chunk(self, state: LoopState) -> int:
        raise NotImplementedError


class Steady(StopRule):
    """Warmup: one call at a time until the policy finds the samples steady or hits its cap."""

    def __init__(self, policy: WarmupPolicy):
        self.policy = policy
        self.steady = False
        self._samples: list[float] = []

    def next_chunk(self, state: LoopState) -> int:
        if not state.ticks:
            return 1  # at least one call, whatever the policy
        self._samples.append(state.ticks[-1] / 1e9)
        elapsed_s = (state.now_ns - state.began_ns) / 1e9
        if self.policy.is_steady(self._samples, elapsed_s):
            self.steady = True
            return 0
        if self.policy.must_stop(self._samples, elapsed_s):
            self.steady = self.policy.fixed is not None
            return 0
        return 1


class Runs(StopRule):
    """``runs`` calls, or fewer once ``time_budget_s`` of call time is spent (at least one); progress
    is reported between chunks of about 1% of the runs."""

    def __init__(
        self, runs: int, time_budget_s: float | None = None, progress: ProgressCallback | None = None
    ):
        if runs < 1:
            raise ValueError("runs must be >= 1")
        self.runs, self.progress = runs, progress
        self.budget_ns = int(time_budget_s * 1e9) if time_budget_s else None
        self.chunk = max(runs // 100, 1)
        self._spent, self._seen = 0, 0

    def next_chunk(self, state: LoopState) -> int:
        done = len(state.ticks)
        if done and self.progress is not None:
            self.progress(done, self.runs)
        self._spent += sum(state.ticks[self._seen:])
        self._seen = done
        if done >= self.runs or (done and self.budget_ns is not None and self._spent >= self.budget_ns):
            if self.progress is not None and done < self.runs:
                self.progress(self.runs, self.runs)
            return 0
        return min(self.chunk, self.runs - done)


class UntilAllDone(StopRule):
    """The together phase of N copies: each copy calls until every copy is done, so none runs alone.

    Counting starts at the common start S = the latest first-call start of all copies (a copy's calls
    before S ran beside fewer copies). A copy is done at the end D_i of its ``runs``-th call that began
    at or after S (or once its calls since S spent the budget), and it stops only when every copy is done
    and its own last call ended at or after every D_j. So the common window [S, min last end] holds
    every copy's counted calls whole, however the OS schedules the copies: a copy descheduled between
    two calls can no longer leave its calls on one side of another copy's.

    ``bounds`` holds [start_0, end_0, start_1, end_1, ...] and ``done_at`` one D per copy (0: not yet);
    both are shared by the copies (lists for threads, shared arrays for processes). ``stop`` is asked
    every ``check_every`` calls and ends the loop early (another copy failed).
    """

    def __init__(self, runs: int, copy: int, bounds: MutableSequence[int], done_at: MutableSequence[int],
                 time_budget_s: float | None = None, stop: Callable[[], bool] | None = None,
                 check_every: int = 64):
        self.runs, self.copy, self.bounds, self.done_at = runs, copy, bounds, done_at
        self.copies = len(done_at)
        self.budget_ns = int(time_budget_s * 1e9) if time_budget_s else None
        self.stop, self.check_every = stop, max(check_every, 1)
        self.common_start = 0
        self.first_counted = -1  # index of this copy's first call at or after the common start
        self.aborted = False
        # Running sums, so each answer costs the same at the 50,000th call as at the first: the counted
        # calls' time (for the budget) and the calls since ``stop`` was last asked.
        self._spent_ns, self._summed, self._last_check = 0, 0, 0

    def next_chunk(self, state: LoopState) -> int:
        ticks, starts = state.ticks, state.starts
        if not ticks:
            return 1
        if starts is None:
            raise ValueError("the together phase needs each call's start: run the loop with spans=True")
        last = len(ticks) - 1
        if last == 0:
            self.bounds[2 * self.copy] = starts[0]
        self.bounds[2 * self.copy + 1] = starts[last] + ticks[last]
        if self.stop is not None and self._checked_stop(len(ticks)):
            self.aborted = True
            return 0
        if self.done_at[self.copy] == 0:
            chunk = self._count(ticks, starts)
            if self.done_at[self.copy] == 0:
                return chunk
        if any(d == 0 for d in self.done_at):
            return 1
        return 0 if starts[last] + ticks[last] >= max(self.done_at) else 1

    def _checked_stop(self, calls: int) -> bool:
        """Ask ``stop`` (a shared flag: costly across processes) once every ``check_every`` calls."""
        if calls > 1 and calls - self._last_check < self.check_every:
            return False
        self._last_check = calls
        return bool(self.stop and self.stop())

    def _count(self, ticks: list[int], starts: list[int]) -> int:
        """Count this copy's calls since the common start; returns how many calls to make before the
        next answer (several while far from done: the shared state is read once per chunk)."""
        if self.first_counted < 0:
            firsts = [self.bounds[2 * i] for i in range(self.copies)]
            if any(s == 0 for s in firsts):
                return 1  # some copy has not made its first call yet
            self.common_start = max(firsts)
            # the first call at or after the common start (calls before it ran beside fewer copies);
            # searched once, from the end (the common start is near this copy's first calls)
            index = len(starts)
            while index > 0 and starts[index - 1] >= self.common_start:
                index -= 1
            self.first_counted = self._summed = index
        counted = len(ticks) - self.first_counted
        if counted <= 0:
            return 1
        self._spent_ns += sum(ticks[self._summed:])  # only the calls since the last answer
        self._summed = len(ticks)
        spent_out = self.budget_ns is not None and self._spent_ns >= self.budget_ns
        if counted >= self.runs or spent_out:
            self.done_at[self.copy] = starts[-1] + ticks[-1]
            return 0
        left = self.runs - counted
        if self.budget_ns is not None:  # calls the budget still allows at this copy's mean call so far
            left = min(left, max((self.budget_ns - self._spent_ns) * counted // max(self._spent_ns, 1), 1))
        return max(min(left, self.check_every), 1)


@dataclass
class Loop:
    """One run of the timing loop: every call's duration, device time and (when asked) start."""

    samples_s: list[float]
    device_samples_s: list[float] | None
    starts_ns: list[int] | None
    ticks_ns: list[int]

    @property
    def spans_ns(self) -> list[tuple[int, int]]:
        """(start, end) of each call; only for a loop run with ``spans=True``."""
        if self.starts_ns is None:
            raise ValueError("this loop did not record each call's start")
        return [(t0, t0 + d) for t0, d in zip(self.starts_ns, self.ticks_ns)]


def timing_loop(prepared: Prepared, clock: Clock, rule: StopRule, resolution_s: float,
                spans: bool = False) -> Loop:
    """Call ``prepared`` until ``rule`` says stop; refuse calls shorter than the timer can time.

    ``spans`` also records each call's start (the together phase needs them); without it the inner
    loop is exactly clock, call, clock, append.
    """
    now, call = clock.now_ns, prepared.call
    has_device = prepared.device_seconds() is not None
    # only read where the engine has device time, so never None there
    device_seconds = cast(Callable[[], float], prepared.device_seconds)
    ticks: list[int] = []
    starts: list[int] | None = [] if spans else None
    device: list[float] = []
    tick, dev = ticks.append, device.append
    start = starts.append if starts is not None else None
    began = now()
    state = LoopState(ticks, starts, began, began)
    size = rule.next_chunk(state)
    while size > 0:
        if start is not None and has_device:
            for _ in range(size):
                t0 = now()
                call()
                t1 = now()
                start(t0)
                tick(t1 - t0)
                dev(device_seconds())
        elif start is not None:
            for _ in range(size):
                t0 = now()
                call()
                t1 = now()
                start(t0)
                tick(t1 - t0)
        elif has_device:
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
        state.now_ns = now()
        size = rule.next_chunk(state)
    refuse_too_short(ticks, clock.name, resolution_s)
    return Loop([t / 1e9 for t in ticks], device if has_device else None, starts, ticks)


def refuse_too_short(ticks_ns: list[int], timer: str, resolution_s: float) -> None:
    if not ticks_ns:
        return
    typical = median(ticks_ns) / 1e9  # the one median every figure of a run uses
    if typical < MIN_TICKS_PER_CALL * resolution_s:
        raise MeasurementError(
            f"a call takes {typical * 1e9:.0f} ns, shorter than {MIN_TICKS_PER_CALL} ticks of the "
            f"{timer} timer ({resolution_s * 1e9:.0f} ns each); use a larger workload or a larger "
            f"{setting('batch')}"
        )


def warm_up(prepared: Prepared, policy: WarmupPolicy, clock: Clock,
            resolution_s: float | None = None) -> tuple[list[float], bool]:
    """Warmup alone: the loop under the ``Steady`` rule; (samples, whether they became steady)."""
    rule = Steady(policy)
    loop = timing_loop(prepared, clock, rule, clock.resolution_s() if resolution_s is None else resolution_s)
    return loop.samples_s, rule.steady


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


def time_calls(
    prepared: Prepared,
    runs: int = DEFAULT_RUNS,
    warmup: WarmupPolicy | None = None,
    clock: Clock = PERF_COUNTER,
    time_budget_s: float | None = None,
    progress: ProgressCallback | None = None,
    phase: PhaseCallback | None = None,
) -> Timing:
    """Warm up by policy, refuse calls too short for the timer, then time ``runs`` calls."""
    if runs < 1:
        raise ValueError("runs must be >= 1")
    warmup = warmup or WarmupPolicy()
    resolution = clock.resolution_s()
    warm_samples, steady = warm_up(prepared, warmup, clock, resolution)
    if phase is not None:
        phase("timed")
    timed = timing_loop(prepared, clock, Runs(runs, time_budget_s, progress), resolution)
    if phase is not None:
        phase("timed-end")
    return Timing(
        samples_s=timed.samples_s,
        device_samples_s=timed.device_samples_s,
        warmup_runs=len(warm_samples),
        warmup_steady=steady,
        warmup_policy=warmup.describe(),
        timer=clock.name,
        timer_resolution_s=resolution,
    )


def split_runs(runs: int, repetitions: int) -> list[int]:
    """``runs`` timed calls over ``repetitions`` repetitions, sizes differing by at most one."""
    if repetitions < 1:
        raise UserError(f"{setting('repetitions')} {repetitions}: give at least 1")
    if runs < repetitions:
        runs_, repetitions_ = setting("runs"), setting("repetitions")
        raise UserError(f"{runs_} {runs} is fewer than {repetitions_} {repetitions}: each repetition needs "
                        f"at least one timed call (give {repetitions_} {runs} or more {runs_})")
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
        repetitions=[r for p in parts for r in p.repetition_list()],
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
    phase: PhaseCallback | None = None,
) -> Timing:
    """``runs`` timed calls as ``repetitions`` repetitions in this process, each warmed up afresh by the
    policy (after the previous one's calls the state may have moved: frequency, caches, background load)
    and each given an equal share of ``time_budget_s``. ``phase`` hears "timed" before the first
    repetition's timed calls and "timed-end" after the last one's: the later warmups lie between."""
    sizes = split_runs(runs, repetitions)
    share = time_budget_s / repetitions if time_budget_s else None
    parts: list[Timing] = []
    for i, size in enumerate(sizes):
        step = _offset(progress, sum(sizes[:i]), runs) if progress is not None else None
        marks = _outer_marks(phase, first=i == 0, last=i == len(sizes) - 1)
        parts.append(time_calls(prepared, size, warmup, clock, share, step, marks))
    return combine(parts)


def _outer_marks(phase: PhaseCallback | None, first: bool, last: bool) -> PhaseCallback | None:
    if phase is None:
        return None

    def mark(name: str) -> None:
        if (name == "timed" and first) or (name == "timed-end" and last):
            phase(name)

    return mark


def _offset(progress: ProgressCallback, before: int, runs: int) -> ProgressCallback:
    """One bar over all repetitions, counted by planned sizes (a budget may end one early: no step back)."""
    return lambda done, _total: progress(before + done, runs)
