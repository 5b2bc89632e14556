"""The statistics a measured record derives from its raw samples: one median, one summary, one GB/s.

They live with the model because a measured record's figures are derived, never trusted from a file:
the record recomputes them from its samples whenever it is built or loaded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

GB = 1e9  # every GB/s in anebench is 1e9 bytes per second
MB = 1e6


def median(values: Sequence[float]) -> float:
    """The interpolated median: the one statistic every figure of a run uses."""
    if len(values) == 0:
        raise ValueError("no values to take the median of")
    return float(np.median(np.asarray(values, dtype=np.float64)))


def gbps(weight_bytes: float, seconds: float) -> float:
    """Bytes read per call / seconds per call, in GB/s (1 GB = 1e9 bytes)."""
    return weight_bytes / seconds / GB


def median_ci95(sorted_samples: np.ndarray) -> tuple[float, float]:
    """Distribution-free 95% confidence interval of the median from order statistics."""
    n = len(sorted_samples)
    if n < 6:
        return float(sorted_samples[0]), float(sorted_samples[-1])
    half_width = 1.96 * math.sqrt(n) / 2
    lo = max(math.floor(n / 2 - half_width), 0)
    hi = min(math.ceil(n / 2 + half_width), n - 1)
    return float(sorted_samples[lo]), float(sorted_samples[hi])


def summary_fields(samples: Sequence[float]) -> dict[str, float | int]:
    """Median with its 95% CI, mean, stdev, min, max, p5, p95 and IQR of ``samples``."""
    data = np.sort(np.asarray(samples, dtype=np.float64))
    if data.size == 0:
        raise ValueError("no samples to summarize")
    low, high = median_ci95(data)
    p5, q1, mid, q3, p95 = np.percentile(data, [5, 25, 50, 75, 95])
    return {
        "n": int(data.size),
        "median": float(mid),
        "ci95_low": low,
        "ci95_high": high,
        "mean": float(data.mean()),
        "stdev": float(data.std(ddof=1)) if data.size > 1 else 0.0,
        "min": float(data[0]),
        "max": float(data[-1]),
        "p5": float(p5),
        "p95": float(p95),
        "iqr": float(q3 - q1),
    }
