"""The terminal table type and the cell rules every suite's table shares (significant digits, the
engine:device column), below both ``suite_terminal`` and ``decode_tables`` so neither imports the other
for them."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..model import ResultRecord


@dataclass
class TermTable:
    """A table of text cells; ``numeric`` columns are right-aligned and never wrap."""

    title: str
    columns: list[str]
    numeric: list[bool]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # printed after the table (rules, definitions)


def sig(value: float, digits: int = 3) -> str:
    """``value`` with ``digits`` significant digits (more integer digits where it is that large)."""
    if value == 0 or not math.isfinite(value):
        return "0" if value == 0 else str(value)
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(value))))
    text = f"{value:.{decimals}f}"
    if decimals and float(text) >= 10 ** (digits - decimals):  # rounding carried a digit (9.995 -> 10.00)
        text = f"{value:.{decimals - 1}f}"
    return text


def target(record: ResultRecord) -> str:
    """engine:device, and ` t=N` where the run was limited to N CPU threads (`--threads`)."""
    threads = f" t={record.method.threads}" if record.method.threads else ""
    return f"{record.engine.name}:{record.engine.device}{threads}"
