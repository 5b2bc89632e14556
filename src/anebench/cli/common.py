"""What every measuring command shares: options, verbosity, warnings, progress, the results table,
saving and the output formats."""

from __future__ import annotations

import errno
import functools
import inspect
import os
import re
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console, ConsoleDimensions
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from ..errors import NamesSettings, SettingError, UserError, name_settings, setting
from ..measure.uncertainty import GbpsRange
from ..model import ResultRecord, gbps
from ..orchestration.campaign import Target
from ..orchestration.campaign import resolve_targets as _resolve_targets
from ..orchestration.campaign import resolve_workloads as _resolve_workloads
from ..orchestration.preflight import preflight_memory
from ..report.escape import clean_text
from ..results.files import document_json, save_records
from ..system.energy_figures import energy_line
from ..system.host import host_label
from ..util.outputs import check_target, write_new
from ..workloads import Workload
from .boundary import error_text
from .tables import between_run_cell, records_csv, records_markdown, results_table

PIPED_WIDTH = 160  # a table written to a file or pipe, when COLUMNS does not say otherwise


class FollowingConsole(Console):
    """A console as wide as COLUMNS where it is set (piped or not), else the terminal, else PIPED_WIDTH:
    stdout and stderr follow one rule, so the table on stderr under --json is as wide as on stdout."""

    @property
    def size(self) -> ConsoleDimensions:
        dims = Console.size.fget(self)  # type: ignore[attr-defined]
        if self._width is None and not self._environ.get("COLUMNS", "").isdigit() and not self.is_terminal:
            return ConsoleDimensions(PIPED_WIDTH, dims.height)
        return dims

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]

    def on_broken_pipe(self) -> None:
        """Rich exits silently (SystemExit(1)) on a closed pipe; the CLI's boundary says it in one line."""
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, os.strerror(errno.EPIPE))


# emoji=False: names such as hf:m:lm_head.weight contain ":m:", which Rich would turn into an emoji.
err_console = FollowingConsole(stderr=True, emoji=False)

FORMATS = ("table", "json", "csv", "md")
QUIET, NORMAL, VERBOSE = -1, 0, 1


def out_console() -> Console:
    """The console for stdout: no emoji codes, as wide as COLUMNS (or the terminal, else PIPED_WIDTH)."""
    return FollowingConsole(emoji=False)


def _remember(ctx: click.Context, param: click.Parameter, value: object) -> object:
    ctx.meta[f"anebench.{param.name}"] = value
    return value


def _meta(key: str, default: object = None) -> Any:
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(f"anebench.{key}", default) if ctx is not None else default


def verbosity() -> int:
    return int(_meta("verbosity", NORMAL))


def say(text: str, *, quiet_too: bool = False) -> None:
    """A line for the user on stderr (not a result): dropped under -q unless ``quiet_too``."""
    if quiet_too or verbosity() > QUIET:
        err_console.print(text, markup=False, highlight=False, soft_wrap=True)


@dataclass
class WarningLog:
    """The command's warnings, printed once each with a count: a sweep of 10 cache-resident sizes
    prints one line, not ten. Texts that differ only in their figures are one warning."""

    seen: dict[str, list[tuple[str, str]]] = field(default_factory=dict)  # kind -> [(subject, text)]
    printed: set[str] = field(default_factory=set)  # kinds already said by this command

    def add(self, text: str, subject: str = "") -> None:
        kind = re.sub(r"[0-9][0-9.,]*", "#", text)
        if (
            kind not in self.printed
        ):  # e.g. the busy-machine warning, said before measuring, is in the record too
            self.seen.setdefault(kind, []).append((subject, text))

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
    ctx = click.get_current_context(silent=True)
    if ctx is None:
        return WarningLog()
    return ctx.meta.setdefault("anebench.warnings", WarningLog())


def warn(text: str, subject: str = "") -> None:
    """Collect a warning; :func:`flush_warnings` prints each once (emit, and the end of every command)."""
    warnings_log().add(clean_text(text), clean_text(subject))


def flush_warnings() -> None:
    log = warnings_log()
    lines = log.lines(verbose=verbosity() >= VERBOSE)
    if verbosity() > QUIET:
        for line in lines:
            err_console.print(
                f"[yellow]warning[/yellow]{escape(line[len('warning') :])}", highlight=False, soft_wrap=True
            )


