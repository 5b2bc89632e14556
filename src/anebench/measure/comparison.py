"""Comparing two results by their between-run uncertainty (what `anebench compare` and reports use).

The within-run CI of one run describes that run's samples; two runs of the same command differ by far
more than it. So every comparison here uses the between-run interval of each measured record (the spread
of its repetitions' medians), and a stated figure (published, imported) counts as an exact point: its
source gives no interval. A record of one repetition has no between-run interval, so a comparison with
it is "unknown", never decided by the narrower within-run CI.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

from ..errors import UserError
from ..model import ResultRecord, t975
from ..model.statistics import MAX_LOG_HALFWIDTH

# A difference of 1% or less is noise whatever its interval (criterion.rs's default noise threshold):
# on a shared host an interleaved self-comparison read 0.990 [0.983-0.998], a host effect, not a change.
NOISE_THRESHOLD = 0.01
SIGNIFICANCE = (f"significant when the whole CI lies beyond the +-{NOISE_THRESHOLD:.0%} noise threshold "
                f"(below {1 / (1 + NOISE_THRESHOLD):.3f} or above {1 + NOISE_THRESHOLD:.2f})")

COMPARISON_METHOD = (
    "ratio = GB/s of b / GB/s of a (> 1: b is faster); 95% CI: Welch t-interval on the difference of the "
    "log medians, each measured record contributing the variance its between-run interval implies "
    "((half-width on the log scale / t(0.975, R - 1)) squared) with R - 1 degrees of freedom, a stated "
    f"figure counting as an exact point; {SIGNIFICANCE}"
)

PAIRED_METHOD = (
    "paired (one interleaved run): ratio = exp(mean over the rounds of log(median of a / median of b) in "
    "that round); 95% CI: t-interval on those per-round log ratios with R - 1 degrees of freedom; "
    f"{SIGNIFICANCE}. The host's phases, shared by a round, cancel out"
)
UNRELIABLE_NOTE = ("a difference this method calls significant is reported as 'unreliable': separate runs on "
                   "a busy machine or in different host states differ by the host's phase as much as by "
                   "themselves (`run --interleave` measures both in one run, paired)")

Verdict = Literal["b is faster", "b is slower", "no significant difference", "unknown", "unreliable"]


@dataclass(frozen=True)
class Uncertainty:
    """One result's between-run uncertainty on the log scale: variance of its log median and its df."""

    variance: float  # of the log of the headline figure; 0 for an exact point
    df: float | None  # None for an exact point
    point: bool  # a stated figure (no samples): exact by assumption
    unknown: str | None = None  # why there is none (one repetition, no repetitions recorded)


def uncertainty_of(record: ResultRecord) -> Uncertainty:
    """The record's headline (between-run) interval read back as a log-scale variance with R - 1 df, so
    that t(0.975, R - 1) x sqrt(variance) is the interval's half-width on the log scale."""
    if record.provenance != "measured":
        return Uncertainty(0.0, None, True)
    repetitions = record.repetitions
    if repetitions is None:
        return Uncertainty(0.0, None, False,
                           "made before repetitions were recorded: between-run spread unknown")
    interval, centre = record.between_run(), record.latency_s()
    if interval is None or centre is None or repetitions.count < 2:
        return Uncertainty(0.0, None, False, "one repetition: between-run spread unknown")
    low, high = interval
    half = max(math.log(high / centre), math.log(centre / low), 0.0)
    df = repetitions.count - 1
    return Uncertainty((half / t975(df)) ** 2, df, False)


def relative_halfwidth(record: ResultRecord) -> float | None:
    """Half the width of the record's between-run 95% interval on the log scale (about the relative
    half-width): 0.021 is about +-2.1%. None where the interval is unknown or the figure is a point."""
    u = uncertainty_of(record)
    if u.unknown is not None or u.point or u.df is None:
        return None
    return t975(u.df) * math.sqrt(u.variance)


@dataclass(frozen=True)
class Comparison:
    ratio: float  # GB/s of b / GB/s of a
    low: float | None  # the ratio's 95% CI; None when unknown
    high: float | None
    significant: bool | None  # None: unknown
    verdict: Verdict
    method: str = COMPARISON_METHOD
    notes: list[str] = field(default_factory=list)

    def describe(self) -> str:
        if self.low is None or self.high is None:
            return f"x{self.ratio:.3f}, {self.verdict}"
        return f"x{self.ratio:.3f} (95% CI {self.low:.3f}-{self.high:.3f}), {self.verdict}"


def decided(ratio: float, low: float, high: float) -> tuple[bool, Verdict, list[str]]:
    """(significant, verdict, notes) of a ratio and its 95% CI under the noise threshold."""
    beyond = high < 1 / (1 + NOISE_THRESHOLD) or low > 1 + NOISE_THRESHOLD
    if beyond:
        return True, "b is faster" if ratio > 1 else "b is slower", []
    if not low <= 1.0 <= high:
        return False, "no significant difference", [
            f"the CI excludes 1 but not the +-{NOISE_THRESHOLD:.0%} noise threshold: a difference this "
            "small is within what a host's phases move a figure"]
    return False, "no significant difference", []


