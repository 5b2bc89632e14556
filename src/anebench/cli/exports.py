"""One exporter per output format, used by `run`, every suite, `compare` and `report`: for stdout
(--format), for the results file (--out, its format inferred from the extension) and for extra files
(--export-csv F --export-json F ...), so one command can write several formats at once (hyperfine's
export/mod.rs: one Exporter per format, one manager).

A command hands the exporters one :class:`Exportable`: its document (json), its items (jsonl) and its
tables (the one table type, ``TermTable``: csv, md, table). Formats: json (for `run` and the suites, the
results document, the only one anebench loads back), jsonl (one object per line), csv and md (the
command's tables), table (the tables as printed, plain text).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from ..errors import UserError
from ..model import ResultRecord
from ..report.suite_terminal import as_csv, as_markdown, suite_tables
from ..report.term_table import TermTable
from ..results.files import document_json
from ..util.outputs import Protected, atomic_write_text, check_target
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


def plain_text(renderables: Iterable[Any]) -> str:
    """Rich renderables (tables, notes) as plain text at TEXT_WIDTH, no colour, no trailing spaces."""
    from .console import rich_table

    buffer = io.StringIO()
    text = Console(file=buffer, width=TEXT_WIDTH, emoji=False, highlight=False, color_system=None)
    for item in renderables:
        if isinstance(item, TermTable):
            text.print(rich_table(item))
            for note in item.notes:
                text.print(note, markup=False)
        elif isinstance(item, str):
            text.print(item, markup=False)
        else:
            text.print(item)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


class Exportable:
    """What a command exports. ``tables`` serve csv, md and table unless a command states its own form."""

    def document(self) -> str:
        raise NotImplementedError

    def lines(self) -> list[dict[str, Any]]:
        raise NotImplementedError

    def tables(self) -> list[TermTable]:
        raise NotImplementedError

    def csv(self) -> str:
        return as_csv(self.tables())

    def markdown(self) -> str:
        return as_markdown(self.tables())

    def text(self) -> str:
        return plain_text(self.tables())


class RecordsExport(Exportable):
    """Measured records of `run` ("run") or of a suite (its name): the results document, one record per
    line, `run`'s results table (csv: its machine columns) or the suite's own tables."""

    def __init__(self, records: list[ResultRecord], suite: str):
        self.records, self.suite = records, suite

    def document(self) -> str:
        return document_json(self.records)

    def lines(self) -> list[dict[str, Any]]:
        return [(r if r.id else r.with_id()).model_dump(mode="json", by_alias=True) for r in self.records]

    def tables(self) -> list[TermTable]:
        return suite_tables(self.suite, self.records)

    def csv(self) -> str:
        return records_csv(self.records) if self.suite == "run" else super().csv()

    def markdown(self) -> str:
        return records_markdown(self.records) if self.suite == "run" else super().markdown()

    def text(self) -> str:
        if self.suite == "run":
            return plain_text([results_table(self.records, full_names=True)])
        return super().text()


def _jsonl(item: Exportable) -> str:
    compact = (",", ":")
    return "".join(json.dumps(line, ensure_ascii=False, separators=compact) + "\n" for line in item.lines())


EXPORTERS: dict[str, Callable[[Exportable], str]] = {
    "json": lambda item: item.document(),
    "jsonl": _jsonl,
    "csv": lambda item: item.csv(),
    "md": lambda item: item.markdown(),
    "table": lambda item: item.text(),
}


def render(fmt: str, item: Exportable) -> str:
    """``item`` in ``fmt`` (one of EXPORT_FORMATS)."""
    return EXPORTERS[fmt](item)


def export_text(fmt: str, records: list[ResultRecord], suite: str) -> str:
    """``records`` of ``suite`` ("run" or a suite's name) in ``fmt``."""
    return render(fmt, RecordsExport(records, suite))


def export_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--export-FORMAT FILE for each format, passed to the command as ``exports`` {format: path}."""
    for fmt in reversed(EXPORT_FORMATS):
        func = click.option(
            f"--export-{fmt}", f"export_{fmt}", type=click.Path(dir_okay=False, path_type=Path), default=None,
            help=f"Also write the output as {fmt} to this file (any --export-* may be combined).",
        )(func)
    return func


def requested(out: Path | None, options: dict[str, Any]) -> list[tuple[str, str, Path]]:
    """(format, flag, path) of --out (its format by extension) and each --export-FORMAT given; an unknown
    extension is refused before anything is written."""
    wanted = [(format_for(out), "--out", out)] if out is not None else []
    for fmt in EXPORT_FORMATS:
        path = options.pop(f"export_{fmt}", None)
        if path is not None:
            wanted.append((fmt, f"--export-{fmt}", Path(path)))
    return wanted


def check_outputs(wanted: list[tuple[str, str, Path]], force: bool, protected: Protected = ()) -> None:
    """Every file under the output policy, before the first is written."""
    for _, flag, path in wanted:
        check_target(path, flag, force, protected)


def write_outputs(item: Exportable, wanted: list[tuple[str, str, Path]], force: bool,
                  protected: Protected = ()) -> list[tuple[str, Path]]:
    """Each file asked for, in its format, atomically: [(format, path written)]."""
    check_outputs(wanted, force, protected)
    return [(fmt, atomic_write_text(path, render(fmt, item), flag, force, protected))
            for fmt, flag, path in wanted]


__all__ = [
    "BY_EXTENSION", "EXPORTERS", "EXPORT_FORMATS", "Exportable", "RecordsExport",
    "check_outputs", "export_options", "export_text", "format_for", "plain_text", "render", "requested",
    "write_outputs",
]
