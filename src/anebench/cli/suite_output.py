"""What the suite commands share after measuring: the suite's tables, warnings once each, saving, extra
exports, and plots beside the results."""

from __future__ import annotations

from pathlib import Path

import click

from ..errors import UserError
from ..model import ResultRecord
from ..report.escape import clean_text
from ..report.suite_terminal import TermTable, as_csv, as_markdown, suite_tables
from .console import print_table, say
from .exports import export_text
from .saving import save_results, write_exports
from .settings import Settings
from .terminal import Warnings


def show_tables(tables: list[TermTable], fmt: str) -> None:
    """table: stdout; json, jsonl: stderr (stdout holds the one document); csv, md: the tables on stdout."""
    if fmt in ("table", "json", "jsonl"):
        for table in tables:
            print_table(table, stderr=fmt != "table")
        return
    click.echo(as_csv(tables) if fmt == "csv" else as_markdown(tables), nl=False)


def finish(records: list[ResultRecord], suite: str, settings: Settings, out: Path | None = None,
           tables: list[TermTable] | None = None, file_label: str | None = None) -> Path | None:
    """The suite's tables, its warnings once each, energy per record, then save (to ``out``, default the
    settings' --out), export and (json, jsonl) the document. ``file_label``: the suite's name in a
    default results file name (default ``suite``). The records are saved first: a closed stdout or a full
    terminal log cannot lose them."""
    fmt = settings.format
    saved, failure = None, None
    if not settings.no_save:
        try:
            saved = save_results(records, file_label or suite, out or settings.out, settings)
        except UserError as exc:
            failure = exc
    show_tables(suite_tables(suite, records) if tables is None else tables, fmt)
    warnings = Warnings()
    warnings.add_records(records)
    warnings.print()
    for record in records:
        if record.energy is not None:
            from ..system.energy_figures import energy_line

            say(f"{record.engine.name}:{record.engine.device} {record.workload.name}: energy "
                f"{energy_line(record.energy)}")
    device = [r.device_gbps for r in records if r.device_gbps]
    if device:
        say(f"device time ({records[0].device_time}): {min(device):.3g}-{max(device):.3g} GB/s over "
            f"{len(device)} record(s); each record's figure is in the results file")
    if saved is not None:
        say(f"saved {len(records)} record(s) to {clean_text(str(saved), keep_newlines=False)}")
    write_exports(records, suite, settings)
    if settings.store and records:  # --store, as in `run`: every suite's records can be stored
        from .results import store_measured

        store_measured(records, settings.db, f"anebench {suite}")
    if fmt in ("json", "jsonl"):
        click.echo(export_text(fmt, records, suite), nl=False)
    if failure is not None:
        raise failure
    return saved


def stem_for(plot: Path | None, saved: Path | None, suffix: str, label: str, many: bool) -> Path | None:
    tail = f".{suffix}" + (f".{label}" if many else "")
    if plot is not None:
        return plot.parent / f"{plot.name}{tail if many else ''}"
    return saved.parent / f"{saved.stem}{tail}" if saved else None


def write_plot(stem: Path | None, draw, *args) -> None:
    """draw(*args, stem) -> the paths written; or say why there is no plot."""
    if stem is None:
        say("no plot written: --no-save without --plot")
        return
    say("plots: " + ", ".join(str(p) for p in draw(*args, stem)))