def _label(record: ResultRecord, name: str) -> str:
    return f"{name} ({record.engine.name}:{record.engine.device} {record.workload.name})"


def interleaved_together(a: ResultRecord, b: ResultRecord) -> bool:
    """Two configurations of one interleaved run, with their rounds intact: they compare paired."""
    ia = a.repetitions.interleave if a.repetitions is not None else None
    ib = b.repetitions.interleave if b.repetitions is not None else None
    return (ia is not None and ib is not None and ia.group == ib.group and ia.position != ib.position
            and a.repetitions is not None and b.repetitions is not None
            and a.repetitions.count == b.repetitions.count >= 2)


def compare_paired(a: ResultRecord, b: ResultRecord) -> Comparison:
    """b against a from one interleaved run: the per-round ratios (PAIRED_METHOD)."""
    assert a.repetitions is not None and b.repetitions is not None  # interleaved_together checked them
    logs = [math.log(ra.median_s / rb.median_s) for ra, rb in zip(a.repetitions.runs, b.repetitions.runs)
            if ra.median_s and rb.median_s]
    rounds = len(logs)
    mean = sum(logs) / rounds
    spread = math.sqrt(sum((x - mean) ** 2 for x in logs) / (rounds - 1))
    half = min(t975(rounds - 1) * spread / math.sqrt(rounds), MAX_LOG_HALFWIDTH)
    ratio, low, high = math.exp(mean), math.exp(mean - half), math.exp(mean + half)
    significant, verdict, notes = decided(ratio, low, high)
    return Comparison(ratio, low, high, significant, verdict, PAIRED_METHOD,
                      [f"paired over the {rounds} rounds of one interleaved run", *notes])


def host_state_differences(a: ResultRecord, b: ResultRecord) -> list[str]:
    """Why two separate runs are not comparable as measured: a busy machine, or host states that differ
    (governor, power source, top CPU frequency) where both records state them."""
    reasons = [f"{name} was measured on a busy machine (load average "
               f"{r.host.state.load_average_1m if r.host.state else '?'})"
               for name, r in (("a", a), ("b", b)) if r.host.state is not None and r.host.state.busy]
    sa, sb = a.host.state, b.host.state
    if sa is not None and sb is not None:
        for field_name in ("governor", "power_source", "cpu_freq_max_mhz"):
            va, vb = getattr(sa, field_name), getattr(sb, field_name)
            if va is not None and vb is not None and va != vb:
                reasons.append(f"host state differs: {field_name} {va} (a) vs {vb} (b)")
    return reasons


def compare_results(a: ResultRecord, b: ResultRecord) -> Comparison:
    """b against a: the ratio of their headline GB/s with its 95% CI from their between-run intervals,
    or, for two configurations of one interleaved run, from their paired per-round ratios.

    Refuses two records that read different bytes (another workload fingerprint): their GB/s answer
    different questions."""
    if a.workload.fingerprint != b.workload.fingerprint:
        raise UserError(f"{_label(a, 'a')} and {_label(b, 'b')} have different workload fingerprints "
                        f"({a.workload.fingerprint[:12]} vs {b.workload.fingerprint[:12]}); compare only "
                        "results of the same workload")
    if not a.gbps or not b.gbps:
        missing = "a" if not a.gbps else "b"
        raise UserError(f"{_label(a if missing == 'a' else b, missing)} states no GB/s figure to compare")
    if interleaved_together(a, b):
        return compare_paired(a, b)
    ratio = b.gbps / a.gbps
    ua, ub = uncertainty_of(a), uncertainty_of(b)
    notes = [f"{name} is a stated point (its source gives no interval)" for name, u in (("a", ua), ("b", ub))
             if u.point]
    unknown = [f"{name}: {u.unknown}" for name, u in (("a", ua), ("b", ub)) if u.unknown]
    if unknown:
        return Comparison(ratio, None, None, None, "unknown", notes=notes + unknown)
    if ua.point and ub.point:
        return Comparison(ratio, None, None, None, "unknown",
                          notes=notes + ["neither figure carries an interval: no test is possible"])
    if a.method.statistic != b.method.statistic:
        notes.append(f"a's latency is a {a.method.statistic}, b's a {b.method.statistic}")
    variance = ua.variance + ub.variance
    df = welch_df([(u.variance, u.df) for u in (ua, ub) if not u.point])
    half = min(t975(df) * math.sqrt(variance), 2 * MAX_LOG_HALFWIDTH)  # two capped intervals at most
    low, high = ratio * math.exp(-half), ratio * math.exp(half)
    significant, verdict, within = decided(ratio, low, high)
    notes += within
    doubts = [] if ua.point or ub.point else host_state_differences(a, b)
    if significant and doubts:
        return Comparison(ratio, low, high, None, "unreliable", notes=notes + doubts + [UNRELIABLE_NOTE])
    return Comparison(ratio, low, high, significant, verdict, notes=notes + doubts)


def welch_df(parts: list[tuple[float, float | None]]) -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of independent variances (each with its df)."""
    total = sum(v for v, _ in parts)
    if total <= 0:
        return min(df for _, df in parts if df is not None)  # no spread at all: the smallest df
    return total**2 / sum(v**2 / df for v, df in parts if df is not None and v > 0)
