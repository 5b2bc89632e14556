"""Warmup as a policy, not a fixed count: run until the last samples are steady, within a cap."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import median


@dataclass(frozen=True)
class WarmupPolicy:
    """Steady when the median of the last ``window`` calls is within ``tolerance`` of the window before.

    ``fixed`` replaces the rule by an exact count (for comparing with tools that use one).
    """

    min_runs: int = 3
    window: int = 5
    tolerance: float = 0.03
    max_runs: int = 100
    max_seconds: float = 15.0
    fixed: int | None = None

    def describe(self) -> str:
        if self.fixed is not None:
            return f"fixed: {self.fixed} calls"
        return (
            f"until steady: median of last {self.window} within {self.tolerance:.0%} of the "
            f"{self.window} before; min {self.min_runs}, cap {self.max_runs} calls or {self.max_seconds:g} s"
        )

    def is_steady(self, samples: list[float]) -> bool:
        if self.fixed is not None:
            return len(samples) >= self.fixed
        if len(samples) < max(self.min_runs, 2 * self.window):
            return False
        last = median(samples[-self.window :])
        before = median(samples[-2 * self.window : -self.window])
        return abs(last - before) <= self.tolerance * before

    def must_stop(self, samples: list[float], elapsed_s: float) -> bool:
        if self.fixed is not None:
            return len(samples) >= self.fixed
        return len(samples) >= self.max_runs or elapsed_s >= self.max_seconds
