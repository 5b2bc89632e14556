"""`anebench compare A.json B.json [...]`: each result of B (C, ...) against the same workload, engine
and device in A, by the ratio of their GB/s with its 95% CI from the between-run intervals."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from ..errors import UserError
from ..measure.uncertainty import gbps_cell, gbps_range
from ..report.escape import clean_text, csv_cell, md_text
from ..report.format import csv_text as write_csv
from ..report.term_table import TermTable
from ..results.pairing import FileComparison, Pair, Side, compare_files
from ..results.validate import InvalidFile
from .common import QUIET, err_console, out_console, output_format, say, verbosity
from .exports import Exportable, check_outputs, export_options, plain_text, render, requested, write_outputs
from .options import force_option, format_option, json_option, out_file_option
from .tables import FittingTable, abbreviate, fmt_sig, markdown_table, time_unit

FORMATS = ("table", "json", "jsonl", "csv", "md")

VERDICTS = {
    "b is faster": "faster",
    "b is slower": "slower",
    "no significant difference": "n.s.",
    "unknown": "unknown",
    "unreliable": "unreliable",
}
LEGEND = (
    "ratio: GB/s of the later file / GB/s of the baseline (> 1: faster); 95% CI from both runs' "
    "between-run intervals; 'faster'/'slower': significant (the whole CI beyond +-1%, the noise "
    "threshold), 'n.s.': no significant difference, 'unknown': a run of one repetition has no "
    "between-run interval; 'unreliable': separate runs on a busy machine or in different host states "
    "(each side's facts are listed below); configurations of one interleaved run compare paired, round "
    "by round"
)


def side_facts(record) -> str:
    """What a reader needs to trust one side: its GB/s range, the host's load and state, its warnings."""
    state = record.host.state
    facts = [f"GB/s {gbps_cell(record)}"]
    place = record.repetitions.interleave if record.repetitions is not None else None
    if place is not None:
        facts.insert(0, place.label)
    if state is not None:
        if state.load_average_1m is not None:
            facts.append(f"load {state.load_average_1m:.2f}" + (" (busy machine)" if state.busy else ""))
        facts += [f"{name} {value}" for name, value in (("governor", state.governor),
                  ("power", state.power_source), ("max MHz", state.cpu_freq_max_mhz)) if value is not None]
    facts.append(f"{len(record.warnings)} warning(s)" + (": " + "; ".join(w.text for w in record.warnings)
                                                         if record.warnings else ""))
    return ", ".join(facts)


def interleave_of(record):
    return record.repetitions.interleave if record.repetitions is not None else None


def letter(index: int) -> str:
    return chr(ord("A") + index) if index < 26 else f"#{index + 1}"


def ci_cell(pair: Pair) -> str:
    c = pair.comparison
    return "-" if c.low is None or c.high is None else f"{c.low:.3f}-{c.high:.3f}"


def table_rows(result: FileComparison, full_names: bool) -> tuple[list[str], list[list[str]], list[bool]]:
    """The comparison table's header, cells and numeric flags (latencies in one unit, ratio, CI)."""
    unit, scale = time_unit(s.record.latency_s() for p in result.pairs for s in (p.a, p.b))
    several = len(result.paths) > 2
    header = (["pair"] if several else []) + [
        "engine:dev",
        "workload",
        f"A {unit}",
        f"{'later' if several else 'B'} {unit}",
        "ratio",
        "95% CI",
        "verdict",
    ]
    rows = []
    for pair in result.pairs:
        a, b = pair.a.record, pair.b.record
        name = clean_text(a.workload.name)
        cells = [f"A-{letter(pair.b.file)}"] if several else []
        cells += [
            clean_text(f"{a.engine.name}:{a.engine.device}"),
            name if full_names else abbreviate(name),
            median_cell(a.latency_s(), scale),
            median_cell(b.latency_s(), scale),
            f"{pair.comparison.ratio:.3f}",
            ci_cell(pair),
            VERDICTS[pair.comparison.verdict],
        ]
        rows.append(cells)
    numeric = [False] * (len(header) - 5) + [True, True, True, True, False]
    return header, rows, numeric


