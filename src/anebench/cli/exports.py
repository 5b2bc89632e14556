"""One exporter per output format, used by `run` and every suite: for stdout (--format), for the results
file (--out, its format inferred from the extension) and for extra files (--export-csv F --export-json F
...), so one command can write several formats at once.

Formats: json (the results document, the only one anebench loads back), jsonl (one record per line),
csv and md (the command's tables: `run`'s results table, a suite's own tables), table (the tables as
printed, plain text).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from ..errors import UserError
from ..model import ResultRecord
from ..report.suite_terminal import as_csv, as_markdown, suite_tables
from ..results.files import document_json
from .tables import records_csv, records_markdown, results_table

EXPORT_FORMATS = ("json", "jsonl", "csv", "md", "table")
# --out's extension -> the format written there; a name without an extension is the results document.
BY_EXTENSION = {".json": "json", ".jsonl": "jsonl", ".csv": "csv", ".md": "md", ".txt": "table", "": "json"}
TEXT_WIDTH = 100  # a table exported as text: wide enough for every table at its designed width


def format_for(path: Path, flag: str = "--out") -> str:
    """The format a file's extension names; an extension no exporter knows is refused in one line."""
    suffix = Path(path).suffix.lower()
    fmt = BY_EXTENSION.get(suffix)
    if fmt is None:
        known = ", ".join(s for s in BY_EXTENSION if s)
        raise UserError(
            f"{flag} {path}: unknown format '{suffix}': give a name ending in {known} (or --export-FORMAT)"
        )
    return fmt


def _jsonl(records: list[ResultRecord], suite: str) -> str:
    return "".join(
        (r if r.id else r.with_id()).model_dump_json(by_alias=True) + "\n" for r in records
    )


def _csv(records: list[ResultRecord], suite: str) -> str:
    return records_csv(records) if suite == "run" else as_csv(suite_tables(suite, records))


def _md(records: list[ResultRecord], suite: str) -> str:
    return records_markdown(records) if suite == "run" else as_markdown(suite_tables(suite, records))


def _table(records: list[ResultRecord], suite: str) -> str:
    from .console import rich_table

    buffer = io.StringIO()
    text = Console(file=buffer, width=TEXT_WIDTH, emoji=False, highlight=False, color_system=None)
    if suite == "run":
        text.print(results_table(records, full_names=True))
    else:
        for table in suite_tables(suite, records):
            text.print(rich_table(table))
            for note in table.notes:
                text.print(note, markup=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _json(records: list[ResultRecord], suite: str) -> str:
    return document_json(records)


EXPORTERS: dict[str, Callable[[list[ResultRecord], str], str]] = {
    "json": _json,
    "jsonl": _jsonl,
    "csv": _csv,
    "md": _md,
    "table": _table,
}


def export_text(fmt: str, records: list[ResultRecord], suite: str) -> str:
    """``records`` of ``suite`` ("run" or a suite's name) in ``fmt``."""
    return EXPORTERS[fmt](records, suite)
