"""Terminal helpers any command may share: the width to print at, tables that never wrap a number,
progress that leaves nothing stale, and warnings collected per command and printed once each with a count.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from rich import box
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table

from ..measure.timing import ProgressCallback
from ..model import ResultRecord
from ..orchestration.suites.common import ProgressFactory
from ..report.escape import clean_text
from ..report.suite_terminal import TermTable

FALLBACK_WIDTH = 80  # piped output without COLUMNS: the width every suite table is designed for


def width_for(stream: object) -> int:
    """COLUMNS where set (also when piped), else the terminal's width, else 80."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    isatty = getattr(stream, "isatty", None)
    if isatty is not None and isatty():
        return shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns
    return FALLBACK_WIDTH


def console(stderr: bool = False) -> Console:
    """A console on stdout or stderr at ``width_for`` (no emoji codes: names like hf:m:x contain ':m:')."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, emoji=False, width=width_for(stream), highlight=False)


def rich_table(table: TermTable) -> Table:
    """One space between columns and no outer border, so that a table of 8-9 columns fits 80; numeric
    columns never wrap (text columns fold where they must)."""
    rendered = Table(
        title=escape(table.title), box=box.SIMPLE_HEAD, show_edge=False, padding=0, title_justify="left"
    )
    for name, numeric in zip(table.columns, table.numeric):
        rendered.add_column(
            escape(name), justify="right" if numeric else "left", no_wrap=numeric, overflow="fold"
        )
    for row in table.rows:
        rendered.add_row(*(escape(clean_text(cell)) for cell in row))
    return rendered


def print_table(table: TermTable, stderr: bool = False) -> None:
    out = console(stderr)
    out.print(rich_table(table))
    for note in table.notes:  # prose: folded at spaces to the width, so never inside a number
        out.print(escape(clean_text(note)))


def say(line: str) -> None:
    """One line to stderr, as written (never folded: a reader greps it)."""
    console(stderr=True).print(escape(clean_text(line)), soft_wrap=True)


def fmt_duration(seconds: float) -> str:
    """'42 s', '3 min 05 s': how long a phase took or is expected to take."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds >= 10 else f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"


POINT_OF = re.compile(r"\((\d+)/(\d+)\)")  # a label that says which point of how many, e.g. "(3/10)"


class PointLog:
    """Which point is being measured, when each finished, and an estimate of the time left where the
    label says "(i/N)": the mean time of the finished points times the points still to come."""

    def __init__(self) -> None:
        self.started_at = time.monotonic()
        self.current: tuple[str, float] | None = None

    def eta(self, label: str, finished: bool) -> str:
        found = POINT_OF.search(label)
        if not found:
            return ""
        index, total = int(found[1]), int(found[2])
        done = index if finished else index - 1
        if done < 1 or done >= total:
            return ""
        left = (time.monotonic() - self.started_at) / done * (total - done)
        return f", about {fmt_duration(left)} left"

    def start(self, label: str) -> str | None:
        """Mark ``label`` started; the line for the point it follows (None for the first)."""
        line = self.finish()
        self.current = (label, time.monotonic())
        return line

    def finish(self) -> str | None:
        if self.current is None:
            return None
        label, began = self.current
        self.current = None
        now = time.monotonic()
        return (f"done: {label} in {fmt_duration(now - began)} (elapsed {fmt_duration(now - self.started_at)}"
                f"{self.eta(label, finished=True)})")


def quiet() -> bool:
    import click

    ctx = click.get_current_context(silent=True)
    return ctx is not None and ctx.meta.get("anebench.verbosity", 0) < 0


@contextmanager
def progress() -> Iterator[ProgressFactory]:
    """A progress factory. On a terminal its bars vanish when done: one bar per measurement with its own
    time left, the previous one removed when the next starts (a refused measurement leaves no stale 0/N
    bar), and nothing left at the end. Piped (a log): one line per finished measurement, with the elapsed
    time and the time left, so a long suite never goes silent. Nothing under -q."""
    log = PointLog()
    err = console(stderr=True)
    if quiet():
        yield lambda _label, _total: lambda _done, _total_: None
        return
    if not err.is_terminal:

        def piped(label: str, total: int) -> ProgressCallback:
            line = log.start(label)
            if line:
                say(line)
            return lambda _done, _total_: None

        yield piped
        line = log.finish()  # only when the suite ended normally: a failed point is not "done"
        if line:
            say(line)
        return
    bar = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err,
        transient=True,
    )
    tasks: list[TaskID] = []

    def factory(label: str, total: int) -> ProgressCallback:
        while tasks:
            bar.remove_task(tasks.pop())
        log.start(label)
        task = bar.add_task(label + log.eta(label, finished=False), total=total)
        tasks.append(task)
        return lambda done, total_: bar.update(task, completed=done)

    with bar:
        yield factory


NUMBER = re.compile(r"\d+(\.\d+)?")


class Warnings:
    """Warnings of a command's records, each kind printed once: how many records carry it and which."""

    def __init__(self) -> None:
        self.kinds: dict[str, list[tuple[ResultRecord, str]]] = {}
        self.total = 0

    def add_records(self, records: list[ResultRecord]) -> None:
        self.total += len(records)
        for record in records:
            notes = [record.engine.dtype_note] if record.engine.dtype_note else []
            for text in dict.fromkeys(notes + list(record.warnings)):
                self.add(record, text)

    def add(self, record: ResultRecord, text: str) -> None:
        # The same warning about another size or count is the same kind: only its numbers differ.
        self.kinds.setdefault(NUMBER.sub("#", text), []).append((record, text))

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
        err = console(stderr=True)
        for line in self.lines():
            err.print(f"[yellow]warning:[/yellow] {escape(clean_text(line))}", soft_wrap=True)
