"""What every measuring command shares: options, progress, the results table, saving and --json."""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ..engines import best_engine, resolve_device, usable_engine
from ..engines.base import Engine
from ..errors import UserError
from ..model import ResultRecord
from ..orchestration.session import preflight_memory
from ..report.escape import clean_text
from ..report.tables import fmt_halfwidth
from ..results.files import document_json, save_records
from ..system.host import host_label
from ..system.power import energy_line
from ..util.outputs import check_target, write_new
from ..workloads import Workload, resolve_workload

# emoji=False: names such as hf:m:lm_head.weight contain ":m:", which Rich would turn into an emoji.
err_console = Console(stderr=True, emoji=False)
PIPED_WIDTH = 160  # Rich assumes 80 columns off a terminal, which folds every cell of a results table


def out_console() -> Console:
    """The console for stdout: no emoji codes, and wide enough for tables when piped to a file."""
    console = Console(emoji=False)
    return console if console.is_terminal else Console(emoji=False, width=PIPED_WIDTH)


@dataclass
class Target:
    engine: Engine
    device: str


def _remember(ctx: click.Context, param: click.Parameter, value: object) -> object:
    ctx.meta[f"anebench.{param.name}"] = value
    return value


def _meta(key: str, default: object = None) -> object:
    ctx = click.get_current_context(silent=True)
    return ctx.meta.get(f"anebench.{key}", default) if ctx is not None else default


def add_input(path: Path) -> None:
    """A file this command reads: no output of the command may replace it."""
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        ctx.meta.setdefault("anebench.inputs", []).append(Path(path))


def protected_paths() -> list[tuple[Path, str]]:
    """The command's inputs and, with --store, the results store: never an output."""
    protected = [(p, "an input of this command") for p in _meta("inputs", []) or []]
    if _meta("store"):
        from ..results.store import default_db_path

        db = _meta("db") or default_db_path()
        protected.append((Path(db), "the results store (--db)"))
    return protected


def measuring_options(func: Callable) -> Callable:
    """--engine/--device/--workload/--out/--json, the same for `run` and every suite."""
    options = [
        click.option("--engine", "-e", "engines", multiple=True, help="Engine (repeatable); default: best here."),
        click.option("--device", "-d", default=None, help="Device of the engine, e.g. cpu, cuda:0, ane, gpu."),
        click.option("--workload", "-w", "workloads", multiple=True,
                     help="Catalog name, lm_head:HIDDENxVOCAB[:DTYPE] or hf:PATH[:TENSOR] (repeatable)."),
        click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Where to save the results (default: a file named after host and time)."),
        click.option("--no-save", is_flag=True, help="Do not save a results file."),
        click.option("--force", is_flag=True, expose_value=False, callback=_remember,
                     help="Replace a read-only --out file."),
        click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON document on stdout."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def resolve_targets(engine_names: tuple[str, ...], device: str | None) -> list[Target]:
    if not engine_names:
        engine, default_device = best_engine()
        return [Target(engine, resolve_device(engine, device) if device else default_device)]
    return [Target(e, resolve_device(e, device)) for e in (usable_engine(n) for n in engine_names)]


def resolve_workloads(specs: tuple[str, ...], default: str = "llama_lm_head") -> list[Workload]:
    resolved = [resolve_workload(s) for s in (specs or (default,))]
    for workload in resolved:
        entry = getattr(workload.source, "entry", None)  # a checkpoint's tensor file is an input
        if entry is not None:
            add_input(entry.path)
        if workload.source is not None:  # say which real weights are measured (e.g. the tensor chosen)
            err_console.print(clean_text(f"{workload.name}: {workload.note}"), markup=False, highlight=False,
                              soft_wrap=True)
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
    return f"anebench-{suite}-{host_label()}-{now.strftime('%Y%m%dT%H%M%S')}.{now.microsecond // 1000:03d}-{os.getpid()}"


def default_out_path(suite: str) -> Path:
    return Path.cwd() / f"{default_out_stem(suite)}.json"


def fallback_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("anebench", appauthor=False)) / "unsaved"


def keep_unsaved(records: list[ResultRecord], suite: str) -> Path | None:
    """The records in the user data dir (or the temp dir) when they could not be saved where asked."""
    data = document_json(records).encode()
    for directory in (fallback_dir(), Path(tempfile.gettempdir())):
        try:
            return write_new(directory, default_out_stem(suite), ".json", data)
        except (OSError, UserError):
            continue
    return None


def save_results(records: list[ResultRecord], suite: str, out: Path | None) -> Path:
    """Save under the output policy; if that fails, keep the records in a fallback file and say where."""
    try:
        if out is not None:
            return save_records(out, records, "--out", bool(_meta("force")), protected_paths())
        return write_new(Path.cwd(), default_out_stem(suite), ".json", document_json(records).encode())
    except (OSError, UserError) as exc:
        reason = str(exc) if isinstance(exc, UserError) else f"{exc.strerror or exc}"
        kept = keep_unsaved(records, suite)
        where = f"they are kept in {kept}" if kept else "and could not be kept anywhere: use --json"
        raise UserError(f"could not save the {len(records)} measured record(s) "
                        f"to {out or Path.cwd()}: {reason}; {where}") from None