def add_input(path: Path) -> None:
    """A file this command reads: no output of the command may replace it."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault("anebench.inputs", []).append(Path(path))


def protected_paths() -> list[tuple[Path, str]]:
    """The command's inputs, the default results store and any --db: never an output (the output policy
    also refuses their SQLite side files and any other SQLite database)."""
    from ..results.store import default_db_path

    protected = [(p, "an input of this command") for p in _meta("inputs", []) or []]
    stores = [Path(db) for db in (_meta("db"), default_db_path()) if db]
    protected += [(db, "the results store (--db)" if _meta("store") else "a results store") for db in stores]
    return protected


@contextmanager
def flags(**mapping: str) -> Iterator[None]:
    """Library errors name settings, not flags: put the flag that set the value in front of the message
    (``flags(out="--out")``: "--out x: is a file; give a directory"), and write a setting the message
    names as this command's flag for it where that is not the default (``boundary.default_flag``)."""
    try:
        yield
    except NamesSettings as exc:
        exc.template = name_settings(exc.template, lambda name: mapping.get(name) or setting(name))
        flag = mapping.get(exc.setting) if isinstance(exc, SettingError) else None
        if flag is None:
            raise
        raise UserError(f"{flag} {exc.template}") from None


def output_format(fmt: str | None, as_json: bool) -> str:
    """--format, with --json as its alias; both given and different is refused in one line."""
    if as_json and fmt not in (None, "json"):
        raise UserError(f"--json and --format {fmt}: give one (--json is --format json)")
    return "json" if as_json else fmt or "table"


def format_option(*choices: str) -> Callable[[Callable], Callable]:
    """--format CHOICE for a command that prints results (default table); pair it with --json."""
    allowed = choices or FORMATS
    machine = ", ".join(c for c in allowed if c != "table")

    def decorate(func: Callable) -> Callable:
        return click.option(
            "--format",
            "fmt",
            type=click.Choice(allowed),
            default=None,
            help=f"table (default) or {machine}: one document on stdout, tables on stderr.",
        )(func)

    return decorate


def measuring_options(func: Callable) -> Callable:
    """--engine/--device/--workload/--out/--format (--json), the same for `run` and every suite.

    A machine format (json, csv, md) reserves stdout for one document: the command sees ``as_json`` true
    (its own tables go to stderr) and :func:`emit` writes the document in the format asked."""

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        fmt = output_format(_meta("fmt"), bool(kwargs.get("as_json")))
        click.get_current_context().meta["anebench.format"] = fmt
        if kwargs.get("no_save") and kwargs.get("out") is not None:
            raise UserError(f"--no-save and --out {kwargs['out']}: give one (--out saves the results there)")
        kwargs["as_json"] = fmt != "table"
        if takes_format:  # the suites print csv/md tables themselves: they get the one resolved format
            kwargs["fmt"] = fmt
        return func(*args, **kwargs)

    takes_format = "fmt" in inspect.signature(func).parameters

    options = [
        click.option(
            "--engine", "-e", "engines", multiple=True, help="Engine (repeatable); default: best here."
        ),
        click.option(
            "--device", "-d", default=None, help="Device of the engine, e.g. cpu, cuda:0, ane, gpu."
        ),
        click.option(
            "--workload",
            "-w",
            "workloads",
            multiple=True,
            help="Catalog name, lm_head:HIDDENxVOCAB[:DTYPE] or hf:PATH[:TENSOR] (repeatable).",
        ),
        click.option(
            "--out",
            "-o",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Where to save the results (default: a file named after host and time).",
        ),
        click.option("--no-save", is_flag=True, help="Do not save a results file."),
        click.option(
            "--force",
            is_flag=True,
            expose_value=False,
            callback=_remember,
            help="Replace a read-only --out file.",
        ),
        click.option(
            "--format",
            "fmt",
            type=click.Choice(FORMATS),
            default=None,
            expose_value=False,
            callback=_remember,
            help="Results on stdout as table (default), json, csv or md; tables go to stderr then.",
        ),
        click.option(
            "--json", "as_json", is_flag=True, help="Same as --format json: one JSON document on stdout."
        ),
    ]
    wrapped: Callable = checked
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def resolve_targets(engine_names: tuple[str, ...], device: str | None) -> list[Target]:
    return _resolve_targets(engine_names, device)


