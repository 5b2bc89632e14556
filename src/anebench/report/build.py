"""The report: aggregated once (:class:`Report`), rendered in each form an exporter asks for, written
atomically (Markdown with its chart PNGs beside it)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import UserError, setting
from ..model import ResultRecord, utc_now
from ..results.aggregate import Aggregate, aggregate
from ..util.outputs import Protected, atomic_write_bytes, atomic_write_text, check_target
from .csvjson import render_csv, render_json
from .energy import energy_sections
from .format import is_figure
from .html import render_html
from .markdown import render_markdown
from .plots import bar_chart_png
from .suite_tables import suite_sections
from .tables import Section, group_label, matrix_groups, sections
from .term_table import TermTable

# The report's own pages; jsonl and table come from the same Report through the CLI's exporters.
FORMATS = ("md", "html", "csv", "json")


def _header(agg: Aggregate, source: str) -> list[str]:
    return [
        (
            f"Generated {utc_now().isoformat()} from {source}: {agg.records} record(s), "
            f"{len(agg.rows)} chip x workload x engine row(s) of single-call bandwidth, "
            f"{len(agg.suites)} suite group(s) (sweeps, rooflines, latency, compute, concurrency) in their "
            "own sections."
        ),
        "Figures are medians over contributors; flags say how much each figure can be trusted.",
        (
            "Units: MB = 10^6 bytes, GB = 10^9 bytes, GB/s = 10^9 bytes per second; each latency column "
            "names its unit."
        ),
    ]


def charts(agg: Aggregate) -> dict[tuple, bytes]:
    groups = matrix_groups(agg)
    return {
        key: bar_chart_png(rows, f"{group_label(key, groups)}: median GB/s by chip")
        for key, rows in groups.items()
    }


def all_sections(agg: Aggregate, records: list[ResultRecord], figures: bool = False) -> list:
    """The matrix sections, then the energy tables per chip, then verdicts, coverage and rules;
    ``figures``: the suites' own plots too (the HTML report embeds them)."""
    base = sections(agg, suite_sections(agg, figures))
    at = next((i for i, s in enumerate(base) if s.group is None), len(base))
    return base[:at] + energy_sections(records) + base[at:]


def _slug(key: tuple) -> str:
    """A file name part for a matrix group: workload, engine, device and the fingerprint's start."""
    workload, engine, device, fingerprint = key
    parts = (workload, engine, device, fingerprint[:12])
    return "-".join("".join(ch if ch.isalnum() else "_" for ch in str(part))[:40] for part in parts)


def figures_folder(out: Path) -> Path:
    """Where a Markdown report's figures go: ``report.md`` -> ``report_files/`` beside it."""
    return out.parent / f"{out.stem}_files"


def _chart_files(keys: list[tuple]) -> dict[tuple, str]:
    """A distinct file name per chart (two slugs can agree once names are cut to 40 characters)."""
    names: dict[tuple, str] = {}
    for key in keys:
        slug, n = _slug(key), 1
        while (name := f"{slug}{'' if n == 1 else f'-{n}'}.png") in names.values():
            n += 1
        names[key] = name
    return names


def _write_markdown_figures(
    out: Path, pngs: dict[tuple, bytes], force: bool, protected: Protected
) -> dict[tuple, str]:
    """Every target checked under the output policy before the first byte is written; then the PNGs.
    Returns each chart's link, relative to the report."""
    protected = list(protected)
    check_target(out, setting("out"), force, protected)
    folder = figures_folder(out)
    if os.path.lexists(folder) and not folder.is_dir():  # a file, a device, a dangling link
        raise UserError(f"{setting('out')} {out}: the figures' folder {folder} exists and is not a directory")
    names = _chart_files(list(pngs))
    for name in names.values():
        check_target(folder / name, f"{setting('out')} figure", force, protected, need_parent=False)
    for key, name in names.items():
        atomic_write_bytes(folder / name, pngs[key], f"{setting('out')} figure", force, protected)
    return {key: quote(f"{folder.name}/{name}") for key, name in names.items()}


