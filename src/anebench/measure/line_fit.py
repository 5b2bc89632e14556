"""The line a sweep fits past the cache knee, and the gates it must pass (FIT_GATES).

``latency = overhead + bytes / bandwidth`` by Theil-Sen (median of pairwise slopes, then the median
intercept): it ignores up to ~29% of wild points, so one outlier cannot move it, unlike least squares.
Sizes measured in interleaved rounds are fitted round by round and combined (``fit_by_rounds``).
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import UserError
from ..model import GB, MiB, gbps, median

MIN_FIT_POINTS = 3
MIN_R_SQUARED = 0.9
AGREEMENT_SIZES = 2  # the largest sizes the fitted line must agree with, each within its own interval
AGREEMENT_FLOOR = 0.03  # an interval narrower than +-3% counts as +-3% (three repetitions can agree closely)
ROUND_SCATTER_FACTOR = 3  # a round's single points: held to 3x the sweep's measured single-point scatter
MAD_TO_SIGMA = 1.4826  # a normal scatter's standard deviation over its median absolute deviation
BELOW_RESOLUTION = "below resolution"
FIT_GATES = (
    f"a fit is reported only when it passes every gate: at least {MIN_FIT_POINTS} sizes past the knee; "
    f"R² >= {MIN_R_SQUARED}; bandwidth not above the physical bound (the chip catalog's memory bandwidth, "
    "or where the catalog has none, the cache-resident peak of the same sweep when it shows one: a size "
    "below the knee faster than the largest size); "
    "overhead not negative beyond two standard errors; the fitted line agrees with the directly measured "
    f"GB/s of the {AGREEMENT_SIZES} largest sizes within their between-run intervals (at least "
    f"+-{AGREEMENT_FLOOR:.0%}), and none of them reads faster than the fitted bandwidth (impossible "
    "with a non-negative overhead), so a line steeper or shallower than its own largest points is "
    "refused. Sizes measured in interleaved rounds (each round one pass over every size, in one host "
    "phase) are fitted round by round, each round through these gates, its points (one repetition each) "
    f"held to {ROUND_SCATTER_FACTOR}x the sweep's single-repetition scatter (each round's common phase "
    f"factor removed; at least +-{AGREEMENT_FLOOR:.0%}); "
    "the fit is the median line of the rounds that pass, a majority of them needed, and that line passes "
    "the gates again against every size's pooled repetitions. Sizes measured one after the other have "
    "back-to-back repetitions, blind to a host phase change between sizes, so each largest size is held to "
    f"at least {ROUND_SCATTER_FACTOR} robust standard deviations of the sizes' scatter about the line "
    f"({MAD_TO_SIGMA} x the median absolute relative residual). Otherwise: 'fit failed: "
    "<reason>', no bandwidth and no overhead. A call cannot take negative time: a negative free intercept "
    "within two standard errors of zero is the bound itself, so the line is refitted through zero overhead "
    f"and the overhead reported as '{BELOW_RESOLUTION}', never as a number"
)


@dataclass(frozen=True)
class LineFit:
    """``latency_s = overhead_s + bytes / bandwidth_bps`` fitted by Theil-Sen."""

    overhead_s: float
    bandwidth_bps: float
    r_squared: float
    median_abs_rel_residual: float
    max_abs_rel_residual: float
    points: int
    method: str = "Theil-Sen (median of pairwise slopes, median intercept)"
    overhead_se_s: float | None = None  # standard error of the intercept, from the residuals

    @property
    def overhead_below_resolution(self) -> bool:
        """The overhead is at the bound: the free intercept was negative within error (refitted at 0)."""
        return self.overhead_s <= 0

    @property
    def overhead_resolved(self) -> bool:
        """The overhead is told apart from zero: positive and more than two standard errors."""
        return self.overhead_se_s is not None and self.overhead_s > 2 * self.overhead_se_s

    def predict(self, size_bytes: float | np.ndarray) -> float | np.ndarray:
        return self.overhead_s + np.asarray(size_bytes, dtype=float) / self.bandwidth_bps

    def as_dict(self) -> dict:
        return asdict(self)


def theil_sen(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope): slope = median of pairwise slopes, intercept = median of y - slope*x."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    pairs = [(i, j) for i, j in itertools.combinations(range(len(x)), 2) if x[j] != x[i]]
    if not pairs:
        raise ValueError("Theil-Sen needs at least two distinct x values")
    i, j = np.array(pairs).T
    slope = median((y[j] - y[i]) / (x[j] - x[i]))
    intercept = median(y - slope * x)
    return intercept, slope


def fit_latency(sizes_bytes: list[int], latencies_s: list[float]) -> LineFit:
    if len(sizes_bytes) < MIN_FIT_POINTS:
        raise UserError(
            f"the sweep has {len(sizes_bytes)} size(s) past the cache knee; the fit needs at least "
            f"{MIN_FIT_POINTS}: sweep up to a larger size or with more points"
        )
    x = np.asarray(sizes_bytes, dtype=float)
    y = np.asarray(latencies_s, dtype=float)
    intercept, slope = theil_sen(x, y)
    if slope <= 0:
        raise UserError("latency does not grow with size past the knee: the sweep cannot give a bandwidth "
                        "(sizes too small for this device? sweep up to a larger size)")
    predicted = intercept + slope * x
    residual = y - predicted
    total = float(np.sum((y - y.mean()) ** 2))
    r_squared = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
    relative = np.abs(residual) / y
    # The intercept sits far left of the fitted sizes, so its error grows with (mean size / spread)^2.
    spread = float(np.sum((x - x.mean()) ** 2))
    sigma = float(np.sqrt(np.sum(residual**2) / (len(x) - 2))) if len(x) > 2 else float("nan")
    overhead_se = sigma * float(np.sqrt(1 / len(x) + x.mean() ** 2 / spread)) if spread > 0 else float("nan")
    method = LineFit.method
    if intercept < 0 <= intercept + 2 * overhead_se:
        # A call cannot take negative time: a free intercept below zero but within two standard errors of
        # it is the bound itself, so the line is refitted through zero overhead (its slope the median of
        # latency / bytes), the constrained estimate. One beyond two standard errors is left for the
        # gate to refuse. The overhead is then reported as below resolution, never as a number.
        intercept, slope = 0.0, median(y / x)
        predicted = slope * x
        residual = y - predicted
        r_squared = 1.0 - float(np.sum(residual**2)) / total if total > 0 else 1.0
        relative = np.abs(residual) / y
        method = (f"{method}; the free intercept was negative within two standard errors, so the line "
                  "was refitted through zero overhead (slope: the median of latency / bytes)")
    return LineFit(
        overhead_s=intercept,
        bandwidth_bps=1.0 / slope,
        r_squared=r_squared,
        median_abs_rel_residual=median(relative),
        max_abs_rel_residual=float(np.max(relative)),
        points=len(x),
        method=method,
        overhead_se_s=overhead_se if np.isfinite(overhead_se) else None,
    )


@dataclass(frozen=True)
class MeasuredPoint:
    """One size as measured directly: its median latency and that latency's between-run 95% interval."""

    size_bytes: int
    latency_s: float
    low_s: float | None = None  # None: no interval (one repetition): the floor alone applies
    high_s: float | None = None