@contextmanager
def progress_bar():
    progress = Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=False,
    )
    with progress:
        yield progress


HEADLINE_CAPTION = ("ms: median of all timed calls; ±95%: the between-run interval (the headline); "
                    "within-run CI, device time and warnings below")
NUMERIC_COLUMNS = ("MB", "ms", "±95%", "GB/s")


def between_run_cell(record: ResultRecord) -> str:
    """The headline interval as ±x.x% of the median (the larger side), or why there is none."""
    interval, latency = record.between_run(), record.latency_s()
    if record.provenance != "measured":
        return "point"
    if interval is None or latency is None:
        return "unknown"
    low, high = interval
    return fmt_halfwidth(max(high / latency - 1, 1 - low / latency))


def fmt_ms(ms: float) -> str:
    """Four or five significant digits in at most 6 characters up to 9999.9 ms."""
    return f"{ms:.3f}" if ms < 10 else f"{ms:.2f}" if ms < 100 else f"{ms:.1f}"


def results_table(records: list[ResultRecord], title: str = "anebench results") -> Table:
    """One row per record, readable at 80 columns: only the workload's name folds; the full warnings,
    the within-run CI and device time follow the table (emit)."""
    table = Table(title=title, caption=HEADLINE_CAPTION)
    for column in ("engine:dev", "workload", "dtype", "MB", "ms", "±95%", "GB/s"):
        table.add_column(column, justify="right" if column in NUMERIC_COLUMNS else "left",
                         no_wrap=column != "workload", overflow="fold")
    for record in records:
        latency = record.latency_s()
        table.add_row(*(clean_text(cell) for cell in (
            f"{record.engine.name}:{record.engine.device}",
            record.workload.name,
            record.engine.run_dtype,
            f"{record.workload.weight_bytes / 1e6:.1f}",
            "-" if latency is None else fmt_ms(latency * 1e3),
            between_run_cell(record),
            f"{record.gbps:.2f}" if record.gbps else "-",
        )))
    return table


def uncertainty_line(record: ResultRecord) -> str | None:
    """How the record repeated, its headline interval and its within-run CI (the secondary figure)."""
    s, latency = record.summary, record.latency_s()
    if record.provenance != "measured" or latency is None:
        return None
    reps = record.repetitions
    within = "-"
    if s.ci95_low is not None and s.ci95_high is not None:
        within = fmt_halfwidth(max(s.ci95_high / latency - 1, 1 - s.ci95_low / latency))
    if reps is None:
        how = "repetitions not recorded"
    else:
        sizes = sorted({r.runs for r in reps.runs})
        calls = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
        where = "each in a fresh process" if reps.fresh_processes else "in one process"
        how = f"{reps.count} repetition{'s' if reps.count > 1 else ''} x {calls} calls, {where}"
    return (f"{how}; between-run {between_run_cell(record)} (the headline); within-run CI {within} "
            "(this run's samples only)")


def emit(records: list[ResultRecord], suite: str, out: Path | None, no_save: bool, as_json: bool,
         title: str = "anebench results") -> Path | None:
    """Print the table (stderr under --json), save the records, print the JSON document if asked."""
    (err_console if as_json else out_console()).print(results_table(records, title))
    for record in records:
        label = clean_text(f"{record.engine.name}:{record.engine.device} {record.workload.name}")
        uncertainty = uncertainty_line(record)
        repeated = record.repetitions is not None and record.repetitions.count > 1
        if uncertainty is not None and (suite == "run" or repeated):  # suites' points: the table says enough
            err_console.print(f"{escape(label)}: {escape(uncertainty)}", highlight=False, soft_wrap=True)
        if record.device_gbps:
            err_console.print(f"{escape(label)}: device time gives {record.device_gbps:.2f} GB/s "
                              f"({escape(record.device_time)})", highlight=False, soft_wrap=True)
        for line in ([record.engine.dtype_note] if record.engine.dtype_note else []) + record.warnings:
            err_console.print(f"[yellow]{escape(label)}:[/yellow] {escape(clean_text(line))}", highlight=False,
                              soft_wrap=True)
        if record.energy is not None:
            err_console.print(f"{escape(label)}: energy {escape(energy_line(record.energy))}",
                              highlight=False, soft_wrap=True)
    saved, failure = None, None
    if not no_save:
        try:
            saved = save_results(records, suite, out)
            err_console.print(f"saved {len(records)} record(s) to {escape(str(saved))}", highlight=False,
                              soft_wrap=True)
        except UserError as exc:
            failure = exc
    if as_json:
        sys.stdout.write(document_json(records))
        sys.stdout.flush()
    if failure is not None:
        raise failure
    return saved
