"""Statistics of per-call latencies and pyperf-style warnings about unstable results."""

from __future__ import annotations

import math

import numpy as np

from ..model import Summary

COV_LIMIT = 0.10
DRIFT_LIMIT = 0.05
CACHE_FACTOR = 4


def median_ci95(sorted_samples: np.ndarray) -> tuple[float, float]:
    """Distribution-free 95% confidence interval of the median from order statistics."""
    n = len(sorted_samples)
    if n < 6:
        return float(sorted_samples[0]), float(sorted_samples[-1])
    half_width = 1.96 * math.sqrt(n) / 2
    lo = max(math.floor(n / 2 - half_width), 0)
    hi = min(math.ceil(n / 2 + half_width), n - 1)
    return float(sorted_samples[lo]), float(sorted_samples[hi])


def summarize(samples: list[float]) -> Summary:
    data = np.sort(np.asarray(samples, dtype=np.float64))
    if data.size == 0:
        raise ValueError("no samples to summarize")
    low, high = median_ci95(data)
    p5, q1, median, q3, p95 = np.percentile(data, [5, 25, 50, 75, 95])
    return Summary(
        n=int(data.size),
        median=float(median),
        ci95_low=low,
        ci95_high=high,
        mean=float(data.mean()),
        stdev=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        min=float(data[0]),
        max=float(data[-1]),
        p5=float(p5),
        p95=float(p95),
        iqr=float(q3 - q1),
    )


def stability_warnings(samples: list[float], summary: Summary) -> list[str]:
    found = []
    if summary.n and summary.n < 10:
        found.append(f"only {summary.n} samples: the confidence interval is wide")
    if summary.mean and summary.stdev is not None:
        cov = summary.stdev / summary.mean
        if cov > COV_LIMIT:
            found.append(f"unstable: coefficient of variation {cov:.0%} > {COV_LIMIT:.0%}")
    if len(samples) >= 20:
        tenth = len(samples) // 10
        first, last = np.median(samples[:tenth]), np.median(samples[-tenth:])
        drift = (last - first) / first
        if abs(drift) > DRIFT_LIMIT:
            found.append(
                f"drift: median of the last tenth of samples is {drift:+.0%} from the first tenth "
                "(thermal throttling, frequency scaling or background load?)"
            )
    return found


def cache_warning(weight_bytes: int, llc_bytes: int | None) -> str | None:
    if llc_bytes and weight_bytes < CACHE_FACTOR * llc_bytes:
        return (
            f"cache-resident: weights ({weight_bytes / 1e6:.1f} MB) are smaller than {CACHE_FACTOR}x the "
            f"last-level cache ({llc_bytes / 1e6:.1f} MB); this is not a memory bandwidth"
        )
    return None
