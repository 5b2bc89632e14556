"""The cells every suite table shares (report/suite_terminal.py states the rules they follow): a short
workload name, threads, a rate, a batch, the fitted overhead with its band, and the notes that explain
them."""

from __future__ import annotations

from ..measure.line_fit import BELOW_RESOLUTION
from ..model import ResultRecord
from .format import sig
from .term_table import TermTable


def short_workload(name: str) -> str:
    """`lm_head:HxV:DTYPE` -> `HxV` (the table has a dtype column); any other name as it is."""
    parts = name.split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "lm_head" else name


def threads_of(record: ResultRecord) -> str:
    """Threads per copy where set, else the engine's own thread count where it states one."""
    c = record.concurrency
    for value in (
        c.threads_per_copy if c else None,
        record.method.threads,
        record.engine.details.get("blas_threads"),
        record.engine.details.get("torch_threads"),
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return "-"


def rate(value: float | None) -> str:
    """GB/s with two decimals, as every report of the project prints it."""
    return "-" if value is None else f"{value:.2f}"


def overhead_text(overhead_us: float, se_us: float | None) -> str:
    """The fitted overhead with its two-standard-error band, or why it is not a figure (a negative one
    within error, refitted at zero: the gates refuse one beyond it)."""
    if overhead_us <= 0:
        return BELOW_RESOLUTION
    if se_us is None:
        return sig(overhead_us)
    if overhead_us <= 2 * se_us:
        return f"{sig(overhead_us, 2)}±{sig(2 * se_us, 2)}*"
    return f"{sig(overhead_us)}±{sig(2 * se_us, 2)}"


UNRESOLVED_NOTE = "*: overhead not resolved: within two standard errors of zero"


def unresolved_note(table: TermTable, column: int) -> None:
    if any(row[column].endswith("*") for row in table.rows):
        table.notes.append(UNRESOLVED_NOTE)


def batch_cell(record: ResultRecord) -> str:
    """The vectors one call multiplies: the batch, or a token-batched bundle's tokens per predict."""
    return str(record.workload.batch) if record.workload.tokens == 1 else f"{record.workload.tokens} tokens"


def tokens_note(table: TermTable, records: list[ResultRecord]) -> None:
    if any(r.workload.tokens > 1 for r in records):
        table.notes.append("N tokens: a token-batched bundle that multiplies N tokens per predict (batch 1)")