def renderable(rows: list[tuple[str, str]]) -> tuple[list[ResultRecord], list[tuple[str, str]]]:
    """(records a report can show, [(id, why) of those it cannot]) from the store's (id, JSON) rows.

    Each record is loaded and put through the report's aggregation and tables on its own, so that one
    odd record (an old schema, a value of an unexpected type) is skipped by name instead of taking the
    whole report down.
    """
    good: list[ResultRecord] = []
    skipped: list[tuple[str, str]] = []
    for record_id, body in rows:
        try:
            record = ResultRecord.model_validate_json(body)
            agg = aggregate([record])
            sections(agg)
            render_csv(agg)
            render_json(agg, {})
        except Exception as exc:  # noqa: BLE001 - any failure of one record skips that record only
            first = str(exc).splitlines()[0] if str(exc) else ""
            skipped.append((record_id, f"{type(exc).__name__}: {first}"[:200]))
            continue
        good.append(record)
    return good, skipped


def section_table(section: Section) -> TermTable:
    """A report section as the one table type: a column is numeric where every cell is a figure or "-"."""
    columns = list(zip(*section.rows)) if section.rows else [()] * len(section.columns)
    numeric = [bool(cells) and all(c == "-" or is_figure(c) for c in cells) for cells in columns]
    return TermTable(section.title, section.columns, numeric, [list(r) for r in section.rows],
                     [section.note] if section.note else [])


@dataclass
class Report:
    """The report of ``records``, aggregated once, in each form an exporter asks for: its document (json),
    one object per line (jsonl), its Markdown and HTML pages, its long CSV and its sections as tables."""

    records: list[ResultRecord]
    source: str
    agg: Aggregate = field(init=False)

    def __post_init__(self) -> None:
        self.agg = aggregate(self.records)

    def header(self) -> list[str]:
        return _header(self.agg, self.source)

    def document(self) -> str:
        return render_json(self.agg, {"generated": utc_now().isoformat(), "source": self.source})

    def lines(self) -> list[dict[str, Any]]:
        """The document's entries, one object each, ``section`` naming where it sits in the document."""
        document = json.loads(self.document())
        found = [{"section": "matrix", **row} for row in document["matrix"]]
        found += [{"section": "concurrency", **row} for row in document["concurrency"]]
        found += [{"section": kind, **group}
                  for kind, groups in document["suites"].items() for group in groups]
        found += [{"section": "coverage", "missing_chip": chip}
                  for chip in document["coverage"]["missing_chips"]]
        return found + [{"section": "excluded", **row} for row in document["excluded"]]

    def csv(self) -> str:
        return render_csv(self.agg)

    def html(self) -> str:
        pages = all_sections(self.agg, self.records, figures=True)
        return render_html(self.header(), pages, charts(self.agg))

    def markdown(self, out: Path | None = None, force: bool = False, protected: Protected = ()) -> str:
        """The Markdown report; with ``out`` (where it will be written), its charts are written in
        ``STEM_files/`` beside it and linked."""
        header = self.header()
        links: dict[tuple, str] = {}
        if out is not None:
            links = _write_markdown_figures(out, charts(self.agg), force, protected)
        else:
            header.append(
                "Charts: give --out PATH.md to write them in PATH_files/ beside the report, or use "
                "--format html."
            )
        return render_markdown(header, all_sections(self.agg, self.records), links)

    def tables(self) -> list[TermTable]:
        return [section_table(section) for section in all_sections(self.agg, self.records)]


def render_report(
    records: list[ResultRecord],
    fmt: str,
    out: Path | None,
    source: str,
    force: bool = False,
    protected: Protected = (),
) -> str:
    """The report text in ``fmt`` (md, html, csv, json); with ``out``, also writes it (Markdown: and its
    charts in ``STEM_files/`` beside it). jsonl and table: through the CLI's exporters."""
    if fmt not in FORMATS:
        raise UserError(f"{setting('format')} {fmt!r} is not supported; valid: {', '.join(FORMATS)}")
    protected = list(protected)  # read more than once
    report = Report(records, source)
    if fmt == "csv":
        text = report.csv()
    elif fmt == "json":
        text = report.document()
    elif fmt == "html":
        text = report.html()
    else:
        text = report.markdown(out, force, protected)
    if out is not None:
        atomic_write_text(out, text, setting("out"), force, protected)
    return text
