"""The suites' view of the console (cli/console.py holds width, verbosity, progress and warnings): their
records' warnings grouped by kind, with how many records carry each and which."""

from __future__ import annotations

from ..model import RecordWarning, ResultRecord
from .console import (
    PointLog,
    console,
    fmt_duration,
    print_table,
    print_warning,
    progress,
    quiet,
    rich_table,
    say,
    warning_group,
)


class Warnings:
    """Warnings of a command's records, each kind printed once: how many records carry it and which."""

    def __init__(self) -> None:
        self.kinds: dict[tuple[str, str], list[tuple[ResultRecord, str]]] = {}
        self.total = 0

    def add_records(self, records: list[ResultRecord]) -> None:
        self.total += len(records)
        for record in records:
            dtype_note = record.engine.dtype_note
            notes = [RecordWarning(kind="note", text=dtype_note)] if dtype_note else []
            for warning in dict.fromkeys(notes + list(record.warnings)):
                self.add(record, warning)

    def add(self, record: ResultRecord, warning: RecordWarning | str) -> None:
        # The same warning about another size or count is the same kind: only its figures differ.
        warning = RecordWarning.of(warning)
        self.kinds.setdefault(warning_group(warning), []).append((record, warning.text))

    def lines(self) -> list[str]:
        found = []
        for items in self.kinds.values():
            record, text = items[0]
            if len(items) == 1:
                found.append(f"{record.engine.name}:{record.engine.device} {record.workload.name}: {text}")
                continue
            head, sep, rest = text.partition(": ")
            if not sep or len(head) > 40:
                head, rest = "", text
            targets = ", ".join(dict.fromkeys(f"{r.engine.name}:{r.engine.device}" for r, _ in items))
            sizes = sorted({r.workload.weight_bytes for r, _ in items})
            span = (
                f"{sizes[0] / 1e6:.3g} MB"
                if len(sizes) == 1
                else f"{sizes[0] / 1e6:.3g}-{sizes[-1] / 1e6:.3g} MB"
            )
            who = f"{len(items)} of {self.total} records, {targets}, {span}"
            found.append(f"{head} ({who}): {rest}" if head else f"{who}: {rest}")
        return found

    def print(self) -> None:
        for line in self.lines():
            print_warning(f"warning: {line}")


__all__ = [
    "PointLog",
    "Warnings",
    "console",
    "fmt_duration",
    "print_table",
    "progress",
    "quiet",
    "rich_table",
    "say",
]