def disagreements(fit: LineFit, points: list[MeasuredPoint], floor: float = AGREEMENT_FLOOR) -> list[str]:
    """The largest sizes the fitted line misses: its latency there outside the size's own interval (at
    least +-``floor``), or the size read directly faster than the fitted bandwidth (impossible with
    a non-negative overhead). A line steeper or shallower than its own largest points describes no size."""
    failures = []
    for point in sorted(points, key=lambda p: p.size_bytes)[-AGREEMENT_SIZES:]:
        low_s = min(point.low_s or point.latency_s, point.latency_s * (1 - floor))
        high_s = max(point.high_s or point.latency_s, point.latency_s * (1 + floor))
        slowest, fastest = gbps(point.size_bytes, high_s), gbps(point.size_bytes, low_s)
        direct = f"{gbps(point.size_bytes, point.latency_s):.1f} GB/s [{slowest:.1f}-{fastest:.1f}]"
        where = f"{point.size_bytes / MiB:.0f} MiB"
        predicted_s = float(fit.predict(point.size_bytes))
        if not low_s <= predicted_s <= high_s:
            said = f"{gbps(point.size_bytes, predicted_s):.1f} GB/s" if predicted_s > 0 else "< 0 s"
            failures.append(f"the fitted line disagrees with its own largest sizes: at {where} it gives "
                            f"{said}, measured directly {direct}")
        elif slowest > fit.bandwidth_bps / GB:
            failures.append(f"at {where} the weights read directly at {direct}, faster than the fitted "
                            f"bandwidth {fit.bandwidth_bps / GB:.1f} GB/s")
    return failures