def median_cell(seconds: float | None, scale: float) -> str:
    return "-" if seconds is None else fmt_sig(seconds * scale)


def document(result: FileComparison) -> dict:
    def side(s: Side) -> dict:
        return {
            "file": str(s.path),
            "id": s.record.id,
            "median_s": s.record.latency_s(),
            "gbps": s.record.gbps,
            "gbps_range": [found.low, found.high] if (found := gbps_range(s.record)) else None,
            "configuration": place.label if (place := interleave_of(s.record)) else None,
            "host_state": s.record.host.state.model_dump(mode="json") if s.record.host.state else None,
            "warnings": [w.text for w in s.record.warnings],
        }

    return {
        "method": result.method,
        "files": [str(p) for p in result.paths],
        "pairs": [
            {
                "engine": p.a.record.engine.name,
                "device": p.a.record.engine.device,
                "workload": p.a.record.workload.name,
                "fingerprint": p.a.record.workload.fingerprint,
                "a": side(p.a),
                "b": side(p.b),
                "ratio": p.comparison.ratio,
                "ci95": [p.comparison.low, p.comparison.high],
                "significant": p.comparison.significant,
                "verdict": p.comparison.verdict,
                "notes": p.comparison.notes,
                "method": p.comparison.method,
            }
            for p in result.pairs
        ],
        "unpaired": [
            {
                "file": str(s.path),
                "engine": s.record.engine.name,
                "device": s.record.engine.device,
                "workload": s.record.workload.name,
                "fingerprint": s.record.workload.fingerprint,
            }
            for s in result.unpaired
        ],
    }


CSV_COLUMNS = [
    "engine", "device", "workload", "fingerprint", "a_file", "b_file", "a_median_s", "b_median_s",
    "a_gbps", "a_gbps_low", "a_gbps_high", "b_gbps", "b_gbps_low", "b_gbps_high",
    "ratio", "ci95_low", "ci95_high", "significant", "verdict",
]


def _gbps_columns(side: Side) -> list[float | None]:
    """The side's GB/s and its 95% range (the between-run interval: the one convention of every table)."""
    found = gbps_range(side.record)
    return [side.record.gbps, found.low if found else None, found.high if found else None]


def csv_text(result: FileComparison) -> str:
    rows = []
    for p in result.pairs:
        a, b, c = p.a.record, p.b.record, p.comparison
        rows.append(
            [csv_cell(clean_text(x)) for x in (a.engine.name, a.engine.device, a.workload.name)]
            + [a.workload.fingerprint, csv_cell(str(p.a.path)), csv_cell(str(p.b.path)),
               a.latency_s(), b.latency_s(), *_gbps_columns(p.a), *_gbps_columns(p.b),
               c.ratio, c.low, c.high, c.significant, c.verdict]
        )
    return write_csv(CSV_COLUMNS, rows)


def files_legend(result: FileComparison) -> str:
    legend = "; ".join(f"{letter(i)} = {clean_text(str(p))}" for i, p in enumerate(result.paths))
    return legend + "; A, B: each file's median latency"


def fact_lines(result: FileComparison) -> list[str]:
    """What follows the table: the legend, each method, each side's facts (its GB/s range, host state,
    warnings), each pair's notes and what could not be paired."""
    lines = [LEGEND]
    lines += [f"method: {method}" for method in dict.fromkeys(p.comparison.method for p in result.pairs)]
    shown: set[tuple[int, str | None]] = set()
    for pair in result.pairs:
        for name, side in (("A", pair.a), (letter(pair.b.file) if len(result.paths) > 1 else "B", pair.b)):
            if (side.file, side.record.id) not in shown:
                shown.add((side.file, side.record.id))
                lines.append(f"{name} {clean_text(side.describe())}: {clean_text(side_facts(side.record))}")
        lines += [f"{clean_text(pair.b.describe())}: {clean_text(note)}" for note in pair.comparison.notes]
    lines += [
        "not paired (no result of the same workload, engine and device in the other files): "
        f"{clean_text(side.describe())}"
        for side in result.unpaired
    ]
    return lines


