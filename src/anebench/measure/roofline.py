"""Roofline analysis of a batch sweep: the same weights times B input vectors.

At small B every call streams the weights once and latency stays flat (memory-bound); once the FLOPs
of B vectors take longer than the read, latency grows in proportion to B (compute-bound). The ridge is
where it starts to grow, by a stated rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from ..model import gbps, median

GROWTH_AT_RIDGE = 1.2  # the ridge: latency stays above 1.2x the memory-bound baseline
# "Clearly compute-bound": over the last LINEAR_STREAK doublings latency grew nearly in proportion to B,
# a log-log slope >= 0.75 (x2.83 over two doublings). One slope over two steps, not a threshold per step,
# so one noisy point on a shared machine cannot hide it.
LINEAR_SLOPE = 0.75
LINEAR_STREAK = 2
RIDGE_RULE = (
    f"ridge = the first batch from which every median latency exceeds {GROWTH_AT_RIDGE}x the "
    f"baseline: the batch-1 latency, or after a kernel switch (batch 2 > {GROWTH_AT_RIDGE}x batch 1 and "
    f"batches 2-8 flat: their median <= {GROWTH_AT_RIDGE}x their minimum) that minimum; "
    f"compute-bound once latency grows as batch^{LINEAR_SLOPE} or faster over the last "
    f"{LINEAR_STREAK} doublings, from batch 2 on"
)
SWITCH_BATCHES = (2, 4, 8)
MIN_RIDGE_SAMPLES = 10  # timed calls per batch: fewer and one slow call moves a point's median
MONOTONE_FLOOR = 0.05  # a point without an interval (one repetition) counts as +-5%
RIDGE_GATES = ("a ridge is reported only when a measured batch after it confirms that latency stays above "
               "the baseline, the sweep reached compute-bound growth, the batch-1 GB/s is not above the "
               "chip catalog's memory bandwidth, latency never falls from one batch to the next beyond "
               f"the two points' between-run intervals (at least +-{MONOTONE_FLOOR:.0%}), every point's "
               f"warmup became steady, and every point has at least {MIN_RIDGE_SAMPLES} timed calls; "
               "otherwise 'ridge not found: <reason>' and no ridge")


def ridge_baseline(batches: list[int], latencies_s: list[float]) -> int:
    """Index of the latency the ridge is measured from: batch 1, or the flat level after a kernel switch.

    Matrix-vector (batch 1) and matrix-matrix (batch >= 2) are often different kernels; a jump at batch 2
    followed by flat batches 4 and 8 is that switch, not compute starting to dominate. The median test
    keeps one noisy point among batches 2-8 from hiding the switch.
    """
    if batches[:2] != [1, 2] or latencies_s[1] <= GROWTH_AT_RIDGE * latencies_s[0]:
        return 0
    after = [i for i, b in enumerate(batches) if b in SWITCH_BATCHES]
    if len(after) < 2:
        return 0
    level = [latencies_s[i] for i in after]
    if median(level) <= GROWTH_AT_RIDGE * min(level):
        return after[level.index(min(level))]
    return 0


def flops_per_call(vocab: int, hidden: int, batch: int) -> int:
    return 2 * vocab * hidden * batch


def bytes_per_call(weight_bytes: int, vocab: int, hidden: int, batch: int, element_bytes: int) -> int:
    """Weights once, plus the B input vectors read and the B output vectors written."""
    return weight_bytes + batch * (hidden + vocab) * element_bytes


def doubling_batches(max_batch: int) -> list[int]:
    batches, b = [], 1
    while b <= max_batch:
        batches.append(b)
        b *= 2
    return batches


def clearly_compute_bound(batches: list[int], latencies_s: list[float]) -> bool:
    """True once latency grew as batch**LINEAR_SLOPE or faster over the last LINEAR_STREAK doublings."""
    if len(latencies_s) < LINEAR_STREAK + 1:
        return False
    first = len(latencies_s) - 1 - LINEAR_STREAK
    # From batch 2 on: the matrix-vector to matrix-matrix kernel switch at batch 2 is not compute.
    if batches[first] < 2 or batches[-1] != batches[first] * 2**LINEAR_STREAK:
        return False
    return latencies_s[-1] / latencies_s[first] >= 2 ** (LINEAR_SLOPE * LINEAR_STREAK)


@dataclass(frozen=True)
class RooflinePoint:
    batch: int
    latency_s: float
    flops: int
    bytes: int
    flop_per_s: float
    bytes_per_flop: float
    gbps: float  # weight bytes per second


@dataclass(frozen=True)
class RooflineAnalysis:
    points: list[RooflinePoint]
    ridge_batch: int | None  # None: latency never grew past the rule within the batches measured
    baseline_batch: int  # the batch the ridge's growth is measured from (1, or 2-8 after a kernel switch)
    model_ridge_batch: float | None  # where the flat memory roof meets the compute slope
    peak_flop_per_s: float
    memory_gbps: float
    compute_bound: bool
    rule: str = RIDGE_RULE
    ridge_error: str | None = None  # why no ridge is reported (the gates failed), when none is

    def as_dict(self) -> dict:
        return {
            "ridge_batch": self.ridge_batch,
            "baseline_batch": self.baseline_batch,
            "model_ridge_batch": self.model_ridge_batch,
            "peak_flop_per_s": self.peak_flop_per_s,
            "peak_tflop_per_s": self.peak_flop_per_s / 1e12,
            "memory_gbps": self.memory_gbps,
            "compute_bound": self.compute_bound,
            "rule": self.rule,
            "ridge_error": self.ridge_error,
            "points": [asdict(p) for p in self.points],
        }


@dataclass(frozen=True)
class MeasuredBatch:
    """What the ridge's gates need of one measured batch beyond its median."""

    batch: int
    latency_s: float
    low_s: float | None = None  # its between-run interval; None: one repetition (MONOTONE_FLOOR)
    high_s: float | None = None
    warmup_steady: bool | None = True
    samples: int = MIN_RIDGE_SAMPLES


