"""Concurrency arithmetic: the copies' common window, the calls inside it, combined GB/s and the verdict.

Pure functions of what the copies measured; running the copies is orchestration's job.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MeasurementError, setting
from ..model import ResultRecord, gbps
from .verdicts import ConcurrencyVerdict, concurrency_verdict

MIN_CALLS_IN_WINDOW = 5

COMBINED_DEFINITION = ("combined GB/s = the bytes all copies read inside the common window (every copy's "
                       "weight bytes x its calls in the window, edge calls counted by the fraction inside) / "
                       "the window's length")
TOGETHER_DEFINITION = ("together GB/s = one copy's weight bytes / the median of its own calls in the window; "
                       "combined is below the sum of the together figures when the copies spent time between "
                       "calls (waiting for a core, or for each other)")


def common_window(bounds: list[int]) -> tuple[int, int]:
    """(latest first start, earliest last end) from [start0, end0, start1, end1, ...]."""
    starts, ends = bounds[0::2], bounds[1::2]
    return max(starts), min(ends)


def describe_bounds(bounds: list[int], origin_ns: int | None = None) -> str:
    """Each copy's first call start and last call end, in ms from ``origin_ns`` (default: the earliest)."""
    origin = min(bounds[0::2]) if origin_ns is None else origin_ns
    return ", ".join(
        f"copy {i}: {(bounds[2 * i] - origin) / 1e6:.3f}-{(bounds[2 * i + 1] - origin) / 1e6:.3f} ms"
        for i in range(len(bounds) // 2)
    )


def checked_window(bounds: list[int], origin_ns: int | None = None) -> tuple[int, int]:
    """The common window, or a refusal that names every copy's bounds (so the cause can be seen)."""
    lo, hi = common_window(bounds)
    if hi <= lo:
        raise MeasurementError(
            "no common window: the copies never all ran at the same time (the OS kept one off the CPU?); "
            f"first call start - last call end from the common start: {describe_bounds(bounds, origin_ns)}; "
            f"use more {setting('runs')}")
    return lo, hi


def calls_in_window(calls: list[tuple[int, int]], window: tuple[int, int]) -> tuple[list[int], float]:
    """Indices of the calls wholly inside the window, and the (fractional) number of calls in it."""
    lo, hi = window
    inside, fraction = [], 0.0
    for i, (t0, t1) in enumerate(calls):
        overlap = min(t1, hi) - max(t0, lo)
        if overlap <= 0:
            continue
        if t0 >= lo and t1 <= hi:
            inside.append(i)
        fraction += overlap / max(t1 - t0, 1)
    return inside, fraction


def busy_share(calls: list[tuple[int, int]], window: tuple[int, int]) -> float:
    """The share of the window this copy spent inside its calls (the rest it spent between calls:
    descheduled, or in the harness). Independent units need every copy busy nearly all the window."""
    lo, hi = window
    if hi <= lo:
        return 0.0
    busy = sum(max(min(t1, hi) - max(t0, lo), 0) for t0, t1 in calls)
    return min(busy / (hi - lo), 1.0)


@dataclass(frozen=True)
class ConcurrencyAnalysis:
    solo_gbps: list[float]
    together_gbps: list[float]
    combined_gbps: float
    verdict: ConcurrencyVerdict
    window_s: float | None = None

    def as_dict(self) -> dict:
        return {
            "solo_gbps": self.solo_gbps,
            "together_gbps": self.together_gbps,
            "combined_gbps": self.combined_gbps,
            "sum_of_copies_gbps": sum(self.together_gbps),
            "scaling": self.verdict.scaling,
            "verdict": self.verdict.verdict,
            "rule": self.verdict.rule,
            "combined_definition": COMBINED_DEFINITION,
            "together_definition": TOGETHER_DEFINITION,
            "window_s": self.window_s,
        }


def combined_gbps(together: list[ResultRecord], window_s: float, calls: list[float] | None = None) -> float:
    if window_s <= 0:
        raise MeasurementError("no common window: the copies never ran at the same time (the OS kept one off "
                               f"the CPU?); use more {setting('runs')}")
    calls = calls if calls is not None else [len(r.samples_s) for r in together]
    moved = sum(r.workload.weight_bytes * n for r, n in zip(together, calls))
    return gbps(moved, window_s)


def analyse_concurrency(solo: list[ResultRecord], together: list[ResultRecord], window_s: float,
                        calls_in_window: list[float] | None = None) -> ConcurrencyAnalysis:
    """Per-copy GB/s solo and together, combined GB/s, scaling and the verdict by the stated rule."""
    solo_gbps = [r.gbps for r in solo if r.gbps is not None]
    combined = combined_gbps(together, window_s, calls_in_window)
    return ConcurrencyAnalysis(solo_gbps, [r.gbps for r in together if r.gbps is not None], combined,
                               concurrency_verdict(solo_gbps, combined), window_s)