def announce_workloads(workloads: list[Workload]) -> None:
    """A checkpoint's tensor file is an input of the command, and the user is told which real weights
    are measured (e.g. the tensor chosen)."""
    for workload in workloads:
        for path in getattr(workload.source, "inputs", ()) or ():  # shards, index, config: all inputs
            add_input(path)
        if workload.source is not None:
            say(clean_text(f"{workload.name}: {workload.note}"))


def resolve_workloads(specs: tuple[str, ...], default: str = "llama_lm_head") -> list[Workload]:
    resolved = _resolve_workloads(specs, default)
    announce_workloads(resolved)
    return resolved


def preflight(targets: list[Target], workloads: list[Workload]) -> None:
    for target in targets:
        for workload in workloads:
            preflight_memory(target.engine, target.device, workload)


def check_out_path(out: Path | None) -> None:
    """Refuse, before anything is measured, an --out the output policy would refuse after."""
    if out is not None:
        check_target(out, "--out", bool(_meta("force")), protected_paths())


def default_out_stem(suite: str) -> str:
    """Unique per run: the time to the millisecond and the process id (parallel runs never collide;
    the file is also created only if the name is free)."""
    now = datetime.now()
    stamp = f"{now.strftime('%Y%m%dT%H%M%S')}.{now.microsecond // 1000:03d}"
    return f"anebench-{suite}-{host_label()}-{stamp}-{os.getpid()}"


def default_out_path(suite: str) -> Path:
    return Path.cwd() / f"{default_out_stem(suite)}.json"


def fallback_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("anebench", appauthor=False)) / "unsaved"


def _fallback_dirs() -> Iterator[Path]:
    yield fallback_dir()
    yield Path(tempfile.gettempdir())  # raises when no temp dir is usable: the caller catches it


def keep_unsaved(records: list[ResultRecord], suite: str) -> Path | None:
    """The records in the user data dir (or the temp dir) when they could not be saved where asked;
    None when neither can take them."""
    data = document_json(records).encode()
    places = _fallback_dirs()
    while True:
        try:
            directory = next(places)
            return write_new(directory, default_out_stem(suite), ".json", data)
        except StopIteration:
            return None
        except (OSError, UserError):
            continue


def where_default_goes() -> str:
    """The folder a default-named file goes to, for messages; a deleted working directory is named."""
    try:
        return str(Path.cwd())
    except FileNotFoundError:
        return "the current directory (it no longer exists)"


def save_results(records: list[ResultRecord], suite: str, out: Path | None) -> Path:
    """Save under the output policy; if that fails, keep the records in a fallback file and say where."""
    try:
        if out is not None:
            return save_records(out, records, "--out", bool(_meta("force")), protected_paths())
        return write_new(Path.cwd(), default_out_stem(suite), ".json", document_json(records).encode())
    except (OSError, UserError) as exc:
        reason = error_text(exc) if isinstance(exc, UserError) else f"{exc.strerror or exc}"
        kept = keep_unsaved(records, suite)
        where = (
            f"they are kept in {kept}"
            if kept
            else f"and could not be kept in {fallback_dir()} or the temp dir either: they are lost; "
            "rerun with --json (or --format) to get them on stdout"
        )
        raise UserError(
            f"could not save the {len(records)} measured record(s) to {out or where_default_goes()}: "
            f"{reason}; {where}"
        ) from None


class StepSaver:
    """Saves a multi-step run's records as each step finishes (the file is rewritten whole, atomically),
    so a second Ctrl-C, SIGHUP, SIGKILL or a closed stdout loses only the step that was running. The
    first save picks the name (--out or a default one); later saves replace that file. A failed save
    stops the checkpoints quietly: the final save reports it (and keeps the records elsewhere)."""

    def __init__(self, suite: str, out: Path | None, no_save: bool, steps: int):
        self.suite, self.out = suite, out
        self.path: Path | None = None
        self.count = 0
        self.active = not no_save and steps > 1

    def __call__(self, records: list[ResultRecord]) -> None:
        if not self.active:
            return
        try:
            if self.path is not None:
                save_records(self.path, records, "--out", True, protected_paths())
            elif self.out is not None:
                self.path = save_records(self.out, records, "--out", bool(_meta("force")), protected_paths())
            else:
                data = document_json(records).encode()
                self.path = write_new(Path.cwd(), default_out_stem(self.suite), ".json", data)
            self.count = len(records)
            _remember_saved(self.path, self.count)
        except (OSError, UserError):
            self.active = False

    def final_out(self) -> Path | None:
        """Where the final save goes: the checkpoint file when there is one."""
        return self.path or self.out