def fit_failures(fit: LineFit, bound_gbps: float | None, bound_what: str = "",
                 points: list[MeasuredPoint] | None = None, floor: float = AGREEMENT_FLOOR) -> list[str]:
    """Why ``fit`` fails the stated gates (FIT_GATES); empty when it passes."""
    failures = []
    if fit.points < MIN_FIT_POINTS:
        failures.append(f"{fit.points} size(s) past the knee, the gate needs {MIN_FIT_POINTS}")
    if not fit.r_squared >= MIN_R_SQUARED:
        failures.append(f"R² {fit.r_squared:.2f} is below {MIN_R_SQUARED}: latency is not a line in bytes "
                        "past the knee (still cache-resident? raise --max-mb)")
    if bound_gbps is not None and fit.bandwidth_bps / GB > bound_gbps:
        failures.append(f"the fitted bandwidth is above the physical bound of {bound_gbps:.1f} GB/s "
                        f"({bound_what})")
    error = fit.overhead_se_s if fit.overhead_se_s is not None else 0.0
    if fit.overhead_s + 2 * error < 0:
        failures.append("the fitted overhead is negative beyond two standard errors")
    if points:
        failures += disagreements(fit, points, floor)
    return failures


def round_scatter(rounds_s: list[list[float]]) -> float:
    """The sweep's single-repetition scatter, as a fraction: each size's latency in each round over that
    size's median across rounds, divided by the round's common phase factor (the median of those ratios
    over the sizes: a round in a slower host phase moves every size alike, which is not scatter); the
    scatter is the median over sizes of each size's largest deviation from 1."""
    latencies = np.asarray(rounds_s, dtype=float)
    ratio = latencies / np.median(latencies, axis=1, keepdims=True)
    phased = ratio / np.median(ratio, axis=0, keepdims=True)
    return float(np.median(np.max(np.abs(phased - 1), axis=1)))


def sequential_tolerance(fit: LineFit) -> float:
    """How far the largest sizes may sit from the line when the sizes were measured one after the other:
    each size's repetitions ran back to back, so its interval misses a host phase change between sizes
    (measured here: sizes past the knee at 31.8-33.7 GB/s, repetitions within +-1%). The scatter between
    sizes is read off the fit's residuals (median absolute, scaled to a standard deviation); a line bent
    away from its largest sizes leaves the other residuals small, so it still fails."""
    return max(AGREEMENT_FLOOR, ROUND_SCATTER_FACTOR * MAD_TO_SIGMA * fit.median_abs_rel_residual)


def round_failures(fit: LineFit, bound_gbps: float | None, bound_what: str, sizes: list[int],
                   latencies_s: list[float], tolerance: float = AGREEMENT_FLOOR) -> list[str]:
    """Why one round's fit fails the gates: its points have one repetition each and no interval of their
    own, so the agreement gate holds the line to +-``tolerance`` of the round's own largest sizes."""
    points = [MeasuredPoint(s, t) for s, t in zip(sizes, latencies_s)]
    return fit_failures(fit, bound_gbps, bound_what, points, max(tolerance, AGREEMENT_FLOOR))


