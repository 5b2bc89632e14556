"""The statistics a measured record derives from its raw samples: one median, one summary, one GB/s.

They live with the model because a measured record's figures are derived, never trusted from a file:
the record recomputes them from its samples whenever it is built or loaded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TypedDict

import numpy as np

GB = 1e9  # every GB/s in anebench is 1e9 bytes per second
MB = 1e6
MiB = 1024**2  # sizes a user gives (--min-mb, --max-mb) and input limits


def median(values: Sequence[float] | np.ndarray) -> float:
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


class SummaryFields(TypedDict):
    """The fields of ``record.Summary`` that ``summary_fields`` derives."""

    n: int
    median: float
    ci95_low: float
    ci95_high: float
    mean: float
    stdev: float
    min: float
    max: float
    p5: float
    p95: float
    iqr: float


def summary_fields(samples: Sequence[float]) -> SummaryFields:
    """Median with its 95% CI, mean, stdev, min, max, p5, p95 and IQR of ``samples``."""
    data = np.sort(np.asarray(samples, dtype=np.float64))
    if data.size == 0:
        raise ValueError("no samples to summarize")
    low, high = median_ci95(data)
    p5, q1, q3, p95 = np.percentile(data, [5, 25, 75, 95])
    return {
        "n": int(data.size),
        "median": median(data),  # the one median: what gbps(), the energy figures and the report use
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


# Two-sided 95% quantiles of Student's t for 1..30 degrees of freedom (beyond: a series in 1/df).
_T975 = (12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281, 2.2010, 2.1788,
         2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860, 2.0796, 2.0739, 2.0687, 2.0639,
         2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423)
_Z975 = 1.959964


def t975(df: float) -> float:
    """The 97.5% quantile of Student's t with ``df`` degrees of freedom (df may be fractional: Welch)."""
    if df < 1:
        raise ValueError("a t quantile needs at least one degree of freedom")
    if df <= len(_T975):
        low = math.floor(df)
        if low == df or low >= len(_T975):
            return _T975[low - 1]
        # between tabulated df the quantile is close to linear in 1/df
        frac = (1 / df - 1 / (low + 1)) / (1 / low - 1 / (low + 1))
        return _T975[low] + frac * (_T975[low - 1] - _T975[low])
    z = _Z975  # Cornish-Fisher expansion: error < 1e-4 beyond 30 df
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


BETWEEN_RUN_METHOD = (
    "between-run 95% interval: t-interval on the log of the R repetitions' medians "
    "(centre x exp(+-t(0.975, R-1) x sd(log medians) / sqrt(R))), centred on the median of all samples, "
    "and never narrower than the within-run CI of that median"
)


def log_spread(medians: Sequence[float]) -> float:
    """Sample standard deviation of the log of the repetitions' medians (0 for one repetition)."""
    if len(medians) < 2:
        return 0.0
    return float(np.std(np.log(np.asarray(medians, dtype=np.float64)), ddof=1))


# The widest interval kept: a factor of a million either side. Wider says nothing more (the figure is
# unreliable either way) and exp() of a wild spread would overflow, or round an end to 0 or infinity.
MAX_LOG_HALFWIDTH = math.log(1e6)


def between_run_interval(medians: Sequence[float], centre: float) -> tuple[float, float] | None:
    """The 95% between-run interval around ``centre`` from R >= 2 repetition medians; None for R = 1.

    Computed on logs so the interval is positive and a ratio of two results has one method (Welch, on
    the same log medians) for its own interval. Capped at MAX_LOG_HALFWIDTH, so it never overflows.
    """
    r = len(medians)
    if r < 2:
        return None
    half = t975(r - 1) * log_spread(medians) / math.sqrt(r)
    half = min(half, MAX_LOG_HALFWIDTH) if math.isfinite(half) else MAX_LOG_HALFWIDTH
    return centre * math.exp(-half), centre * math.exp(half)
