"""`anebench ingest`, `anebench report`, `anebench submit`: the results store and what reads it."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from ..errors import UserError
from ..results.importers import IMPORTERS
from ..results.schema import ResultRecord
from ..results.store import IngestReport, open_store
from ..results.validate import InvalidFile, load_result_file
from .common import err_console

# How a file becomes records, by --from name. Each loader raises UserError (InvalidFile for a list
# of problems) and returns only valid records; other formats register themselves here.
Loader = Callable[[Path], list[ResultRecord]]
LOADERS: dict[str, Loader] = {"anebench": load_result_file, **IMPORTERS}


def register_loader(name: str, loader: Loader) -> None:
    LOADERS[name] = loader


def db_option(func):
    return click.option("--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None,
                        help="Results database (default: results.sqlite in the user data dir).")(func)


def _print_problems(error: UserError) -> None:
    err_console.print(f"[red]error:[/red] {error}", highlight=False, soft_wrap=True)
    for line in getattr(error, "problems", [])[:200]:
        err_console.print(f"  {line}", highlight=False, soft_wrap=True, markup=False)


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
        table.add_row(report.source_label, str(report.added), str(report.duplicates))
    (err_console if as_json else Console()).print(table)
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


def register(app: click.Group) -> None:
    for command in (ingest,):
        app.add_command(command)


__all__ = ["LOADERS", "InvalidFile", "Loader", "db_option", "ingest_files", "register", "register_loader"]
