"""Roofline analysis of a batch sweep: the same weights times B input vectors.

At small B every call streams the weights once and latency stays flat (memory-bound); once the FLOPs
of B vectors take longer than the read, latency grows in proportion to B (compute-bound). The ridge is
where it starts to grow, by a stated rule.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

GROWTH_AT_RIDGE = 1.2  # the ridge: the first batch whose latency exceeds 1.2x the batch-1 latency
LINEAR_DOUBLING = 1.7  # "clearly compute-bound": doubling B multiplies latency by >= 1.7 ...
LINEAR_STREAK = 2  # ... on this many doublings in a row
RIDGE_RULE = (f"ridge = the first batch whose median latency exceeds {GROWTH_AT_RIDGE}x the batch-1 latency "
              f"(the batch-2 latency when the engine switches kernels: batch 2 > {GROWTH_AT_RIDGE}x batch 1 "
              f"but batch 4 <= {GROWTH_AT_RIDGE}x batch 2); compute-bound once doubling the batch multiplies "
              f"latency by >= {LINEAR_DOUBLING} {LINEAR_STREAK} times in a row")


def ridge_baseline(batches: list[int], latencies_s: list[float]) -> int:
    """Index of the latency the ridge is measured from: batch 1, or batch 2 after a kernel switch.

    Matrix-vector (batch 1) and matrix-matrix (batch >= 2) are often different kernels; a jump at batch 2
    followed by a flat batch 4 is that switch, not compute starting to dominate.
    """
    if batches[:3] == [1, 2, 4]:
        t1, t2, t4 = latencies_s[:3]
        if t2 > GROWTH_AT_RIDGE * t1 and t4 <= GROWTH_AT_RIDGE * t2:
            return 1
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
    """True once the last LINEAR_STREAK doublings each grew latency by >= LINEAR_DOUBLING."""
    if len(latencies_s) < LINEAR_STREAK + 1:
        return False
    recent = range(len(latencies_s) - LINEAR_STREAK, len(latencies_s))
    return all(batches[i] == 2 * batches[i - 1] and latencies_s[i] >= LINEAR_DOUBLING * latencies_s[i - 1]
               for i in recent)


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
    baseline_batch: int  # the batch the ridge's growth is measured from (1, or 2 after a kernel switch)
    model_ridge_batch: float | None  # where the flat memory roof meets the compute slope
    peak_flop_per_s: float
    memory_gbps: float
    compute_bound: bool
    rule: str = RIDGE_RULE

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
            "points": [asdict(p) for p in self.points],
        }


def analyse_roofline(batches: list[int], latencies_s: list[float], vocab: int, hidden: int,
                     weight_bytes: int, element_bytes: int) -> RooflineAnalysis:
    if not batches or len(batches) != len(latencies_s) or batches[0] != 1:
        raise ValueError("a roofline needs latencies for batches starting at 1")
    points = []
    for batch, latency in zip(batches, latencies_s):
        flops = flops_per_call(vocab, hidden, batch)
        moved = bytes_per_call(weight_bytes, vocab, hidden, batch, element_bytes)
        points.append(RooflinePoint(batch, latency, flops, moved, flops / latency, moved / flops,
                                    weight_bytes / latency / 1e9))
    start = ridge_baseline(batches, latencies_s)
    base = latencies_s[start]
    ridge = next((b for b, t in zip(batches[start:], latencies_s[start:]) if t > GROWTH_AT_RIDGE * base), None)
    bound = clearly_compute_bound(batches, latencies_s)
    model_ridge = None
    if bound:
        per_vector = latencies_s[-1] / batches[-1]  # the compute slope, from the largest batch
        model_ridge = base / per_vector
    return RooflineAnalysis(points, ridge, batches[start], model_ridge, max(p.flop_per_s for p in points),
                            points[0].gbps, bound)
