"""`anebench ingest`, `anebench report`, `anebench submit`: the results store and what reads it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import UserError
from ..model import ResultRecord
from ..report.escape import clean_text
from ..results.importers import IMPORTERS
from ..results.store import IngestReport, open_store
from ..results.validate import InvalidFile, load_result_file
from ..util.outputs import check_target
from .common import err_console, out_console

# How a file becomes records, by --from name. Each loader raises UserError (InvalidFile for a list
# of problems) and returns only valid records; other formats register themselves here.
Loader = Callable[[Path], list[ResultRecord]]
LOADERS: dict[str, Loader] = {"anebench": load_result_file, **IMPORTERS}


def db_option(func):
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="Results database (default: results.sqlite in the user data dir).")(func)


def _print_problems(error: UserError) -> None:
    err_console.print(f"[red]error:[/red] {escape(clean_text(str(error)))}", highlight=False, soft_wrap=True)
    for line in getattr(error, "problems", [])[:200]:
        err_console.print(f"  {clean_text(line)}", highlight=False, soft_wrap=True, markup=False)


def ingest_files(store, paths: list[Path], loader: Loader) -> tuple[list[IngestReport], list[UserError]]:
    """Each file in its own transaction: a bad file stores nothing and does not stop the others."""
    reports, failures = [], []
    for path in paths:
        try:
            reports.append(store.ingest(loader(path), str(path)))
        except UserError as exc:
            failures.append(exc)
    return reports, failures


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--published", is_flag=True, help="Import anemll-bench's published figures (package data).")
@click.option("--from", "source_format", default="anebench", show_default=True,
              help="Format of FILES: anebench, anemll-bench (its JSON, pasted or in its HTML report).")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print exactly one JSON document on stdout.")
def ingest(files: tuple[Path, ...], published: bool, source_format: str, db: Path | None,
           as_json: bool) -> None:
    """Validate result files and store them (one transaction per file; duplicates are no-ops)."""
    if not files and not published:
        raise UserError("ingest: give result FILES and/or --published")
    if source_format not in LOADERS:
        raise UserError(f"--from {source_format!r} is not a known format; valid: {', '.join(sorted(LOADERS))}")
    loader = LOADERS[source_format]
    with open_store(db) as store:
        reports: list[IngestReport] = []
        if published:
            from ..results.published import PUBLISHED_CSV, published_records

            reports.append(store.ingest(published_records(), f"anebench:{PUBLISHED_CSV}"))
        file_reports, failures = ingest_files(store, list(files), loader)
        reports += file_reports
        total = store.count()
    table = Table(title=f"ingested into {store.path}")
    for column in ("source", "added", "duplicates"):
        table.add_column(column, justify="left" if column == "source" else "right")
    for report in reports:
        table.add_row(escape(clean_text(report.source_label)), str(report.added), str(report.duplicates))
    (err_console if as_json else out_console()).print(table)
    for failure in failures:
        _print_problems(failure)
    if as_json:
        sys.stdout.write(json.dumps({
            "db": str(store.path),
            "records_in_store": total,
            "ingested": [{"source": r.source_label, "added": r.added, "duplicates": r.duplicates}
                         for r in reports],
            "failed": [{"error": str(f), "problems": getattr(f, "problems", [str(f)])} for f in failures],
        }) + "\n")
    if failures:
        sys.exit(UserError.exit_code)


@click.command()
@click.option("--format", "fmt", type=click.Choice(["md", "html", "csv", "json"]), default="md",
              show_default=True, help="Output format.")
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Write the report here (Markdown also writes its chart PNGs beside it).")
@click.option("--force", is_flag=True, help="Replace a read-only --out file.")
@db_option
def report(fmt: str, out: Path | None, force: bool, db: Path | None) -> None:
    """Generate the results matrix by chip from the store (tiers, utilisation, verdicts, coverage)."""
    from ..report.build import render_report, renderable
    from ..results.store import default_db_path

    db_path = db if db is not None else default_db_path()
    if out is not None:
        check_target(out, "--out", force, [(db_path, "the results store (--db)")])
    with open_store(db_path, create=False, readonly=True) as store:  # a reader never creates a database
        rows = store.rows()
        source = f"store {store.path}"
    if not rows:
        raise UserError(f"--db {store.path}: the store is empty; run `anebench ingest --published` or "
                        "`anebench ingest FILE...` first")
    records, skipped = renderable(rows)
    for record_id, why in skipped:
        err_console.print(f"[yellow]warning:[/yellow] record {record_id[:16]} skipped: it cannot be rendered "
                          f"({escape(clean_text(why))}); `anebench store remove {record_id[:16]}` deletes it",
                          highlight=False, soft_wrap=True)
    if not records:
        raise UserError(f"--db {store.path}: no record in the store can be rendered")
    text = render_report(records, fmt, out, source, force=force, protected=[(db_path, "the results store (--db)")])
    if out is None:
        sys.stdout.write(text)
    else:
        err_console.print(f"wrote {fmt} report of {len(records)} record(s) to {escape(str(out))}", highlight=False)


@click.command()
@click.argument("result", type=click.Path(path_type=Path))
@click.option("--out-dir", type=click.Path(file_okay=False, path_type=Path), default=Path("."),
              show_default=True, help="Where to write the submission file and the issue body.")
@click.option("--drop-host-ids", is_flag=True,
              help="Remove the host fingerprint, machine model, host and login names, paths and private "
                   "model folder names, everywhere (file names too).")
@click.option("--force", is_flag=True, help="Replace read-only output files.")
def submit(result: Path, out_dir: Path, drop_host_ids: bool, force: bool) -> None:
    """Validate RESULT.json and write a submission file plus a Markdown issue body (no network)."""
    from ..report.submission import write_submission

    if not out_dir.is_dir():
        raise UserError(f"--out-dir {out_dir}: no such directory")
    try:
        submission, body = write_submission(result, out_dir, drop_host_ids, force)
    except InvalidFile as exc:
        _print_problems(exc)
        sys.exit(UserError.exit_code)
    click.echo(f"submission: {clean_text(str(submission))}")
    click.echo(f"issue body: {clean_text(str(body))}")


@click.group()
def store() -> None:
    """Manage the results store."""


@store.command("remove")
@click.argument("record_ids", nargs=-1, required=True)
@db_option
def store_remove(record_ids: tuple[str, ...], db: Path | None) -> None:
    """Delete records by id (at least 8 leading hex digits), e.g. one that a report skips."""
    with open_store(db, create=False) as opened:
        for prefix in record_ids:
            removed = opened.remove(prefix.strip().lower())
            err_console.print(f"removed record {removed} from {escape(str(opened.path))}", highlight=False)


def store_measured(records: list[ResultRecord], db: Path | None) -> None:
    """`anebench run --store`: the run's records into the store, one transaction."""
    with open_store(db) as store:
        done = store.ingest(records, "anebench run")
        err_console.print(f"stored {done.added} record(s) in {store.path} ({done.duplicates} already there)")


