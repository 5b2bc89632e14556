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
