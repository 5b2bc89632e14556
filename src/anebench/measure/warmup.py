"""Warmup as a policy, not a fixed count: run until the last samples are steady, within a cap."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

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

    def is_steady(self, samples: list[float], elapsed_s: float = 0.0) -> bool:
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


class _ClockTrace:
    """SM clock readings of one warmup (the policy is frozen; its readings are not part of its identity)."""

    def __init__(self) -> None:
        self.readings: list[tuple[float, float]] = []  # (elapsed_s, MHz)


@dataclass(frozen=True)
class GpuWarmupPolicy(WarmupPolicy):
    """For GPUs: at least ``min_seconds`` of calls (clocks and temperature take seconds to settle, while
    ten calls of a 1 GB head take 3 ms), then the latency rule; where the SM clock can be read (NVML),
    also until it has stopped rising (readings every ``clock_interval_s`` within 1% over
    ``clock_window_s``)."""

    min_seconds: float = 2.0
    max_runs: int = 10_000_000
    max_seconds: float = 30.0
    clock_interval_s: float = 0.25
    clock_window_s: float = 1.0  # the SM clock must be flat (within 1%) over this long
    clock_mhz: Callable[[], float | None] | None = field(default=None, compare=False, repr=False)
    _trace: _ClockTrace = field(default_factory=_ClockTrace, compare=False, repr=False)

    def describe(self) -> str:
        if self.fixed is not None:
            return super().describe()
        clocks = "; and SM clock no longer rising (NVML)" if self.clock_mhz is not None else ""
        return (f"GPU: at least {self.min_seconds:g} s, then until steady: median of last {self.window} "
                f"within {self.tolerance:.0%} of the {self.window} before{clocks}; "
                f"cap {self.max_seconds:g} s")

    def is_steady(self, samples: list[float], elapsed_s: float = 0.0) -> bool:
        if self.fixed is not None:
            return super().is_steady(samples, elapsed_s)
        clocks_settled = self._clocks_settled(elapsed_s)
        if elapsed_s < self.min_seconds:
            return False
        return super().is_steady(samples, elapsed_s) and clocks_settled

    def _clocks_settled(self, elapsed_s: float) -> bool:
        if self.clock_mhz is None:
            return True
        readings = self._trace.readings
        if readings and elapsed_s < readings[-1][0]:  # a new warmup with the same policy
            readings.clear()
        if not readings or elapsed_s - readings[-1][0] >= self.clock_interval_s:
            mhz = self.clock_mhz()
            if mhz is None:
                return True  # unreadable now: the time floor and the latency rule decide
            readings.append((elapsed_s, mhz))
        if readings[-1][0] - readings[0][0] < self.clock_window_s:
            return False
        recent = [mhz for at, mhz in readings if at >= readings[-1][0] - self.clock_window_s]
        return max(recent) <= min(recent) * 1.01


def warmup_for(device: str, policy: WarmupPolicy,
               clock_mhz: Callable[[], float | None] | None = None) -> WarmupPolicy:
    """The GPU policy for a CUDA device when the default policy was asked for; otherwise ``policy``."""
    if device.startswith("cuda") and policy == WarmupPolicy():
        return GpuWarmupPolicy(clock_mhz=clock_mhz)
    return policy
