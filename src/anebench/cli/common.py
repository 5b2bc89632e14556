"""What every measuring command shares: options, the results table, saving and the output formats
(the console, verbosity, warnings and progress are cli/console.py's, re-exported here)."""

from __future__ import annotations

import functools
import inspect
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from ..errors import NamesSettings, SettingError, UserError, name_settings, setting
from ..measure.uncertainty import GbpsRange
from ..model import RecordWarning, ResultRecord, gbps
from ..orchestration.campaign import Target
from ..orchestration.campaign import resolve_targets as _resolve_targets
from ..orchestration.campaign import resolve_workloads as _resolve_workloads
from ..orchestration.preflight import preflight_memory
from ..report.escape import clean_text
from ..results.files import document_json, save_records
from ..system.energy_figures import energy_line
from ..system.host import host_label
from ..util.outputs import atomic_write_text, check_target, write_new
from ..workloads import Workload
from .boundary import error_text
from .console import (
    NORMAL,
    QUIET,
    VERBOSE,
    FollowingConsole,
    WarningLog,
    _meta,
    err_console,
    flush_warnings,
    out_console,
    progress_bar,
    say,
    verbosity,
    warn,
    warnings_log,
)
from .exports import EXPORT_FORMATS, export_text, format_for
from .options import (
    FORMATS,
    force_option,
    format_option,
    json_option,
    out_file_option,
    remember_value,
)
from .tables import between_run_cell, results_table

MEASURING_FORMATS = ("table", "json", "jsonl", "csv", "md")


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
        out = kwargs.get("out")
        # an unknown extension: refused before anything runs, after the output policy's own refusals (a
        # store's side file); an existing file may be one of the command's inputs, which the command's
        # check_out_path (once it knows its inputs) names first
        if out is not None and not os.path.lexists(out):
            check_out_path(out)
        if takes_format:  # the suites print csv/md tables themselves: they get the one resolved format
            kwargs["fmt"] = fmt
        return func(*args, **kwargs)

    takes_format = "fmt" in inspect.signature(func).parameters

    options: list[Callable[[Callable], Callable]] = [
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
        out_file_option(
            "Where to save the results (default: a file named after host and time); the format follows "
            "the extension: .json (default), .jsonl, .csv, .md, .txt (the table)."
        ),
        click.option("--no-save", is_flag=True, help="Do not save a results file."),
        force_option(remember=True),
        format_option(
            *MEASURING_FORMATS,
            help="Results on stdout as table (default), json, jsonl, csv or md; tables go to stderr then.",
            remember=True,
        ),
        json_option("Same as --format json: one JSON document on stdout."),
        *(
            click.option(
                f"--export-{fmt}",
                f"export_{fmt}",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                expose_value=False,
                callback=remember_value,
                help=f"Also write the results as {fmt} to this file (any --export-* may be combined).",
            )
            for fmt in EXPORT_FORMATS
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
    """Refuse, before anything is measured, an --out (or --export-FORMAT file) the output policy would
    refuse after, or whose extension names no format."""
    if out is not None:
        check_target(out, "--out", bool(_meta("force")), protected_paths())
        format_for(out)
    for fmt, path in exports():
        check_target(path, f"--export-{fmt}", bool(_meta("force")), protected_paths())


def exports() -> list[tuple[str, Path]]:
    """The --export-FORMAT files asked for: (format, path)."""
    return [(fmt, Path(path)) for fmt in EXPORT_FORMATS if (path := _meta(f"export_{fmt}"))]


def write_exports(records: list[ResultRecord], suite: str) -> None:
    """Each --export-FORMAT file, in its format (after the results are saved: they come first)."""
    for fmt, path in exports():
        written = atomic_write_text(
            path, export_text(fmt, records, suite), f"--export-{fmt}", bool(_meta("force")), protected_paths()
        )
        say(f"exported {len(records)} record(s) as {fmt} to {clean_text(str(written), keep_newlines=False)}")


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


def save_out(out: Path, records: list[ResultRecord], suite: str, force: bool) -> Path:
    """--out in the format its extension names (the results document for .json)."""
    fmt = format_for(out)
    if fmt == "json":
        return save_records(out, records, "--out", force, protected_paths())
    return atomic_write_text(out, export_text(fmt, records, suite), "--out", force, protected_paths())


def save_results(records: list[ResultRecord], suite: str, out: Path | None) -> Path:
    """Save under the output policy; if that fails, keep the records in a fallback file and say where."""
    try:
        if out is not None:
            return save_out(out, records, suite, bool(_meta("force")))
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
                save_out(self.path, records, self.suite, True)
            elif self.out is not None:
                self.path = save_out(self.out, records, self.suite, bool(_meta("force")))
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
        if record.engine.dtype_note:
            warn(RecordWarning(kind="note", text=record.engine.dtype_note), label)
        for warning in record.warnings:
            warn(warning, label)
        if record.energy is not None:
            say(f"{label}: energy {clean_text(energy_line(record.energy))}")
    flush_warnings()
    if saved is not None:
        say(f"saved {len(records)} record(s) to {clean_text(str(saved), keep_newlines=False)}")
    write_exports(records, suite)
    if fmt != "table":
        sys.stdout.write(export_text(fmt, records, suite))
        sys.stdout.flush()
    if failure is not None:
        raise failure
    return saved


__all__ = [
    "NORMAL",
    "QUIET",
    "VERBOSE",
    "FORMATS",
    "FollowingConsole",
    "WarningLog",
    "err_console",
    "flush_warnings",
    "format_option",
    "out_console",
    "progress_bar",
    "say",
    "verbosity",
    "warn",
    "warnings_log",
]