def combine_round_fits(fits: list[LineFit], rounds: int) -> LineFit:
    """The median line of the rounds that passed: the median bandwidth and the median overhead; its
    quality figures are the worst round's, its overhead error the largest."""
    errors = [f.overhead_se_s for f in fits if f.overhead_se_s is not None]
    return LineFit(
        overhead_s=median([f.overhead_s for f in fits]),
        bandwidth_bps=median([f.bandwidth_bps for f in fits]),
        r_squared=min(f.r_squared for f in fits),
        median_abs_rel_residual=max(f.median_abs_rel_residual for f in fits),
        max_abs_rel_residual=max(f.max_abs_rel_residual for f in fits),
        points=fits[0].points,
        method=f"Theil-Sen in each of the {rounds} interleaved rounds (median of pairwise slopes, median "
               f"intercept), then the median of the {len(fits)} round(s) that passed the gates",
        overhead_se_s=max(errors) if len(errors) == len(fits) else None,
    )


def fit_by_rounds(sizes: list[int], rounds_s: list[list[float]], bound_gbps: float | None,
                  bound_what: str) -> tuple[LineFit | None, list[str], str]:
    """(combined fit or None, why it failed, a note with every round's bandwidth) from the sizes past the
    knee measured in interleaved rounds: ``rounds_s[k][r]`` is size k's latency in round r.

    A round is one pass over every size, so its points share one host phase; a phase change between
    rounds moves a whole round's line, not some of its sizes. Each round is fitted and gated alone, and
    the median of the rounds that pass is the fit; fewer than a majority passing fails the fit with each
    failed round's reason (a genuinely non-linear device fails in every round). A round's points have
    one repetition each, so the agreement gate holds them to ROUND_SCATTER_FACTOR times the scatter the
    sweep itself shows between rounds (round_scatter), at least the floor: measured single repetitions
    here scatter 5-10% within a round, and a fixed +-3% failed most rounds of sound sweeps."""
    count = len(rounds_s[0])
    tolerance = max(AGREEMENT_FLOOR, ROUND_SCATTER_FACTOR * round_scatter(rounds_s))
    fits: list[LineFit] = []
    failures: list[tuple[int, list[str]]] = []  # (round, its reasons)
    said: list[str] = []
    for r in range(count):
        latencies = [per_size[r] for per_size in rounds_s]
        try:
            fit = fit_latency(sizes, latencies)
        except UserError as exc:
            failures.append((r + 1, [str(exc)]))
            said.append("failed")
            continue
        why = round_failures(fit, bound_gbps, bound_what, sizes, latencies, tolerance)
        said.append(f"{fit.bandwidth_bps / GB:.1f} GB/s" + (" (failed)" if why else ""))
        if why:
            failures.append((r + 1, why))
        else:
            fits.append(fit)
    note = (f"fitted bandwidth per interleaved round: {', '.join(said)} (each round's largest sizes held to "
            f"+-{tolerance:.1%}: {ROUND_SCATTER_FACTOR}x the single-repetition scatter between rounds, at "
            f"least +-{AGREEMENT_FLOOR:.0%})")
    if 2 * len(fits) <= count:
        # the first failed round in full, the others by their first reason (the rounds repeat each other)
        parts = [f"round {r}: " + "; ".join(why if i == 0 else why[:1])
                 + (f" (and {len(why) - 1} more)" if i > 0 and len(why) > 1 else "")
                 for i, (r, why) in enumerate(failures)]
        return None, [f"{len(failures)} of {count} interleaved rounds failed the gates (the fit needs a "
                      "majority): " + "; ".join(parts)], note
    return combine_round_fits(fits, count), [], note
