"""One way to show a figure's uncertainty, everywhere: the GB/s range ``[low-high]`` and an `unreliable`
mark when that range is wider than a stated threshold.

The range of a measured record is its between-run 95% interval (``repetitions.between_run``: the spread
of its repetitions' medians), read in GB/s; a cell made of several records (a report row) takes its
range from the spread between them (the same t-interval on their log figures). `run`, `compare`,
`submit`, `report` and the plots all format through this module, so one record shows one range.

A range is never shown as a percentage: "±206%" reads as a negative latency, and a range of a factor
of 300 is still honest as ``[0.1-30]``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..model import ResultRecord, between_run_interval, median

UNRELIABLE_FACTOR = 1.10  # a range reaching more than 10% either side of the figure is marked unreliable
UNRELIABLE = "unreliable"
CONVENTION = (
    "GB/s [low-high]: the between-run 95% interval (from the spread of the run's repetitions; for a cell "
    "of several results, from the spread between them); 'unreliable': that interval reaches more than "
    f"{UNRELIABLE_FACTOR - 1:.0%} either side of the figure; no range: a stated point (published, "
    "imported) or a run of one repetition"
)


def fmt_gbps(value: float) -> str:
    """GB/s as every table shows it: two decimals, three significant digits below 1 (never an exponent:
    the low end of a wild range can be 0.0000461)."""
    if value >= 1 or value == 0:
        return f"{value:.2f}"
    return np.format_float_positional(value, precision=3, unique=False, fractional=False, trim="k")


@dataclass(frozen=True)
class GbpsRange:
    """A figure and its 95% range, in GB/s."""

    gbps: float
    low: float
    high: float

    @property
    def factor(self) -> float:
        """How far the range reaches from the figure, as a factor (1.05: 5% at the wider side)."""
        if self.gbps <= 0 or self.low <= 0:
            return math.inf
        return max(self.high / self.gbps, self.gbps / self.low)

    @property
    def unreliable(self) -> bool:
        return not self.factor <= UNRELIABLE_FACTOR

    def text(self) -> str:
        """``[low-high]``, with the mark where the range is wider than the threshold."""
        span = f"[{fmt_gbps(self.low)}-{fmt_gbps(self.high)}]"
        return f"{span} {UNRELIABLE}" if self.unreliable else span

    def cell(self) -> str:
        """The figure with its range: ``28.49 [26.10-30.21]``."""
        return f"{fmt_gbps(self.gbps)} {self.text()}"


def gbps_range(record: ResultRecord) -> GbpsRange | None:
    """The record's headline range in GB/s; None for a stated point or a run without an interval."""
    between = record.repetitions.between_run if record.repetitions is not None else None
    if (record.provenance != "measured" or record.gbps is None or between is None
            or between.gbps_low is None or between.gbps_high is None):
        return None
    return GbpsRange(record.gbps, between.gbps_low, between.gbps_high)


def spread_range(figures: Sequence[float]) -> GbpsRange | None:
    """A cell of several results: their median, with the 95% interval from the spread between them."""
    positive = [f for f in figures if f > 0]
    if len(positive) < 2:
        return None
    centre = median(positive)
    interval = between_run_interval(positive, centre)
    if interval is None:
        return None
    return GbpsRange(centre, *interval)


def missing_range(record: ResultRecord, short: bool = True) -> str:
    """Why a record has no range, in the words every table uses (``short``: for a range column)."""
    if record.provenance != "measured":
        return "point" if short else "a stated point"
    if record.repetitions is None:
        return "not recorded" if short else "repetitions not recorded"
    return "1 repetition"


def gbps_cell(record: ResultRecord) -> str:
    """The record's GB/s with its range (``28.49 [26.10-30.21]``) or the reason it has none."""
    if record.gbps is None:
        return "-"
    found = gbps_range(record)
    if found is not None:
        return found.cell()
    return f"{fmt_gbps(record.gbps)} (no range: {missing_range(record, short=False)})"


def range_cell(record: ResultRecord) -> str:
    """The range alone (a table whose GB/s column stands beside it), or the reason there is none."""
    found = gbps_range(record)
    return found.text() if found is not None else missing_range(record)


def log_halfwidth(found: GbpsRange | None) -> float | None:
    """The range as a half-width on the log scale (what comparisons and csv columns carry)."""
    return None if found is None else math.log(found.factor) if math.isfinite(found.factor) else None
