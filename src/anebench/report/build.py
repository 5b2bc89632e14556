"""One entry point for every report format: read the store, aggregate, render, write atomically."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..model import ResultRecord, utc_now
from ..results.aggregate import Aggregate, aggregate
from ..results.files import atomic_write_bytes, atomic_write_text
from ..util.outputs import Protected
from .csvjson import render_csv, render_json
from .energy import energy_sections
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


def all_sections(agg: Aggregate, records: list[ResultRecord]) -> list:
    """The matrix sections, then the energy tables per chip, then verdicts, coverage and rules."""
    base = sections(agg, suite_sections(agg))
    at = next((i for i, s in enumerate(base) if s.group is None), len(base))
    return base[:at] + energy_sections(records) + base[at:]


def _slug(key: tuple) -> str:
    """A file name part for a matrix group: workload, engine, device and the fingerprint's start."""
    workload, engine, device, fingerprint = key
    parts = (workload, engine, device, fingerprint[:12])
    return "-".join("".join(ch if ch.isalnum() else "_" for ch in str(part))[:40] for part in parts)


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


def render_report(records: list[ResultRecord], fmt: str, out: Path | None, source: str, force: bool = False,
                  protected: Protected = ()) -> str:
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
        text = render_html(header, all_sections(agg, records), charts(agg))
    else:
        links: dict[tuple, str] = {}
        if out is not None:
            for key, png in charts(agg).items():
                name = f"{out.stem}-{_slug(key)}.png"
                atomic_write_bytes(out.parent / name, png, "--out chart", force, protected)
                links[key] = name
        else:
            header.append("Charts: give --out PATH to write them beside the report, or use --format html.")
        text = render_markdown(header, all_sections(agg, records), links)
    if out is not None:
        atomic_write_text(out, text, "--out", force, protected)
    return text
