"""The one console of every command: the width to print at, the verbosity (-q/-v), notes and errors
wrapped to that width, rule paragraphs once, warnings once each with a count, and progress.

Width: COLUMNS where set (piped or not), else the terminal's width, else PIPED_WIDTH for a table written
to a file or pipe. Prose (notes, rules, warnings, errors) wraps at spaces to the width when one is known
(COLUMNS or a terminal); piped without COLUMNS a line stays whole, so a log can be grepped.

Verbosity: -q prints only results and errors (no notes, rules, warnings or progress); -v prints each
warning per record and full names.
"""

from __future__ import annotations

import errno
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import click
from rich import box
from rich.console import Console, ConsoleDimensions
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
from ..model import RecordWarning
from ..orchestration.suites.common import ProgressFactory
from ..report.escape import clean_text
from ..report.term_table import TermTable

PIPED_WIDTH = 160  # a table written to a file or pipe, when COLUMNS does not say otherwise
QUIET, NORMAL, VERBOSE = -1, 0, 1
# Within one kind of warning, texts that differ only in their figures (and their signs) are one warning:
# "1.0 MB" and "2.5 MB", a drift of +12% and one of -17%.
FIGURE = re.compile(r"[-+]?[0-9][0-9.,]*")


def warning_group(warning: RecordWarning) -> tuple[str, str]:
    """How the console groups warnings: by kind, then by the text with its figures masked (two kinds whose
    texts look alike stay apart; two texts of one kind that say different things too)."""
    return warning.kind, FIGURE.sub("#", warning.text)


class FollowingConsole(Console):
    """A console as wide as COLUMNS where it is set (piped or not), else the terminal, else PIPED_WIDTH:
    stdout and stderr follow one rule, so the table on stderr under --json is as wide as on stdout."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not stated_columns() and not self.is_terminal:
            return ConsoleDimensions(PIPED_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def on_broken_pipe(self) -> None:
        """Rich exits silently (SystemExit(1)) on a closed pipe; the CLI's boundary says it in one line."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


def stated_columns() -> int | None:
    columns = os.environ.get("COLUMNS", "")
    return int(columns) if columns.isdigit() and int(columns) > 0 else None


# emoji=False: names such as hf:m:lm_head.weight contain ":m:", which Rich would turn into an emoji.
err_console = FollowingConsole(stderr=True, emoji=False, highlight=False)


def out_console() -> Console:
    """The console for stdout: no emoji codes, as wide as COLUMNS (or the terminal, else PIPED_WIDTH)."""
    return FollowingConsole(emoji=False, highlight=False)


def console(stderr: bool = False) -> Console:
    """stdout's console, or stderr's (the one shared err_console, so a test can capture it)."""
    return stderr_console() if stderr else out_console()


def stderr_console() -> Console:
    """The stderr console in use (looked up at call time: a test may replace it)."""
    return err_console


def wraps(target: Console) -> bool:
    """Prose wraps where a width is known: COLUMNS, or a terminal."""
    return stated_columns() is not None or target.is_terminal


# --- verbosity ---------------------------------------------------------------------------------------


@dataclass
class Invocation:
    """What one command invocation's console keeps: its verbosity (-q/-v, before or after the
    subcommand), the rule paragraphs already said, and its warnings. Held as the click context's typed
    ``obj`` (inherited by the subcommand's context), so each invocation starts afresh."""

    verbosity: int = NORMAL
    rules_said: set[str] = field(default_factory=set)
    warnings: Any = None  # the command's WarningLog, made when the first warning comes


def invocation(create: bool = False) -> Invocation | None:
    """This invocation's console state; None outside a command (unless ``create``)."""
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return None
    found = ctx.find_object(Invocation)
    return ctx.ensure_object(Invocation) if found is None and create else found


def verbosity() -> int:
    state = invocation()
    return state.verbosity if state is not None else NORMAL


def quiet() -> bool:
    return verbosity() <= QUIET


def verbose() -> bool:
    return verbosity() >= VERBOSE


def set_verbosity(quiet_flag: bool, verbose_flag: bool) -> None:
    """-q/-v, before or after the subcommand: the last one given counts; both at once is refused."""
    from ..errors import UserError

    state = invocation(create=True)
    assert state is not None  # called from a command's parameters: there is a context
    if quiet_flag and verbose_flag:
        raise UserError("--quiet with --verbose: choose one")
    if quiet_flag or verbose_flag:
        wanted = QUIET if quiet_flag else VERBOSE
        if state.verbosity not in (NORMAL, wanted):
            raise UserError("--quiet with --verbose: choose one")
        state.verbosity = wanted


# --- notes, rules, errors ----------------------------------------------------------------------------


def say(text: str, *, quiet_too: bool = False) -> None:
    """A note for the user on stderr (not a result), wrapped to the width: dropped under -q unless
    ``quiet_too``."""
    if quiet_too or not quiet():
        target = stderr_console()
        target.print(clean_text(text), markup=False, highlight=False, soft_wrap=not wraps(target))


