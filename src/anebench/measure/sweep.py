"""Size sweep analysis: log-spaced sizes, the cache knee, and a robust fit of latency against bytes.

``latency = overhead + bytes / bandwidth`` holds only once the weights stream from memory, so the fit
(measure/line_fit.py: Theil-Sen and its gates, FIT_GATES) uses the sizes past the cache knee.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UserError, setting
from ..model import GB, MiB, gbps
from ..system.bounds import CACHE_FACTOR
from .line_fit import (
    AGREEMENT_FLOOR,
    BELOW_RESOLUTION,
    FIT_GATES,
    MIN_FIT_POINTS,
    ROUND_SCATTER_FACTOR,
    LineFit,
    MeasuredPoint,
    fit_by_rounds,
    fit_failures,
    fit_latency,
    sequential_tolerance,
)

PLATEAU_TOLERANCE = 0.25  # unknown cache: the knee is where GB/s settles within 25% of the largest size's


def log_sizes(min_bytes: int, max_bytes: int, points: int) -> list[int]:
    """``points`` sizes evenly spaced in log space from ``min_bytes`` to ``max_bytes``, both included."""
    if points < 2:
        raise UserError(f"{setting('points')} {points}: a sweep needs at least 2 sizes")
    if not 0 < min_bytes < max_bytes:
        raise UserError(f"sweep sizes: {setting('min_mb')} ({min_bytes / MiB:g}) must be positive and below "
                        f"{setting('max_mb')} ({max_bytes / MiB:g})")
    return sorted({round(s) for s in np.geomspace(min_bytes, max_bytes, points)})


def sweep_sizes(min_bytes: int, max_bytes: int, points: int, fit_from: int | None = None,
                min_fit_points: int = 4) -> list[int]:
    """Log-spaced sizes, topped up with sizes past ``fit_from`` so the fit has ``min_fit_points``."""
    sizes = log_sizes(min_bytes, max_bytes, points)
    if fit_from is not None and fit_from < max_bytes:
        past = [s for s in sizes if s >= fit_from]
        if len(past) < min_fit_points:  # the sizes past the knee: evenly log-spaced, none crowded
            extra = np.geomspace(max(fit_from, min_bytes), max_bytes, min_fit_points)
            sizes = sorted({s for s in sizes if s < fit_from} | {round(s) for s in extra})
    return sizes


@dataclass(frozen=True)
class Knee:
    index: int  # first point used by the fit
    size_bytes: int
    rule: str


def find_knee(sizes: list[int], gbps: list[float], cache_bytes: int | None) -> Knee:
    """Where the cache stops helping: the first size the streaming fit may use.

    Known cache: the first size >= 4x the cache (STREAM's rule). Unknown cache: from the data, the first
    size past the GB/s peak from which every larger size is within 25% of the largest size's GB/s; with
    no peak before the end (no cache hump visible) every size is used.
    """
    if len(sizes) != len(gbps) or not sizes:
        raise ValueError("sizes and gbps must be non-empty and of equal length")
    if cache_bytes:
        threshold = CACHE_FACTOR * cache_bytes
        for i, size in enumerate(sizes):
            if size >= threshold:
                return Knee(i, size, f"first size >= {CACHE_FACTOR}x the last-level cache "
                                     f"({cache_bytes / MiB:.1f} MiB), STREAM's rule")
        return Knee(len(sizes), threshold, f"no size reaches {CACHE_FACTOR}x the last-level cache "
                                           f"({cache_bytes / MiB:.1f} MiB)")
    rates = np.asarray(gbps, dtype=float)
    tail = rates[-1]
    peak = int(np.argmax(rates))
    settled = np.abs(rates - tail) <= PLATEAU_TOLERANCE * tail
    rule = (f"cache size unknown: first size past the GB/s peak from which every larger size is within "
            f"{PLATEAU_TOLERANCE:.0%} of the largest size's GB/s")
    if peak == len(rates) - 1 or rates[peak] <= (1 + PLATEAU_TOLERANCE) * tail:
        return Knee(0, sizes[0], rule + " (no cache hump: every size used)")
    index = next((i for i in range(peak + 1, len(rates)) if settled[i:].all()), len(rates) - 1)
    if len(rates) - index < MIN_FIT_POINTS <= len(rates):
        index = len(rates) - MIN_FIT_POINTS
        rule += f" (moved back to leave the fit {MIN_FIT_POINTS} sizes)"
    return Knee(index, sizes[index], rule)


CACHE_BOUND_WHAT = "the cache-resident peak measured below the knee in this sweep"


def cache_bound(sizes: list[int], gbps: list[float], knee_index: int) -> tuple[float, str] | None:
    """The cache-resident peak as a bound on the streaming rate, where the sweep shows a cache hump (a size
    below the knee faster than the largest): without one the small sizes are overhead-bound, not cached."""
    if not 0 < knee_index < len(sizes):
        return None
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    peak = max(gbps[i] for i in order[:knee_index])
    return (peak, CACHE_BOUND_WHAT) if peak > gbps[order[-1]] else None


@dataclass(frozen=True)
class SweepAnalysis:
    """The knee and the cache-resident peak (measured); the fit only when it passed FIT_GATES."""

    knee: Knee
    fit: LineFit | None  # None: the fit failed (fit_error says why)
    cache_peak_gbps: float
    cache_peak_bytes: int
    notes: list[str]
    fit_error: str | None = None
    gates: str = FIT_GATES

    def as_dict(self) -> dict:
        base = {
            "knee_bytes": self.knee.size_bytes,
            "knee_rule": self.knee.rule,
            "fit": None,
            "fit_error": self.fit_error,
            "gates": self.gates,
            "cache_peak_gbps": self.cache_peak_gbps,
            "cache_peak_bytes": self.cache_peak_bytes,
            "notes": list(self.notes),
        }
        if self.fit is None:
            return base
        return base | {
            "fit": self.fit.as_dict(),
            # a negative overhead within error is below resolution: no figure (the line was refitted at 0)
            "overhead_us": None if self.fit.overhead_below_resolution else self.fit.overhead_s * 1e6,
            "overhead_below_resolution": self.fit.overhead_below_resolution,
            "overhead_se_us": self.fit.overhead_se_s * 1e6 if self.fit.overhead_se_s is not None else None,
            "overhead_resolved": self.fit.overhead_resolved,
            "bandwidth_gbps": self.fit.bandwidth_bps / GB,
        }


def analyse_sweep(sizes: list[int], latencies_s: list[float], cache_bytes: int | None,
                  bound: tuple[float, str] | None = None,
                  intervals: list[tuple[float, float] | None] | None = None,
                  rounds_s: list[list[float]] | None = None) -> SweepAnalysis:
    """Knee, the fit on the sizes past it (kept only if it passes FIT_GATES), and the highest GB/s seen
    below it (the cache-resident peak). ``bound``: (GB/s, what) from the chip catalog, where known.
    ``intervals``: each size's between-run interval on latency (None: one repetition). ``rounds_s``: each
    size's latency in every interleaved round (the sizes measured in rounds): the fit is then made per
    round and combined (fit_by_rounds), and the combined line must still agree with the largest sizes."""
    order = np.argsort(sizes)
    sizes = [int(sizes[i]) for i in order]
    latencies_s = [float(latencies_s[i]) for i in order]
    spans = [intervals[i] for i in order] if intervals is not None else [None] * len(sizes)
    by_round = [list(rounds_s[i]) for i in order] if rounds_s is not None and len(rounds_s[0]) > 1 else None
    rates = [gbps(s, t) for s, t in zip(sizes, latencies_s)]
    knee = find_knee(sizes, rates, cache_bytes)
    below = range(knee.index) if knee.index > 0 else range(len(sizes))
    peak = max(below, key=lambda i: rates[i])
    notes = []
    if knee.index == 0:
        notes.append(
            "no size below the knee: the cache-resident peak is the best GB/s of the streaming sizes"
        )
    bound = bound or cache_bound(sizes, rates, knee.index)
    bound_gbps, bound_what = bound or (None, "")
    fit: LineFit | None
    if by_round is not None and len(sizes) - knee.index >= MIN_FIT_POINTS:
        fit, round_errors, note = fit_by_rounds(sizes[knee.index:], by_round[knee.index:], bound_gbps,
                                                bound_what)
        notes.append(note)
        if fit is None:
            return SweepAnalysis(knee, None, rates[peak], sizes[peak], notes, "; ".join(round_errors))
    else:
        try:
            fit = fit_latency(sizes[knee.index:], latencies_s[knee.index:])
        except UserError as exc:
            return SweepAnalysis(knee, None, rates[peak], sizes[peak], notes, str(exc))
    assert fit is not None
    points = [MeasuredPoint(s, t, *(span or (None, None)))
              for s, t, span in zip(sizes[knee.index:], latencies_s[knee.index:], spans[knee.index:])]
    tolerance = AGREEMENT_FLOOR
    if by_round is None:  # one after the other: held to the sizes' own scatter, and the note says how far
        tolerance = sequential_tolerance(fit)
        notes.append(f"the largest sizes held to +-{tolerance:.1%} of the line ({ROUND_SCATTER_FACTOR} "
                     "robust standard deviations of the sizes' scatter about it, at least "
                     f"+-{AGREEMENT_FLOOR:.0%}): each size's repetitions ran back to back")
    failures = fit_failures(fit, bound_gbps, bound_what, points, tolerance)
    if failures:
        return SweepAnalysis(knee, None, rates[peak], sizes[peak], notes, "; ".join(failures))
    if fit.overhead_below_resolution:  # within two standard errors of zero (else a gate failed): no number
        notes.insert(0, f"fitted overhead {BELOW_RESOLUTION}: the free fit's was negative, but within two "
                        "standard errors of zero, so the line was refitted through zero overhead; "
                        "`anebench latency` measures the dispatch cost")
    elif not fit.overhead_resolved:
        error = f" +- {2 * fit.overhead_se_s * 1e6:.0f} us" if fit.overhead_se_s is not None else ""
        notes.insert(0, f"fitted overhead not resolved ({fit.overhead_s * 1e6:.0f}{error}, two standard "
                        "errors): at these sizes it is below the timing noise; `anebench latency` measures "
                        "the dispatch cost")
    return SweepAnalysis(knee, fit, rates[peak], sizes[peak], notes)

