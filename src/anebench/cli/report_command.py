"""`anebench report`: the results matrix by chip from the store, through the one set of exporters.

stdout gets the report in --format (md by default); --out writes it in the format its extension names
(.md, .html, .csv, .json, .jsonl, .txt; --format where the name has no extension); each --export-FORMAT
file gets its format too. A Markdown file writes its chart PNGs in ``STEM_files/`` beside it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click
from rich.markup import escape

from ..errors import UserError
from ..report.build import Report
from ..report.term_table import TermTable
from ..util.outputs import Protected, atomic_write_text, check_target
from . import options
from .common import err_console, flush_warnings, warn
from .exports import BY_EXTENSION, Exportable, export_options, plain_text, render, requested
from .tables import FittingTable

REPORT_FORMATS = ("md", "html", "csv", "json", "jsonl", "table")
REPORT_EXTENSIONS = {**BY_EXTENSION, ".html": "html", ".htm": "html"}


class ReportExport(Exportable):
    """The report for the exporters: its document, entries, CSV, Markdown (charts beside ``out``)."""

    def __init__(self, report: Report, out: Path | None = None, force: bool = False,
                 protected: Protected = ()):
        self.report, self.out, self.force, self.protected = report, out, force, list(protected)

    def document(self) -> str:
        return self.report.document()

    def lines(self) -> list[dict[str, Any]]:
        return self.report.lines()

    def tables(self) -> list[TermTable]:
        return self.report.tables()

    def csv(self) -> str:
        return self.report.csv()

    def markdown(self) -> str:
        return self.report.markdown(self.out, self.force, self.protected)

    def text(self) -> str:
        """The sections as the terminal lays tables out: as columns where they fit, else one block per
        row, so no number is ever folded (the matrix has a dozen columns)."""
        laid_out = [FittingTable.of(t, "\n".join(t.notes)) for t in self.tables()]
        return plain_text([*self.report.header(), *laid_out])


def report_text(report: Report, fmt: str, out: Path | None, force: bool, protected: Protected) -> str:
    if fmt == "html":
        return report.html()
    return render(fmt, ReportExport(report, out, force, protected))


def out_format(out: Path, fmt: str | None) -> str:
    """The format of --out: its extension's; --format where the name has no extension; both and
    different, or neither known, is refused in one line."""
    suffix = out.suffix.lower()
    named = REPORT_EXTENSIONS.get(suffix) if suffix else None
    if named is None and fmt is not None:
        return fmt
    if named is None:
        known = ", ".join(s for s in REPORT_EXTENSIONS if s)
        raise UserError(
            f"--out {out}: unknown format '{suffix}': give a name ending in {known} (or --format)"
        )
    if fmt is not None and fmt != named:
        raise UserError(f"--format {fmt} and --out {out}: the extension names {named}; give one of them")
    return named


@click.command()
@options.format_option(
    *REPORT_FORMATS,
    help="md (default), html, csv, json, jsonl or table: the report on stdout, or the format of an --out "
    "whose name has no extension.",
)
@options.out_file_option(
    "Write the report here; the format follows the extension: .md (its chart PNGs beside it), .html, "
    ".csv, .json, .jsonl, .txt (the tables)."
)
@export_options
@options.force_option()
@options.db_option()
def report(fmt: str | None, out: Path | None, force: bool, db: Path | None, **exports: Path | None) -> None:
    """Generate the results matrix by chip from the store (tiers, utilisation, verdicts, coverage)."""
    from ..report.build import renderable
    from ..results.store import default_db_path, open_store

    db_path = db if db is not None else default_db_path()
    protected = [(db_path, "the results store (--db)")]
    files = requested(None, exports)
    if out is not None:
        check_target(out, "--out", force, protected)
        files.insert(0, (out_format(out, fmt), "--out", out))
    for _, flag, path in files:
        check_target(path, flag, force, protected)
    with open_store(db_path, create=False, readonly=True) as store:  # a reader never creates a database
        rows = store.rows()
        source = f"store {store.path}"
    if not rows:
        raise UserError(
            f"--db {store.path}: the store is empty; run `anebench ingest --published` or "
            "`anebench ingest FILE...` first"
        )
    records, skipped = renderable(rows)
    for record_id, why in skipped:
        warn(
            f"record {record_id[:16]} skipped: it cannot be rendered ({why}); "
            f"`anebench store remove {record_id[:16]}` deletes it"
        )
    flush_warnings()
    if not records:
        raise UserError(f"--db {store.path}: no record in the store can be rendered")
    built = Report(records, source)
    if out is None:
        sys.stdout.write(report_text(built, fmt or "md", None, force, protected))
    for file_fmt, flag, path in files:
        text = report_text(built, file_fmt, path, force, protected)
        atomic_write_text(path, text, flag, force, protected)
        err_console.print(
            f"wrote {file_fmt} report of {len(records)} record(s) to {escape(str(path))}", highlight=False
        )
