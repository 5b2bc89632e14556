"""The one set of unit and digit rules for every output (terminal tables, CSV, Markdown, the report and
plots), after pyperf's formatter and hyperfine's output/format.rs.

- MB = 1e6 bytes, GB = 1e9 bytes.
- A column of times is in the one unit (s, ms, µs, ns) in which its smallest value is at least 1: a
  latency prints in the same unit in `run`, in a suite's table and in the report.
- Figures have 3 significant digits (more integer digits where the value is that large), never an
  exponent and never "0.00".
- CSV has one writer: every text cell is escaped against spreadsheet formulas.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Sequence

from .escape import csv_cell

# (unit, seconds per unit), largest first
TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))
PER_SECOND = {"s": 1.0, "ms": 1e3, "µs": 1e6, "ns": 1e9}  # exact factors: 1 / 1e-6 is not 1e6 in binary
UNITS_NOTE = "MB = 1e6 bytes, GB = 1e9 bytes"
TIME_UNIT_RULE = "times in the unit in which the column's smallest value is at least 1 (s, ms, µs, ns)"


def time_unit(values_s: Iterable[float | None]) -> tuple[str, float]:
    """(unit, seconds per unit) for a column of times: the largest unit in which the smallest positive
    value is at least 1 (ns below that)."""
    positive = [v for v in values_s if v is not None and v > 0]
    smallest = min(positive) if positive else 1.0
    for unit, seconds in TIME_UNITS:
        if smallest >= seconds * (1 - 1e-12):  # 1e-3 s is 1 ms, whatever its last binary digit
            return unit, seconds
    return TIME_UNITS[-1]


def sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits (more integer digits where it is that large):
    2.80, 60.9, 148, 1051, 0.0123."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    # rounding carried a digit (9.995 -> 10.00): one decimal fewer
    if decimals and abs(float(text)) >= 10 ** (digits - decimals):
        text = f"{value:.{decimals - 1}f}"
    return text


def time_cells(seconds: Sequence[float | None]) -> tuple[str, list[str]]:
    """The column's unit and its cells ("-" where a time is missing)."""
    unit, per = time_unit(seconds)
    return unit, ["-" if s is None else sig(s / per) for s in seconds]


def fmt_time(seconds: float | None) -> str:
    """One time in its own unit: '5.12 ms', '12.3 µs' (never '0.00')."""
    if seconds is None:
        return "-"
    unit, per = time_unit([seconds])
    return f"{sig(seconds / per)} {unit}"


def is_figure(text: str) -> bool:
    """Whether a cell's text is one number (as CSV keeps it, and as a table right-aligns it)."""
    try:
        float(text)
    except ValueError:
        return False
    return True


def _cell(value: object) -> object:
    """A cell as CSV holds it: a figure or the missing mark "-" as it is (a negative number is data,
    not a formula), any other text escaped against formulas and control characters."""
    if isinstance(value, str) and (value == "-" or is_figure(value)):
        return value
    return csv_cell(value)


def csv_text(header: Sequence[object], rows: Iterable[Sequence[object]]) -> str:
    """The one CSV writer: a header and rows, every text cell safe to open in a spreadsheet."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([_cell(c) for c in header])
    writer.writerows([_cell(c) for c in row] for row in rows)
    return buffer.getvalue()
