"""What a quantised head's latency says about the bytes the device streams: a pure, stated rule.

If the device streams the weights as stored (compressed), latency falls with the stored bytes: a lut6
head (37.7% of the fp16 bytes) takes ~37.7% of the fp16 latency. If it decompresses them to fp16 before
streaming (maderix's account of int8 on the ANE), latency stays at the fp16 level. Slower than fp16
means the decoding, not the read, sets the time.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..model import gbps

TOLERANCE = 0.15  # a ratio "matches" within 15% of what it is compared with
COMPRESSED = "streams compressed weights"
DECOMPRESSED = "streams decompressed weights"
COMPUTE_BOUND = "compute-bound"
INCONCLUSIVE = "inconclusive"
RULE = (f"per variant, r_t = latency / fp16 latency and r_b = stored bytes / fp16 bytes: '{COMPRESSED}' when "
        f"r_t is within {TOLERANCE:.0%} of r_b, '{DECOMPRESSED}' when r_t is within {TOLERANCE:.0%} of 1, "
        f"'{COMPUTE_BOUND}' when r_t is above 1 + {TOLERANCE:.0%} (decoding costs more than the bytes save), "
        f"else '{INCONCLUSIVE}'; the head's inference is the variants' common verdict, or 'mixed'")


@dataclass(frozen=True)
class VariantPoint:
    variant: str
    stored_bytes: int
    latency_s: float


@dataclass(frozen=True)
class VariantVerdict:
    variant: str
    stored_bytes: int
    latency_s: float
    latency_ratio: float
    bytes_ratio: float
    gbps_as_stored: float
    gbps_fp16_equivalent: float
    verdict: str | None  # None for fp16 itself


@dataclass(frozen=True)
class QuantInference:
    variants: list[VariantVerdict]
    inference: str
    rule: str = RULE
    tolerance: float = TOLERANCE


def within(value: float, target: float, tolerance: float) -> bool:
    return abs(value / target - 1) <= tolerance


def variant_verdict(latency_ratio: float, bytes_ratio: float, tolerance: float = TOLERANCE) -> str:
    if within(latency_ratio, bytes_ratio, tolerance):
        return COMPRESSED
    if within(latency_ratio, 1.0, tolerance):
        return DECOMPRESSED
    if latency_ratio > 1 + tolerance:
        return COMPUTE_BOUND
    return INCONCLUSIVE


def infer_streaming(
    points: list[VariantPoint], fp16_bytes: int, tolerance: float = TOLERANCE
) -> QuantInference:
    """Verdicts for every quantised variant against the fp16 point among ``points``."""
    by_name = {p.variant: p for p in points}
    if "fp16" not in by_name:
        raise ValueError("the inference needs the fp16 variant as its reference")
    if len(by_name) < 2:
        raise ValueError("the inference needs at least one quantised variant beside fp16")
    reference = by_name["fp16"].latency_s
    verdicts = []
    for point in points:
        latency_ratio, bytes_ratio = point.latency_s / reference, point.stored_bytes / fp16_bytes
        verdict = None if point.variant == "fp16" else variant_verdict(latency_ratio, bytes_ratio, tolerance)
        verdicts.append(VariantVerdict(point.variant, point.stored_bytes, point.latency_s, latency_ratio,
                                       bytes_ratio, gbps(point.stored_bytes, point.latency_s),
                                       gbps(fp16_bytes, point.latency_s), verdict))
    found = {v.verdict for v in verdicts if v.verdict is not None}
    inference = found.pop() if len(found) == 1 else "mixed: " + ", ".join(
        f"{v.variant} {v.verdict}" for v in verdicts if v.verdict is not None)
    rule = RULE if tolerance == TOLERANCE else RULE.replace(f"{TOLERANCE:.0%}", f"{tolerance:.0%}")
    return QuantInference(verdicts, inference, rule, tolerance)
