"""One entry point for every report format: read the store, aggregate, render, write atomically."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..results.aggregate import Aggregate, aggregate
from ..results.files import atomic_write_bytes, atomic_write_text
from ..model import ResultRecord, utc_now
from .csvjson import render_csv, render_json
from .html import render_html
from .markdown import render_markdown
from .plots import bar_chart_png
from .suite_tables import suite_sections
from .tables import group_label, matrix_groups, sections

FORMATS = ("md", "html", "csv", "json")


def _header(agg: Aggregate, source: str) -> list[str]:
    return [(f"Generated {utc_now().isoformat()} from {source}: {agg.records} record(s), "
            f"{len(agg.rows)} chip x workload x engine row(s) of single-call bandwidth, "
            f"{len(agg.suites)} suite group(s) (sweeps, rooflines, latency, compute, concurrency) in their "
            "own sections."),
            "Figures are medians over contributors; flags say how much each figure can be trusted."]


def charts(agg: Aggregate) -> dict[tuple, bytes]:
    groups = matrix_groups(agg)
    return {key: bar_chart_png(rows, f"{group_label(key, groups)}: median GB/s by chip")
            for key, rows in groups.items()}


def _slug(key: tuple) -> str:
    """A file name part for a matrix group: workload, engine, device and the fingerprint's start."""
    workload, engine, device, fingerprint = key
    parts = (workload, engine, device, fingerprint[:12])
    return "-".join("".join(ch if ch.isalnum() else "_" for ch in str(part))[:40] for part in parts)


def render_report(records: list[ResultRecord], fmt: str, out: Path | None, source: str) -> str:
    """The report text; with ``out``, also writes it (and Markdown's chart PNGs beside it)."""
    if fmt not in FORMATS:
        raise UserError(f"--format {fmt!r} is not supported; valid: {', '.join(FORMATS)}")
    agg = aggregate(records)
    header = _header(agg, source)
    if fmt == "csv":
        text = render_csv(agg)
    elif fmt == "json":
        text = render_json(agg, {"generated": utc_now().isoformat(), "source": source})
    elif fmt == "html":
        text = render_html(header, sections(agg, suite_sections(agg)), charts(agg))
    else:
        links: dict[tuple, str] = {}
        if out is not None:
            for key, png in charts(agg).items():
                name = f"{out.stem}-{_slug(key)}.png"
                atomic_write_bytes(out.parent / name, png)
                links[key] = name
        else:
            header.append("Charts: give --out PATH to write them beside the report, or use --format html.")
        text = render_markdown(header, sections(agg, suite_sections(agg)), links)
    if out is not None:
        atomic_write_text(out, text)
    return text
