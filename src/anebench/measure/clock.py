"""Clocks: perf_counter_ns for real runs, a scripted fake for tests; and the timer-resolution check."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

MIN_TICKS_PER_CALL = 20


@dataclass(frozen=True)
class Clock:
    name: str
    now_ns: Callable[[], int]

    def resolution_s(self, trials: int = 200) -> float:
        """The smallest positive step the clock shows between back-to-back readings (its tick)."""
        declared = time.get_clock_info("perf_counter").resolution if self.name == "perf_counter_ns" else 0
        best = None
        now = self.now_ns
        for _ in range(trials):
            start = now()
            step = now() - start
            spins = 0
            while step <= 0 and spins < 1_000_000:
                step = now() - start
                spins += 1
            if step > 0 and (best is None or step < best):
                best = step
        measured = (best or 1) / 1e9
        return max(measured, declared)


PERF_COUNTER = Clock("perf_counter_ns", time.perf_counter_ns)


class FakeClock:
    """A clock whose readings advance only by what the test tells it, for exact timing-loop tests."""

    def __init__(self, tick_ns: int = 1):
        self.t = 0
        self.tick_ns = tick_ns

    def advance(self, seconds: float) -> None:
        self.t += round(seconds * 1e9)

    def now_ns(self) -> int:
        self.t += self.tick_ns
        return self.t

    def clock(self) -> Clock:
        return Clock("fake", self.now_ns)
