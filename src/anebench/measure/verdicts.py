"""Verdicts from stated rules on the data, never from prose.

Concurrency: run N copies of a workload solo, then together from a common start.
scaling = combined GB/s / mean solo GB/s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import fmean

from ..engines import PUBLISHED_ANE_ENGINE

INDEPENDENT_AT = 1.5
PARTIAL_AT = 1.1
CONCURRENCY_RULE = (
    f"scaling = combined GB/s / mean solo GB/s; >= {INDEPENDENT_AT} independent units, "
    f"{PARTIAL_AT}-{INDEPENDENT_AT} partial, < {PARTIAL_AT} shared ceiling; inconclusive where the "
    "scaling's 95% interval (the figures' between-run intervals combined; stated figures count as exact "
    "points) reaches across a threshold"
)
INCONCLUSIVE = "inconclusive"


INCONCLUSIVE = "inconclusive"
INCONCLUSIVE_RULE = (
    "copies that were threads of one process around a call that holds the GIL (the published engine's "
    "predict) never overlapped, so their verdict is 'inconclusive' whatever the scaling (the figures are "
    f"kept); a run with each copy in its own process (`anebench concurrent -e {PUBLISHED_ANE_ENGINE} -d "
    "ane`, processes by default) on "
    "an Ultra chip (two Neural Engines) or a Max chip would settle whether the copies share one ceiling"
)


@dataclass(frozen=True)
class ConcurrencyVerdict:
    scaling: float
    verdict: str  # "independent units" | "partial" | "shared ceiling" | "inconclusive"
    rule: str = CONCURRENCY_RULE
    low: float | None = None  # the scaling's 95% interval; None where no figure carries one
    high: float | None = None


def _class_of(scaling: float) -> str:
    if scaling >= INDEPENDENT_AT:
        return "independent units"
    if scaling >= PARTIAL_AT:
        return "partial"
    return "shared ceiling"


def scaling_halfwidth(solo_gbps: list[float], solo_halfwidths: list[float | None],
                      combined_halfwidth: float | None) -> float | None:
    """The scaling's relative 95% half-width: the mean solo's and the combined figure's between-run
    half-widths (relative) in quadrature. A figure without one (a stated point, one repetition) adds
    nothing; None when no figure has one."""
    known = [(g, h) for g, h in zip(solo_gbps, solo_halfwidths) if h is not None]
    if not known and combined_halfwidth is None:
        return None
    solo = math.sqrt(sum((g * h) ** 2 for g, h in known)) / sum(solo_gbps)
    return math.hypot(solo, combined_halfwidth or 0.0)


def concurrency_verdict(solo_gbps: list[float], combined_gbps: float,
                        halfwidth: float | None = None) -> ConcurrencyVerdict:
    """The class by the stated thresholds; with ``halfwidth`` (the scaling's relative 95% half-width,
    see scaling_halfwidth) a scaling whose interval reaches across a threshold is inconclusive."""
    if not solo_gbps or min(solo_gbps) <= 0 or combined_gbps <= 0:
        raise ValueError("solo and combined throughputs must be positive")
    if halfwidth is not None and (halfwidth < 0 or not math.isfinite(halfwidth)):
        raise ValueError("the scaling's half-width must be finite and >= 0")
    scaling = combined_gbps / fmean(solo_gbps)
    if halfwidth is None:
        return ConcurrencyVerdict(scaling, _class_of(scaling))
    low, high = scaling * math.exp(-halfwidth), scaling * math.exp(halfwidth)
    verdict = _class_of(low) if _class_of(low) == _class_of(high) else INCONCLUSIVE
    return ConcurrencyVerdict(scaling, verdict, low=low, high=high)