def point_failures(measured: list[MeasuredBatch]) -> list[str]:
    """The data gates: latency non-decreasing within the points' intervals, warmups steady, enough calls."""
    failures = []
    for a, b in zip(measured, measured[1:]):
        a_low = min(a.low_s or a.latency_s, a.latency_s * (1 - MONOTONE_FLOOR))
        b_high = max(b.high_s or b.latency_s, b.latency_s * (1 + MONOTONE_FLOOR))
        if b_high < a_low:
            failures.append(f"latency falls from batch {a.batch} ({a.latency_s * 1e3:.3g} ms) to batch "
                            f"{b.batch} ({b.latency_s * 1e3:.3g} ms) beyond their intervals: the points are "
                            "not steady enough to place a ridge")
    unsteady = [m.batch for m in measured if m.warmup_steady is False]
    if unsteady:
        failures.append(f"warmup never became steady at batch {', '.join(map(str, unsteady))}")
    few = [f"{m.batch} ({m.samples})" for m in measured if m.samples < MIN_RIDGE_SAMPLES]
    if few:
        failures.append(f"fewer than {MIN_RIDGE_SAMPLES} timed calls at batch {', '.join(few)} (raise --runs "
                        "or --time-budget)")
    return failures


def ridge_failures(batches: list[int], ridge: int | None, compute_bound: bool, memory_gbps: float,
                   bound: tuple[float, str] | None,
                   measured: list[MeasuredBatch] | None = None) -> list[str]:
    """Why a ridge cannot be reported (RIDGE_GATES); empty when it can."""
    data = point_failures(measured) if measured else []
    if ridge is None:
        return [(f"latency never stayed above {GROWTH_AT_RIDGE}x the baseline within batch {batches[-1]} "
                 "(raise --max-batch)"), *data]
    failures = data
    if ridge == batches[-1]:
        failures.append(f"batch {ridge} is the last measured: no batch after it confirms the growth")
    if not compute_bound:
        failures.append(f"compute-bound growth (batch^{LINEAR_SLOPE}) not reached by batch {batches[-1]} "
                        "(raise --max-batch)")
    if bound is not None and memory_gbps > bound[0]:
        failures.append(f"the batch-1 GB/s is above the physical bound of {bound[0]:.1f} GB/s ({bound[1]})")
    return failures


def analyse_roofline(batches: list[int], latencies_s: list[float], vocab: int, hidden: int,
                     weight_bytes: int, element_bytes: int,
                     physical: tuple[float, str] | None = None,
                     measured: list[MeasuredBatch] | None = None) -> RooflineAnalysis:
    """Points, the ridge (gated: RIDGE_GATES) and the peak. ``physical``: (GB/s, what) from the catalog."""
    if not batches or len(batches) != len(latencies_s) or batches[0] != 1:
        raise ValueError("a roofline needs latencies for batches starting at 1")
    points = []
    for batch, latency in zip(batches, latencies_s):
        flops = flops_per_call(vocab, hidden, batch)
        moved = bytes_per_call(weight_bytes, vocab, hidden, batch, element_bytes)
        points.append(RooflinePoint(batch, latency, flops, moved, flops / latency, moved / flops,
                                    gbps(weight_bytes, latency)))
    start = ridge_baseline(batches, latencies_s)
    base = latencies_s[start]
    above = [t > GROWTH_AT_RIDGE * base for t in latencies_s]
    ridge = next((batches[i] for i in range(start, len(batches)) if all(above[i:])), None)
    bound = clearly_compute_bound(batches, latencies_s)
    model_ridge = None
    if bound:
        per_vector = latencies_s[-1] / batches[-1]  # the compute slope, from the largest batch
        model_ridge = base / per_vector
    failures = ridge_failures(batches, ridge, bound, points[0].gbps, physical, measured)
    return RooflineAnalysis(points, None if failures else ridge, batches[start],
                            None if failures else model_ridge, max(p.flop_per_s for p in points),
                            points[0].gbps, bound, ridge_error="; ".join(failures) or None)
