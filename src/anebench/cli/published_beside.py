"""The end of `anebench run`: the user's figure beside the published figures of the same chip family, or
beside the published ranges by device kind."""

from __future__ import annotations

from rich.console import Console

from ..model import ResultRecord
from ..report.escape import clean_text
from .common import QUIET, verbosity
from .tables import FittingTable, fmt_sig


def show_family_comparison(records: list[ResultRecord], console: Console) -> None:
    """End of `anebench run`: the user's figure beside the published ones of the same chip family (each
    published point judged against the run's between-run interval) where there are any; else beside
    the published ranges by device kind, said once for the whole run."""
    from ..measure.uncertainty import gbps_cell
    from ..report.compare import versus_label
    from ..report.published_context import published_context

    if verbosity() <= QUIET:
        return
    context = published_context(records)
    if context.family_rows:
        rows = []
        for row in context.family_rows:
            gbps = f"{row.gbps:.2f}" if row.gbps else "-"
            if row.yours and row.record is not None:  # the same range as the results table above
                gbps = gbps_cell(row.record)
            rows.append(
                [
                    clean_text(row.chip),
                    clean_text(row.config or "-"),
                    clean_text(row.workload),
                    clean_text(row.engine),
                    gbps,
                    "" if row.yours else versus_label(row.versus),
                    f"{fmt_sig(row.latency_ms)} ({row.statistic})" if row.latency_ms else "-",
                    clean_text(row.source),
                ]
            )
        console.print(
            FittingTable(
                ["chip", "config", "workload", "engine:dev", "GB/s", "vs run", "latency ms", "source"],
                rows,
                "your run beside published figures (same chip family, same workload fingerprint)",
                wrap={"config", "source"},
            )
        )
        console.print(
            "published figures are points (their sources give no interval); 'vs run': their GB/s "
            "against yours, 'sig.' outside your run's between-run 95% interval, 'n.s.' inside it, "
            "'?' where your run has one repetition",
            highlight=False,
            markup=False,
        )
    if context.kind_rows:
        rows = []
        for kind in context.kind_rows:
            if kind.low is None or kind.high is None:
                figure = "-"
            elif kind.record is not None:  # the same ± as the results table above
                figure = gbps_cell(kind.record)
            else:
                figure = (
                    fmt_sig(kind.low)
                    if kind.low == kind.high
                    else f"{fmt_sig(kind.low)}-{fmt_sig(kind.high)}"
                )
            rows.append([kind.kind, clean_text(kind.workload), figure, kind.what])
        console.print(
            FittingTable(
                ["device kind", "workload", "GB/s", "what"],
                rows,
                "your run beside published ranges by device kind",
                wrap={"what"},
            )
        )
    for note in context.notes:  # prose: wrapped between words at the console's width
        console.print(clean_text(note), highlight=False, markup=False)
