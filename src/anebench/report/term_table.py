"""The terminal table type and the engine:device cell every suite's table shares, below both
``suite_terminal`` and ``decode_tables`` so neither imports the other for them (significant digits and
time units: ``format``)."""

from __future__ import annotations

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


def target(record: ResultRecord) -> str:
    """engine:device, and ` t=N` where the run was limited to N CPU threads (`--threads`)."""
    threads = f" t={record.method.threads}" if record.method.threads else ""
    return f"{record.engine.name}:{record.engine.device}{threads}"