# This command's last checkpoint (file, records): read by the CLI's boundary after the command unwound.
SAVED_SO_FAR: dict[str, tuple[Path, int]] = {}


def _remember_saved(path: Path, count: int) -> None:
    SAVED_SO_FAR["last"] = (path, count)


def interrupted_line() -> str:
    """What an interrupt leaves: the checkpointed records, or nothing."""
    last = SAVED_SO_FAR.get("last")
    if last is None:
        return "interrupted: nothing was saved"
    return f"interrupted: the {last[1]} finished record(s) are saved to {clean_text(str(last[0]), False)}"


def hold_signals() -> None:
    """From here on a further Ctrl-C, SIGTERM or SIGHUP cannot cut short the saving of finished work."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                signal.signal(signum, signal.SIG_IGN)


@contextmanager
def progress_bar() -> Iterator[Progress]:
    """The command's progress on stderr (none under -q); its exit restores the cursor however it ends."""
    progress = Progress(
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TextColumn("left"),
        TimeRemainingColumn(),
        console=err_console,
        transient=False,
        disable=verbosity() <= QUIET,
    )
    with progress:
        yield progress


def uncertainty_line(record: ResultRecord) -> str | None:
    """How the record repeated, its headline interval and its within-run CI (the secondary figure)."""
    s, latency = record.summary, record.latency_s()
    if record.provenance != "measured" or latency is None:
        return None
    reps = record.repetitions
    within = "-"
    if s.ci95_low is not None and s.ci95_high is not None and record.gbps:
        weight = record.workload.weight_bytes
        within = GbpsRange(record.gbps, gbps(weight, s.ci95_high), gbps(weight, s.ci95_low)).text()
    if reps is None:
        how = "repetitions not recorded"
    else:
        sizes = sorted({r.runs for r in reps.runs})
        calls = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
        where = "each in a fresh process" if reps.fresh_processes else "in one process"
        how = f"{reps.count} repetition{'s' if reps.count > 1 else ''} x {calls} calls, {where}"
    return (
        f"{how}; between-run GB/s {between_run_cell(record)} (the headline); within-run CI {within} "
        "(this run's samples only)"
    )


def record_label(record: ResultRecord) -> str:
    return clean_text(f"{record.engine.name}:{record.engine.device} {record.workload.name}")


def emit(
    records: list[ResultRecord],
    suite: str,
    out: Path | None,
    no_save: bool,
    as_json: bool,
    title: str = "anebench results",
) -> Path | None:
    """Print the table (stderr under a machine format), what each record adds (how it repeated, device
    time, energy), its warnings once each, save the records, then the document in the format asked."""
    fmt = _meta("format") or ("json" if as_json else "table")
    saved, failure = None, None
    if not no_save:  # saved first: a closed stdout or a full terminal log cannot lose the measurement
        try:
            saved = save_results(records, suite, out)
        except UserError as exc:
            failure = exc
    table = results_table(records, title, full_names=verbosity() >= VERBOSE)
    if fmt == "table":
        out_console().print(table)
    elif verbosity() > QUIET:
        err_console.print(table)
    for record in records:
        label = record_label(record)
        uncertainty = uncertainty_line(record)
        repeated = record.repetitions is not None and record.repetitions.count > 1
        if uncertainty is not None and (suite == "run" or repeated):  # suites' points: the table says enough
            say(f"{label}: {uncertainty}")
        if record.device_gbps:
            say(
                f"{label}: device time gives {record.device_gbps:.2f} GB/s ({clean_text(record.device_time)})"
            )
        for line in ([record.engine.dtype_note] if record.engine.dtype_note else []) + record.warnings:
            warn(line, label)
        if record.energy is not None:
            say(f"{label}: energy {clean_text(energy_line(record.energy))}")
    flush_warnings()
    if saved is not None:
        say(f"saved {len(records)} record(s) to {clean_text(str(saved), keep_newlines=False)}")
    document = {"json": document_json, "csv": records_csv, "md": records_markdown}.get(fmt)
    if document is not None:
        sys.stdout.write(document(records))
        sys.stdout.flush()
    if failure is not None:
        raise failure
    return saved
