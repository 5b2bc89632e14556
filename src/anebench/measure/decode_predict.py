"""Predicted decode: a token's dispatches priced by the overhead + bandwidth curve of a sweep of the same
engine and device. A pure analysis: sizes and seconds in, seconds per token out."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass, field

PREDICTION_RULE = (
    "tok/s = 1 / sum over dispatches of (overhead + bytes / bandwidth at that size); the bandwidth at a size "
    "is the sweep's measured rate past its knee (latency - overhead), interpolated in log size; below the "
    "knee (cache-resident in a sweep that repeats one matrix, read from memory in a decode step whose "
    "weights exceed the caches) and past the largest size it is the fit's memory bandwidth"
)


@dataclass(frozen=True)
class SweepCurve:
    """A sweep's fit (overhead, memory bandwidth) and, where known, its measured points past the knee."""

    overhead_s: float
    bandwidth_bps: float
    points: Sequence[tuple[int, float]] = field(default_factory=tuple)  # (bytes, latency s), past the knee

    def rate_at(self, size: int) -> float:
        """Streaming bytes/s at ``size``: the measured points' rate interpolated in log size,
        else the fit's."""
        rates = sorted(
            (s, s / (t - self.overhead_s)) for s, t in self.points if t > self.overhead_s and s > 0
        )
        if not rates or size < rates[0][0] or size > rates[-1][0]:
            return self.bandwidth_bps
        sizes = [s for s, _ in rates]
        i = bisect_left(sizes, size)
        if sizes[i] == size:
            return rates[i][1]
        (s0, r0), (s1, r1) = rates[i - 1], rates[i]
        w = (math.log(size) - math.log(s0)) / (math.log(s1) - math.log(s0))
        return r0 + w * (r1 - r0)


def seconds_per_token(dispatch_bytes: Sequence[int], curve: SweepCurve) -> float:
    """Sum over dispatches of overhead + bytes / rate at that size (a negative fitted
    overhead counts as 0)."""
    if not dispatch_bytes:
        raise ValueError("a token with no dispatches")
    if curve.bandwidth_bps <= 0:
        raise ValueError("a sweep fit without a positive bandwidth")
    overhead = max(0.0, curve.overhead_s)
    return sum(overhead + size / curve.rate_at(size) for size in dispatch_bytes)
