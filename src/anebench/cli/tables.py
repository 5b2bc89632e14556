"""How results look in a terminal and in the machine formats: one unit system, tables that fit the
width they are given (80 columns by default) and never wrap a number.

Units and digits: report/format.py's rules (MB = 1e6 bytes, GB = 1e9 bytes; a time column in the one
unit in which its smallest value is at least 1; 3 significant digits).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..measure.uncertainty import fmt_gbps, range_cell
from ..model import ResultRecord
from ..report import format as format_rules
from ..report.escape import clean_text, csv_cell, md_cell
from ..report.format import csv_text
from ..report.term_table import TermTable

WORKLOAD_WIDTH = 24  # longer workload names are abbreviated by ABBREVIATION_RULE
HEAD, TAIL = 9, WORKLOAD_WIDTH - 10
ABBREVIATION_RULE = (
    f"a workload name over {WORKLOAD_WIDTH} characters shows its first {HEAD} and last "
    f"{TAIL} (full names in the saved file and with -v)"
)
HEADLINE_CAPTION = (
    "median: of all timed calls; 95% range: the between-run interval of GB/s (the headline; "
    "'unreliable': it reaches over 10% from the figure); "
    "within-run CI, device time and warnings below"
)
UNITS_NOTE = format_rules.UNITS_NOTE


def time_unit(values_s: Iterable[float | None]) -> tuple[str, float]:
    """(unit, factor) for a column of times (report/format.py's one rule): seconds x factor = the figure."""
    unit, _ = format_rules.time_unit(values_s)
    return unit, format_rules.PER_SECOND[unit]


def fmt_sig(value: float) -> str:
    """3 significant digits, never an exponent: 1.23, 12.3, 123, 1234, 0.123 (report/format.py)."""
    return format_rules.sig(value) if value > 0 else "0"


fmt_time = format_rules.fmt_time


def fmt_mb(n_bytes: float) -> str:
    return fmt_sig(n_bytes / 1e6)


def abbreviate(name: str, width: int = WORKLOAD_WIDTH) -> str:
    """ABBREVIATION_RULE: the head (what kind of workload) and the tail (tensor, dtype) stay."""
    if len(name) <= width:
        return name
    tail = width - HEAD - 1
    return f"{name[:HEAD]}…{name[-tail:]}"


def between_run_cell(record: ResultRecord) -> str:
    """The headline interval as the GB/s range [low-high] (measure.uncertainty: the one convention), or
    why there is none."""
    return range_cell(record)


def result_rows(records: list[ResultRecord], full_names: bool = False) -> tuple[list[str], list[list[str]]]:
    """The results table's header and cells: units in the header, one time unit per column."""
    unit, scale = time_unit(r.latency_s() for r in records)
    header = ["engine:dev", "workload", "dtype", "MB", f"median {unit}", "GB/s", "95% range"]
    rows = []
    for record in records:
        latency = record.latency_s()
        name = clean_text(record.workload.name)
        rows.append(
            [
                clean_text(f"{record.engine.name}:{record.engine.device}"),
                name if full_names else abbreviate(name),
                clean_text(record.engine.run_dtype),
                fmt_mb(record.workload.weight_bytes),
                "-" if latency is None else fmt_sig(latency * scale),
                fmt_gbps(record.gbps) if record.gbps else "-",
                between_run_cell(record),
            ]
        )
    return with_threads(records, header, rows)


RESULT_NUMERIC = (False, False, False, True, True, True, True)  # the results table's figures: MB onwards


def result_numeric(header: list[str]) -> list[bool]:
    """The results table's numeric flags, with `thr` (a figure) after engine:dev where it is shown."""
    return [*RESULT_NUMERIC[:1], True, *RESULT_NUMERIC[1:]] if "thr" in header else list(RESULT_NUMERIC)


def with_threads(
    records: list[ResultRecord], header: list[str], rows: list[list[str]]
) -> tuple[list[str], list[list[str]]]:
    """A `thr` column after engine:dev where any record ran with --threads (the engine's default: '-')."""
    if not any(r.method.threads for r in records):
        return header, rows
    cells = [str(r.method.threads) if r.method.threads else "-" for r in records]
    return [header[0], "thr", *header[1:]], [[row[0], cell, *row[1:]] for row, cell in zip(rows, cells)]


NUMERIC = frozenset({"MB", "95% range", "GB/s", "ratio", "95% CI", "thr"})
UNIT_SUFFIXES = tuple(f" {unit}" for unit, _ in format_rules.TIME_UNITS) + ("GB/s", " MB")


def is_numeric(column: str) -> bool:
    return column in NUMERIC or column.startswith("median ") or column.endswith(UNIT_SUFFIXES)


class FittingTable:
    """A table that keeps every cell on one line: as columns where they fit the width it is given,
    else one block per row ("stacked"), so a narrow terminal never wraps a number.

    ``numeric``: which columns hold figures (right-aligned, never wrapped), stated by the caller as a
    suite's TermTable states them; where a caller gives none, the header's units say (``is_numeric``)."""

    def __init__(
        self,
        header: list[str],
        rows: list[list[str]],
        title: str = "",
        caption: str = "",
        wrap: Iterable[str] = (),
        numeric: Iterable[bool] | None = None,
    ):
        self.header, self.rows, self.title, self.caption = header, rows, title, caption
        self.wrap = frozenset(wrap)  # prose columns that may wrap between words (never a number)
        self.numeric = list(numeric) if numeric is not None else [is_numeric(c) for c in header]
        if len(self.numeric) != len(header):
            raise ValueError(f"{len(self.numeric)} numeric flags for {len(header)} columns")

    @classmethod
    def of(cls, table: TermTable, caption: str = "") -> FittingTable:
        """A suite's table (its numeric flags as stated), laid out to fit."""
        return cls(table.columns, table.rows, table.title, caption, numeric=table.numeric)

    def table(self, rows: list[list[str]] | None = None) -> Table:
        table = Table(
            title=self.title or None,
            box=box.SIMPLE_HEAD,
            show_edge=False,
            pad_edge=False,
            padding=(0, 1, 0, 0),
        )
        for column, numeric in zip(self.header, self.numeric):
            table.add_column(column, justify="right" if numeric else "left", no_wrap=column not in self.wrap)
        for row in self.rows if rows is None else rows:
            # Plain text, never markup: an install hint such as 'anebench[mlx]' must print as written.
            table.add_row(*(Text(cell) if isinstance(cell, str) else cell for cell in row))
        return table

    def needed_width(self, console: Console, options: ConsoleOptions) -> int:
        """The narrowest this table can be with every kept cell whole: prose cells at their longest word."""

        def narrowest(column: str, cell: str) -> str:
            return max(cell.split() or [""], key=cell_len) if column in self.wrap else cell

        rows = [[narrowest(c, cell) for c, cell in zip(self.header, row)] for row in self.rows]
        header = [narrowest(c, c) for c in self.header]
        narrow = FittingTable(header, rows, numeric=self.numeric).table()
        return Measurement.get(console, options.update_width(10_000), narrow).maximum

    def stacked(self) -> Iterator[Text]:
        if self.title:
            yield Text(self.title, style="italic")
        for row in self.rows:
            yield Text(f"{row[0]}  {row[1]}" if len(row) > 1 else row[0], style="bold")
            yield from (Text(f"  {column}: {cell}") for column, cell in zip(self.header[2:], row[2:]))
        if self.caption:
            yield Text(self.caption, style="dim")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.needed_width(console, options) <= options.max_width:
            yield self.table()
            if self.caption:  # as wide as the console, not the table: a narrow table keeps it readable
                yield Text(self.caption, style="dim")
        else:
            yield from self.stacked()


def results_table(
    records: list[ResultRecord], title: str = "anebench results", full_names: bool = False
) -> FittingTable:
    """One row per record; the full warnings, the within-run CI and device time follow the table."""
    header, rows = result_rows(records, full_names)
    numeric = result_numeric(header)
    caption = HEADLINE_CAPTION + f"; {UNITS_NOTE}"
    if any(len(r.workload.name) > WORKLOAD_WIDTH for r in records) and not full_names:
        caption += f"; {ABBREVIATION_RULE}"
    # the range may fold its "unreliable" mark onto a second line; its numbers stay on the row's line
    return FittingTable(header, rows, title, caption, wrap={"95% range"}, numeric=numeric)


def markdown_table(header: list[str], rows: list[list[str]], numeric: Iterable[bool] | None = None) -> str:
    def cell(text: str) -> str:  # a contributor's name: no link, image, raw HTML, mention or row break
        return md_cell(text)

    flags = list(numeric) if numeric is not None else [is_numeric(c) for c in header]
    lines = [
        "| " + " | ".join(map(cell, header)) + " |",
        "|" + "|".join("---:" if n else "---" for n in flags) + "|",
    ]
    lines += ["| " + " | ".join(map(cell, row)) + " |" for row in rows]
    return "\n".join(lines) + "\n"


CSV_COLUMNS = (
    "engine",
    "device",
    "workload",
    "run_dtype",
    "weight_bytes",
    "median_s",
    "between_run_low_s",
    "between_run_high_s",
    "gbps",
    "fingerprint",
    "id",
    "threads",
)


def records_csv(records: list[ResultRecord]) -> str:
    """Machine form: units in the column names, the same units as the JSON record (seconds, bytes)."""
    rows = []
    for r in records:
        interval = r.between_run()
        rows.append(
            [
                *(
                    csv_cell(clean_text(text))
                    for text in (r.engine.name, r.engine.device, r.workload.name, r.engine.run_dtype)
                ),
                r.workload.weight_bytes,
                _num(r.latency_s()),
                _num(interval[0] if interval else None),
                _num(interval[1] if interval else None),
                _num(r.gbps),
                r.workload.fingerprint,
                r.id,
                r.method.threads or "",
            ]
        )
    return csv_text(CSV_COLUMNS, rows)


def _num(value: float | None) -> str:
    return "" if value is None else repr(float(value))


def records_markdown(records: list[ResultRecord]) -> str:
    header, rows = result_rows(records, full_names=True)
    return markdown_table(header, rows, result_numeric(header)) + f"\n{HEADLINE_CAPTION}; {UNITS_NOTE}\n"


__all__ = [
    "FittingTable",
    "abbreviate",
    "between_run_cell",
    "fmt_mb",
    "fmt_sig",
    "fmt_time",
    "markdown_table",
    "records_csv",
    "records_markdown",
    "result_rows",
    "results_table",
    "time_unit",
]
