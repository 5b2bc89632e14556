"""Verdicts from stated rules on the data, never from prose.

Concurrency: run N copies of a workload solo, then together from a common start.
scaling = combined GB/s / mean solo GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import fmean

INDEPENDENT_AT = 1.5
PARTIAL_AT = 1.1
CONCURRENCY_RULE = (
    f"scaling = combined GB/s / mean solo GB/s; >= {INDEPENDENT_AT} independent units, "
    f"{PARTIAL_AT}-{INDEPENDENT_AT} partial, < {PARTIAL_AT} shared ceiling"
)


INCONCLUSIVE = "inconclusive"
INCONCLUSIVE_RULE = (
    "copies that were threads of one process around a call that holds the GIL (Core ML's predict) never "
    "overlapped, so their verdict is 'inconclusive' whatever the scaling (the figures are kept); a run "
    "with each copy in its own process (`anebench concurrent -e coreml -d ane`, processes by default) on "
    "an Ultra chip (two Neural Engines) or a Max chip would settle whether the copies share one ceiling"
)


@dataclass(frozen=True)
class ConcurrencyVerdict:
    scaling: float
    verdict: str  # "independent units" | "partial" | "shared ceiling" ("inconclusive": see INCONCLUSIVE_RULE)
    rule: str = CONCURRENCY_RULE


def concurrency_verdict(solo_gbps: list[float], combined_gbps: float) -> ConcurrencyVerdict:
    if not solo_gbps or min(solo_gbps) <= 0 or combined_gbps <= 0:
        raise ValueError("solo and combined throughputs must be positive")
    scaling = combined_gbps / fmean(solo_gbps)
    if scaling >= INDEPENDENT_AT:
        verdict = "independent units"
    elif scaling >= PARTIAL_AT:
        verdict = "partial"
    else:
        verdict = "shared ceiling"
    return ConcurrencyVerdict(scaling, verdict)
