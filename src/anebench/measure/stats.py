"""Statistics of per-call latencies and pyperf-style warnings about unstable results."""

from __future__ import annotations

from ..model import RecordWarning, Summary, median, summary_fields
from ..system.bounds import CACHE_FACTOR

COV_LIMIT = 0.10
DRIFT_LIMIT = 0.05


def summarize(samples: list[float]) -> Summary:
    return Summary(**summary_fields(samples))


def stability_warnings(samples: list[float], summary: Summary) -> list[RecordWarning]:
    found = []
    if summary.n and summary.n < 10:
        found.append(RecordWarning(kind="few-samples",
                                   text=f"only {summary.n} samples: the confidence interval is wide"))
    if summary.mean and summary.stdev is not None:
        cov = summary.stdev / summary.mean
        if cov > COV_LIMIT:
            text = f"unstable: coefficient of variation {cov:.0%} > {COV_LIMIT:.0%}"
            found.append(RecordWarning(kind="unstable", text=text))
    if len(samples) >= 20:
        tenth = len(samples) // 10
        first, last = median(samples[:tenth]), median(samples[-tenth:])
        drift = (last - first) / first
        if abs(drift) > DRIFT_LIMIT:
            found.append(RecordWarning(
                kind="drift",
                text=f"drift: median of the last tenth of samples is {drift:+.0%} from the first tenth "
                "(thermal throttling, frequency scaling or background load?)",
            ))
    return found


def cache_warning(weight_bytes: int, llc_bytes: int | None) -> RecordWarning | None:
    if llc_bytes and weight_bytes < CACHE_FACTOR * llc_bytes:
        return RecordWarning(
            kind="cache-resident",
            text=f"cache-resident: weights ({weight_bytes / 1e6:.1f} MB) are smaller than {CACHE_FACTOR}x "
            f"the last-level cache ({llc_bytes / 1e6:.1f} MB); this is not a memory bandwidth",
        )
    return None
