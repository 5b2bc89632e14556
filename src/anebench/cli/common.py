"""What every measuring command shares: options, progress, the results table, saving and --json."""

from __future__ import annotations

import sys
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
from ..results.files import document_json, save_records
from ..model import ResultRecord
from ..session import preflight_memory
from ..system.host import host_label
from ..system.power import energy_line
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
        if workload.source is not None:  # say which real weights are measured (e.g. the tensor chosen)
            err_console.print(f"{workload.name}: {workload.note}", markup=False, highlight=False, soft_wrap=True)
    return resolved


def preflight(targets: list[Target], workloads: list[Workload]) -> None:
    for target in targets:
        for workload in workloads:
            preflight_memory(target.engine, target.device, workload)


def check_out_path(out: Path | None) -> None:
    if out is not None and out.exists() and out.is_dir():
        raise UserError(f"--out {out}: is a directory; give a file name")
    if out is not None and not out.parent.exists():
        raise UserError(f"--out {out}: directory {out.parent} does not exist")


def default_out_path(suite: str) -> Path:
    stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
    return Path.cwd() / f"anebench-{suite}-{host_label()}-{stamp}.json"


@contextmanager
def progress_bar():
    progress = Progress(
        TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err_console, transient=False,
    )
    with progress:
        yield progress


def results_table(records: list[ResultRecord], title: str = "anebench results") -> Table:
    table = Table(title=title)
    for column in ("engine", "device", "workload", "dtype", "MB", "ms (median ± CI)", "GB/s", "warnings"):
        table.add_column(column, justify="right" if column in ("MB", "GB/s") else "left")
    for record in records:
        s = record.summary
        latency = record.latency_s()
        if latency is None:
            timing = "-"
        elif s.ci95_low is not None and s.ci95_high is not None:
            timing = f"{latency * 1e3:.3f} ± {(s.ci95_high - s.ci95_low) / 2 * 1e3:.3f}"
        else:
            timing = f"{latency * 1e3:.3f} ({record.method.statistic})"
        gbps = f"{record.gbps:.2f}" if record.gbps else "-"
        if record.device_gbps:
            gbps += f" (device {record.device_gbps:.2f})"
        table.add_row(
            record.engine.name,
            record.engine.device,
            record.workload.name,
            record.engine.run_dtype,
            f"{record.workload.weight_bytes / 1e6:.2f}",
            timing,
            gbps,
            ", ".join(w.split(":", 1)[0] for w in record.warnings) or "-",
        )
    return table


def emit(records: list[ResultRecord], suite: str, out: Path | None, no_save: bool, as_json: bool,
         title: str = "anebench results") -> Path | None:
    """Print the table (stderr under --json), save the records, print the JSON document if asked."""
    (err_console if as_json else out_console()).print(results_table(records, title))
    for record in records:
        label = f"{record.engine.name}:{record.engine.device} {record.workload.name}"
        for line in ([record.engine.dtype_note] if record.engine.dtype_note else []) + record.warnings:
            err_console.print(f"[yellow]{escape(label)}:[/yellow] {escape(line)}", highlight=False, soft_wrap=True)
        if record.energy is not None:
            err_console.print(f"{escape(label)}: energy {escape(energy_line(record.energy))}",
                              highlight=False, soft_wrap=True)
    saved = None
    if not no_save:
        saved = out or default_out_path(suite)
        save_records(saved, records)
        err_console.print(f"saved {len(records)} record(s) to {saved}")
    if as_json:
        sys.stdout.write(document_json(records))
        sys.stdout.flush()
    return saved
