"""Is an energy window long enough for its counter? NVML's total-energy counter moves in steps of
~10-100 ms (and A100/H100 sample power only part of the time), so joules over a window of a few steps
can be off by tens of percent. The counter's step is observed, the window is lengthened to at least
``MIN_WINDOW_S`` and ``MIN_COUNTER_STEPS`` steps, and a window that is still shorter is flagged.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from itertools import pairwise

from ..model.gpu import EnergyWindowCheck
from ..model.statistics import median

MIN_WINDOW_S = 3.0
MIN_COUNTER_STEPS = 30  # one step of error is then at most ~3% of the window
MAX_WINDOW_S = 60.0  # a counter slower than 2 s per step is not waited for: the figure is flagged
OBSERVE_MAX_S = 1.0


def observe_counter_step(read: Callable[[], float], now_s: Callable[[], float] = time.perf_counter,
                         sleep: Callable[[float], None] = time.sleep, max_s: float = OBSERVE_MAX_S,
                         poll_s: float = 0.001, changes: int = 4) -> float | None:
    """The median interval between changes of the counter ``read``, polled for up to ``max_s``;
    None when it changed fewer than twice (then no interval was seen)."""
    start = now_s()
    last = read()
    seen: list[float] = []
    while now_s() - start < max_s and len(seen) < changes:
        sleep(poll_s)
        value = read()
        if value != last:
            seen.append(now_s())
            last = value
    intervals = [b - a for a, b in pairwise(seen)]
    return median(intervals) if intervals else None


def window_needed_s(step_s: float | None) -> float:
    if step_s is None:
        return MIN_WINDOW_S
    return min(max(MIN_WINDOW_S, MIN_COUNTER_STEPS * step_s), MAX_WINDOW_S)


def check_window(step_s: float | None, window_s: float, extra_calls: int) -> EnergyWindowCheck:
    steps = window_s / step_s if step_s else None
    reliable = step_s is not None and window_s >= MIN_WINDOW_S and steps is not None \
        and steps >= MIN_COUNTER_STEPS
    return EnergyWindowCheck(counter_step_s=step_s, window_s=window_s, steps_in_window=steps,
                             min_steps=MIN_COUNTER_STEPS, min_seconds=MIN_WINDOW_S, extra_calls=extra_calls,
                             reliable=reliable)


def window_warning(check: EnergyWindowCheck) -> str | None:
    if check.reliable:
        return None
    if check.counter_step_s is None:
        return (f"energy figure unreliable: the energy counter was not seen to step within "
                f"{OBSERVE_MAX_S:g} s, so its resolution over the window is unknown")
    return (f"energy figure unreliable: the window ({check.window_s:.2f} s) spans "
            f"{check.steps_in_window:.0f} counter steps of {check.counter_step_s * 1e3:.0f} ms; "
            f"at least {MIN_COUNTER_STEPS} steps and {MIN_WINDOW_S:g} s are needed")


MAX_READ_SHARE = 0.1  # the two reads' own durations: at most this share of the window they bound


def window_covers(start_read_ns: tuple[int, int], end_read_ns: tuple[int, int],
                  common_ns: tuple[int, int]) -> str | None:
    """Why an energy window read at ``start_read_ns`` and ``end_read_ns`` ((before, after) each read, on
    the copies' clock) cannot stand for the calls in the common window ``common_ns``; None when it can.

    A counter is sampled somewhere inside its read, so the window surely covers the common window only if
    the first read ended before the common window opened and the last began after it closed; and its
    length is known only to the reads' own durations, which must be small against it.
    """
    (before0, after0), (before1, after1) = start_read_ns, end_read_ns
    opened, closed = common_ns
    common_s = max(closed - opened, 0) / 1e9
    if after0 > opened:
        late_s = (after0 - opened) / 1e9
        return (f"the energy counter's reading at the common start ended {late_s:.4f} s after "
                f"the common window opened (a slow read or a busy machine; the common window is "
                f"{common_s:.4f} s): the reading does not cover the calls timed together")
    if before1 < closed:
        return (f"the energy counter's reading at the end began {(closed - before1) / 1e9:.4f} s before the "
                f"common window closed (the common window is {common_s:.4f} s): the reading does not cover "
                "the calls timed together")
    window_s = ((before1 + after1) - (before0 + after0)) / 2e9
    reads_s = ((after0 - before0) + (after1 - before1)) / 1e9
    if window_s <= 0 or reads_s > MAX_READ_SHARE * window_s:
        return (f"the energy counter's two reads took {reads_s:.4f} s together, more than "
                f"{MAX_READ_SHARE:.0%} of the {window_s:.4f} s window they bound (the common window is "
                f"{common_s:.4f} s): the window's length is not known well enough for watts")
    return None