def result_line(text: str) -> None:
    """A line of results on stdout (a plan, a path written): printed under -q too, wrapped to the width."""
    target = out_console()
    target.print(clean_text(text), markup=False, highlight=False, soft_wrap=not wraps(target))


def rule(text: str) -> None:
    """A rule or definition paragraph (the fit's gates, the verdict's rule): printed once per command,
    however many targets or workloads state it."""
    state = invocation()
    said: set[str] = state.rules_said if state is not None else set()
    if text in said:
        return
    said.add(text)
    say(text)


def error_line(label: str, message: str) -> None:
    """The one error line ("error: ...", "analysis failed: ..."), red label, wrapped to the width."""
    target = stderr_console()
    target.print(
        f"[red]{label}:[/red] {escape(clean_text(message, keep_newlines=False))}",
        highlight=False,
        soft_wrap=not wraps(target),
    )


# --- tables ------------------------------------------------------------------------------------------


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
    """The table (a result: printed under -q too), then its notes (prose: folded at spaces)."""
    target = console(stderr)
    target.print(rich_table(table))
    for note in table.notes:
        target.print(escape(clean_text(note)))


# --- warnings ----------------------------------------------------------------------------------------


@dataclass
class WarningLog:
    """The command's warnings, printed once each with a count: a sweep of 10 cache-resident sizes
    prints one line, not ten. Texts that differ only in their figures are one warning."""

    # group (warning_group) -> [(subject, text)]
    seen: dict[tuple[str, str], list[tuple[str, str]]] = field(default_factory=dict)
    printed: set[tuple[str, str]] = field(default_factory=set)  # groups already said by this command

    def add(self, warning: RecordWarning | str, subject: str = "") -> None:
        """A warning of a record (a plain string is classified from its text, as an old record's is)."""
        warning = RecordWarning.of(warning)
        group = warning_group(warning)
        # e.g. the busy-machine warning, said before measuring, is in the record too: not said again
        if group not in self.printed:
            self.seen.setdefault(group, []).append((subject, warning.text))

    def lines(self, verbose: bool = False) -> list[str]:
        out = []
        for entries in self.seen.values():
            subjects = list(dict.fromkeys(s for s, _ in entries if s))
            if verbose or len(entries) == 1:
                out += [f"warning: {s}: {t}" if s else f"warning: {t}" for s, t in dict.fromkeys(entries)]
                continue
            texts = list(dict.fromkeys(t for _, t in entries))
            who = ", ".join(subjects[:3]) + (f" and {len(subjects) - 3} more" if len(subjects) > 3 else "")
            if len(texts) == 1:
                out.append(f"warning (x{len(entries)}): {texts[0]}" + (f" [{who}]" if who else ""))
            else:
                out.append(
                    f"warning (x{len(entries)}): {texts[0]} (the first; the figures differ, -v shows "
                    f"each) [{who}]"
                )
        self.printed.update(self.seen)
        self.seen.clear()
        return out


def warnings_log() -> WarningLog:
    state = invocation()
    if state is None:
        return WarningLog()
    if state.warnings is None:
        state.warnings = WarningLog()
    return state.warnings


def warn(warning: RecordWarning | str, subject: str = "") -> None:
    """Collect a warning; :func:`flush_warnings` prints each once (emit, and the end of every command)."""
    warning = RecordWarning.of(warning)
    warnings_log().add(RecordWarning(kind=warning.kind, text=clean_text(warning.text)), clean_text(subject))


def print_warning(line: str) -> None:
    """One warning line ("warning...: text"), its label yellow; nothing under -q."""
    if quiet():
        return
    target = stderr_console()
    label, sep, rest = line.partition(":")
    head = f"[yellow]{escape(label)}{sep}[/yellow]" if sep else ""
    text = head + escape(clean_text(rest if sep else line))
    target.print(text, highlight=False, soft_wrap=not wraps(target))


def flush_warnings() -> None:
    for line in warnings_log().lines(verbose=verbose()):
        print_warning(line)


# --- progress ----------------------------------------------------------------------------------------


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


def _bar(transient: bool) -> Progress:
    return Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=stderr_console(),
        transient=transient,
        disable=quiet(),
    )


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """A command's progress bars on stderr, kept when done (none under -q); its exit restores the cursor
    however it ends."""
    with _bar(transient=False) as bar:
        yield bar


@contextmanager
def progress() -> Iterator[ProgressFactory]:
    """A progress factory for the suites. On a terminal its bars vanish when done: one bar per
    measurement with its own time left, the previous one removed when the next starts (a refused
    measurement leaves no stale 0/N bar), and nothing left at the end. Piped (a log): one line per
    finished measurement, with the elapsed time and the time left, so a long suite never goes silent.
    Nothing under -q."""
    log = PointLog()
    if quiet():
        yield lambda _label, _total: lambda _done, _total_: None
        return
    if not stderr_console().is_terminal:

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
    bar = _bar(transient=True)
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