class ComparisonExport(Exportable):
    """`compare`'s output for every exporter: the document (json), one pair per line (jsonl), the table
    with the facts after it (table, md) and its machine columns (csv)."""

    def __init__(self, result: FileComparison, full_names: bool):
        self.result = result
        self.header, self.rows, self.numeric = table_rows(result, full_names)

    def document(self) -> str:
        return json.dumps(document(self.result), indent=1) + "\n"

    def lines(self) -> list[dict[str, Any]]:
        return list(document(self.result)["pairs"])

    def tables(self) -> list[TermTable]:
        return [TermTable("anebench compare", self.header, self.numeric, self.rows,
                          [files_legend(self.result), *fact_lines(self.result)])]

    def terminal_table(self) -> FittingTable:
        return FittingTable(self.header, self.rows, "anebench compare", files_legend(self.result),
                            numeric=self.numeric)

    def csv(self) -> str:
        return csv_text(self.result)

    def markdown(self) -> str:  # file names are a contributor's text too: no live link or image
        notes = [files_legend(self.result), *fact_lines(self.result)]
        return markdown_table(self.header, self.rows, self.numeric) + "".join(
            f"\n{md_text(line)}\n" for line in notes)

    def text(self) -> str:
        return plain_text([self.terminal_table(), *fact_lines(self.result)])


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(path_type=Path))
@json_option()
@format_option(*FORMATS)
@out_file_option("Also write the comparison here; the format follows the extension: .json, .jsonl, .csv, "
                 ".md, .txt (the table).")
@export_options
@force_option("Replace a read-only --out or --export-* file.")
@click.option(
    "--leaderboard",
    "leaderboard",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A results repository: place the one FILE within its chip's submissions (rank, spread).",
)
def compare(
    files: tuple[Path, ...], as_json: bool, fmt: str | None = None, out: Path | None = None,
    force: bool = False, leaderboard: Path | None = None, **exports: Path | None,
) -> None:
    """Compare result files: each result of B (C, ...) against the same workload, engine and device in A,
    with the GB/s ratio, its 95% CI and whether the difference is significant. With --leaderboard REPO:
    one file placed within its chip's submissions (rank, spread between submitters)."""
    machine = output_format(fmt, as_json)
    wanted = requested(out, exports)
    inputs = [(Path(f), "an input of this command") for f in files]
    if leaderboard is not None:
        if wanted:
            raise UserError(f"{wanted[0][1]} {wanted[0][2]}: not with --leaderboard (its placement prints "
                            "on stdout)")
        from .leaderboard import show_placement

        try:
            show_placement(files, leaderboard, machine)
        except InvalidFile as exc:
            from .results import _print_problems

            _print_problems(exc)
            sys.exit(UserError.exit_code)
        return
    check_outputs(wanted, force, inputs)
    try:
        result = compare_files(list(files))
    except InvalidFile as exc:
        from .results import _print_problems

        _print_problems(exc)
        sys.exit(UserError.exit_code)
    output = ComparisonExport(result, full_names=verbosity() >= 1)
    if machine == "table":
        out_console().print(output.terminal_table())
    elif verbosity() > QUIET:
        err_console.print(output.terminal_table())
    if machine != "table":
        sys.stdout.write(render(machine, output))
    for line in fact_lines(result):
        say(line)
    for written_fmt, path in write_outputs(output, wanted, force, inputs):
        say(f"wrote the comparison as {written_fmt} to {clean_text(str(path), keep_newlines=False)}")


def register(app: click.Group) -> None:
    app.add_command(compare)