def store_options(func):
    """`run --store [--db PATH]`; the values wait in the click context for finish_run."""

    def remember(ctx: click.Context, param: click.Parameter, value):
        ctx.meta[f"anebench.{param.name}"] = value
        return value

    func = click.option("--db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        expose_value=False, callback=remember,
                        help="Results database for --store (default: the user data dir).")(func)
    return click.option("--store", is_flag=True, expose_value=False, callback=remember,
                        help="Also store the measured records in the results database.")(func)


def finish_run(records: list[ResultRecord], as_json: bool) -> None:
    """After a run is saved: store it if asked, then show it beside the published figures (stderr
    under --json, so stdout stays one JSON document)."""
    meta = click.get_current_context().meta
    if meta.get("anebench.store"):
        store_measured(records, meta.get("anebench.db"))
    show_family_comparison(records, err_console if as_json else out_console())


def show_family_comparison(records: list[ResultRecord], console: Console) -> None:
    """End of `anebench run`: the user's figure beside the published ones of the same chip family,
    each published point judged against the run's between-run interval."""
    from ..report.compare import family_comparison, versus_label
    from ..report.tables import fmt_halfwidth

    rows, notes = family_comparison(records)
    if rows:
        table = Table(title="your run beside published figures (same chip family, same workload fingerprint)")
        for column in ("chip", "config", "workload", "engine:device", "GB/s", "vs run", "latency ms", "source"):
            numeric = column in ("GB/s", "latency ms", "vs run")
            table.add_column(column, justify="right" if numeric else "left")
        for row in rows:
            gbps = f"{row.gbps:.2f}" if row.gbps else "-"
            if row.yours:
                gbps += f" {fmt_halfwidth(row.halfwidth) or '(± unknown)'}"
            versus = "" if row.yours else versus_label(row.versus)
            table.add_row(clean_text(row.chip), clean_text(row.config or "-"), clean_text(row.workload),
                          clean_text(row.engine), gbps, versus,
                          f"{row.latency_ms:.2f} ({row.statistic})" if row.latency_ms else "-", clean_text(row.source),
                          style="bold" if row.yours else None)
        console.print(table)
        console.print("published figures are points (their sources give no interval); 'vs run': their GB/s "
                      "against yours, 'sig.' outside your run's between-run 95% interval, 'n.s.' inside it, "
                      "'?' where your run has one repetition", highlight=False, markup=False, soft_wrap=True)
    for note in notes:
        console.print(clean_text(note), highlight=False, markup=False, soft_wrap=True)


def register(app: click.Group) -> None:
    for command in (ingest, report, submit, store):
        app.add_command(command)


__all__ = [
    "LOADERS",
    "InvalidFile",
    "Loader",
    "db_option",
    "finish_run",
    "ingest_files",
    "register",
    "show_family_comparison",
    "store_measured",
    "store_options",
]
