"""The HTML report: one self-contained page (inline CSS, charts as data: URIs, no script), every value
escaped; a table of contents, a layout that holds from a phone (420 px) to a desktop, light and dark
themes following the system."""

from __future__ import annotations

import base64
import re
import struct

from .escape import html_text
from .tables import Section

STYLE = """
:root{color-scheme:light dark;--bg:#fff;--fg:#1f2328;--muted:#57606a;--line:#d0d7de;--head:#f3f4f6;
--link:#0a58ca;--stripe:#f8f9fa;--card:#fff}
@media (prefers-color-scheme:dark){:root{--bg:#15181d;--fg:#e6e8eb;--muted:#9aa4af;--line:#3a414b;
--head:#222831;--link:#8ab4f8;--stripe:#1a1e24;--card:#f4f4f4}}
*,*::before,*::after{box-sizing:border-box}
html{-webkit-text-size-adjust:100%;text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);
font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
a{color:var(--link)}
.page{max-width:1600px;margin:0 auto;padding:12px}
main{min-width:0}
h1{font-size:1.6em;margin:.3em 0 .5em}
h2{font-size:1.2em;margin:1.6em 0 .4em;padding-top:.4em;border-top:1px solid var(--line)}
h1,h2,p,li{overflow-wrap:anywhere}
p.note{color:var(--muted);font-size:13px}
nav.toc{font-size:14px;border:1px solid var(--line);border-radius:6px;padding:.4em .8em;margin-bottom:1em}
nav.toc summary{font-weight:600;cursor:pointer}
nav.toc ul{list-style:none;margin:.2em 0;padding-left:.9em}
nav.toc>details>ul{padding-left:0}
nav.toc li{margin:.15em 0}
nav.toc .group{font-weight:600;margin-top:.5em}
nav.toc .aside{color:var(--muted)}
.scroll{overflow-x:auto;width:fit-content;max-width:100%;margin:.5em 0 1.2em;
border:1px solid var(--line);border-radius:4px}
table{border-collapse:collapse;font-size:13px;overflow-wrap:normal}
th,td{border-bottom:1px solid var(--line);border-right:1px solid var(--line);padding:3px 7px;text-align:left;
vertical-align:top}
th:last-child,td:last-child{border-right:0}
tbody tr:last-child td{border-bottom:0}
th{background:var(--head);min-width:5em}
td{min-width:7em;max-width:40em}
td.num,th:first-child,td:first-child{min-width:0}
td.long{min-width:22em}
tbody tr:nth-child(even){background:var(--stripe)}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
figure.chart{margin:.5em 0}
figure.chart img{display:block;max-width:100%;height:auto;background:var(--card);border-radius:4px}
@media (min-width:1100px){
.page{display:grid;grid-template-columns:17rem minmax(0,1fr);gap:2rem;align-items:start;padding:16px 24px}
nav.toc{position:sticky;top:12px;max-height:calc(100vh - 24px);overflow-y:auto;margin:0}
}
@media (max-width:600px){body{font-size:14px}.page{padding:8px}}
@media (max-width:700px){
.scroll:has(table.stack){width:auto;overflow-x:visible}
table.stack,table.stack tbody,table.stack tr{display:block;width:100%}
table.stack thead{display:none}
table.stack tr{border-bottom:2px solid var(--line);padding:.25em 0}
table.stack td{display:grid;grid-template-columns:minmax(6.5em,38%) minmax(0,1fr);gap:.6em;border:0;
min-width:0;max-width:none;padding:1px 7px;white-space:normal;text-align:left;overflow-wrap:anywhere}
table.stack td::before{content:attr(data-label);color:var(--muted);font-weight:600}
}
"""
NUMERIC = {
    "GB/s [95% range]",
    "contributors",
    "latency ms (median)",
    "utilisation",
    "tier",
    "scaling",
    "combined GB/s",
    "GB/s",
    "J/token (scope)",
    "GB/s per W (work)",
    "GB/s per W (scope)",
    "records",
    "GFLOP/s",
    "TFLOP/s",
    "weight GB/s",
    "size MB",
    "MB",
    "KB",
    "batch",
    "tokens",
}
# The contents, in the report's order: (kind, heading); a kind absent from the report is left out.
CONTENTS = [
    ("results", "Results by workload"),
    ("energy", "Energy"),
    ("verdicts", "Concurrency verdicts"),
    ("sweep", "Sweeps"),
    ("roofline", "Rooflines"),
    ("latency", "Latency"),
    ("compute", "Compute"),
    ("concurrency", "Concurrency runs"),
    ("quant", "Quantisation"),
    ("batched", "Runs with batch or tokens > 1"),
    ("coverage", "Coverage"),
    ("excluded", "Excluded"),
    ("rules", "Rules"),
]
SUITES = {"sweep", "roofline", "latency", "compute", "concurrency", "quant", "batched"}
# The charts are drawn at 200 dpi: half their pixels are CSS pixels, sharp on a high-density screen.
CHART_PIXEL_RATIO = 2
LONG_CELL = 60  # characters: a cell this long gets a width of its own, so that it wraps into a few lines


def _numeric(column: str) -> bool:
    return column in NUMERIC or column.startswith("latency ")


def table_html(section: Section) -> str:
    """A table in its own scroll box. The results matrix is "stacked" on a narrow screen (CSS only): each
    row becomes a card of label: value lines, so chip, GB/s, utilisation and tier are read on a phone
    without a sideways swipe; every cell carries its column's name for that."""
    if not section.rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html_text(c)}</th>" for c in section.columns)
    stacked = section.kind == "results"
    body = []
    for row in section.rows:
        cells = "".join(
            f"<td{_cell_class(c, v)}"
            + (f' data-label="{html_text(c)}"' if stacked else "")
            + f">{html_text(v)}</td>"
            for c, v in zip(section.columns, row)
        )
        body.append(f"<tr>{cells}</tr>")
    table = '<table class="stack">' if stacked else "<table>"
    # the table scrolls inside its own box: a wide table never widens the page
    return (
        f'<div class="scroll" role="region" tabindex="0" aria-label="{html_text("table: " + section.title)}">'
        f"{table}<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


def _cell_class(column: str, value: object) -> str:
    if _numeric(column):
        return ' class="num"'
    return ' class="long"' if len(str(value)) > LONG_CELL else ""  # a few lines, not fifty


def section_ids(sections: list[Section]) -> list[str]:
    """A unique anchor per section: its position and a readable slug of its title."""
    return [
        f"s{i}-" + re.sub(r"[^a-z0-9]+", "-", s.title.lower()).strip("-")[:48]
        for i, s in enumerate(sections, 1)
    ]


def _entry(section: Section) -> str:
    """The title without its kind's prefix ("Sweep: X on numpy:cpu, M4" -> "X on numpy:cpu, M4")."""
    _, sep, rest = section.title.partition(": ")
    return rest if sep and section.kind in SUITES | {"results", "energy"} else section.title


def _group(heading: str, links: list[str]) -> str:
    return f'<li><div class="group">{html_text(heading)}</div><ul>{"".join(links)}</ul></li>'


def contents_html(sections: list[Section], ids: list[str]) -> str:
    """Contents grouped by kind: each workload's results (with its tiers), the energy tables, verdicts,
    then each suite with its groups, then coverage, exclusions and rules."""
    by_kind: dict[str, list[tuple[Section, str]]] = {}
    for section, anchor in zip(sections, ids):
        by_kind.setdefault(section.kind or "other", []).append((section, anchor))
    tiers = {s.title.partition(": ")[2]: a for s, a in by_kind.get("tiers", [])}
    blocks: dict[str, str] = {}
    for kind, heading in [*CONTENTS, ("other", "Other")]:
        entries = by_kind.get(kind, [])
        if not entries:
            continue
        if kind not in SUITES | {"results", "energy"}:
            blocks[kind] = "".join(f'<li><a href="#{a}">{html_text(s.title)}</a></li>' for s, a in entries)
            continue
        links = []
        for section, anchor in entries:
            link = f'<a href="#{anchor}">{html_text(_entry(section))}</a>'
            tier = tiers.get(section.title.partition(": ")[2]) if kind == "results" else None
            if tier:
                link += f' <span class="aside">(<a href="#{tier}">tiers</a>)</span>'
            links.append(f"<li>{link}</li>")
        blocks[kind] = _group(heading, links)
    items = []
    for kind, _ in [*CONTENTS, ("other", "Other")]:
        if kind == "sweep" and any(k in blocks for k in SUITES):  # the suites under one heading
            items.append(_group("Suites", [blocks[k] for k, _ in CONTENTS if k in SUITES and k in blocks]))
        if kind not in SUITES and kind in blocks:
            items.append(blocks[kind])
    return (
        '<nav class="toc" aria-label="Contents"><details open><summary>Contents</summary>'
        f"<ul>{''.join(items)}</ul></details></nav>"
    )


def png_size(png: bytes) -> tuple[int, int] | None:
    """(width, height) in pixels from a PNG's header; None for anything else."""
    if png[:8] != b"\x89PNG\r\n\x1a\n" or len(png) < 24:
        return None
    width, height = struct.unpack(">II", png[16:24])
    return width, height


def chart_html(section: Section, png: bytes, what: str = "GB/s by chip: ") -> str:
    data = base64.b64encode(png).decode("ascii")
    size = png_size(png)
    dims = f' width="{size[0] // CHART_PIXEL_RATIO}" height="{size[1] // CHART_PIXEL_RATIO}"' if size else ""
    return (
        f'<figure class="chart"><img alt="{html_text(what + section.title)}"{dims} '
        f'src="data:image/png;base64,{data}"></figure>'
    )


def render_html(header: list[str], sections: list[Section], charts: dict[tuple, bytes]) -> str:
    ids = section_ids(sections)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        '<meta name="color-scheme" content="light dark">',
        (
            '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
            "img-src data:; style-src 'unsafe-inline'\">"
        ),
        "<title>anebench results by chip</title>",
        f"<style>{STYLE}</style></head><body>",
        '<div class="page">',
        contents_html(sections, ids),
        "<main>",
        "<h1>anebench results by chip</h1>",
    ]
    parts += [f"<p>{html_text(line)}</p>" for line in header]
    for section, anchor in zip(sections, ids):
        parts.append(f'<section id="{anchor}">')
        parts.append(f"<h2>{html_text(section.title)}</h2>")
        if section.group in charts:
            parts.append(chart_html(section, charts[section.group]))
        elif section.figure is not None:
            parts.append(chart_html(section, section.figure, f"{section.kind} plot: "))
        parts.append(table_html(section))
        if section.note:
            parts.append(f'<p class="note">{html_text(section.note)}</p>')
        parts.append("</section>")
    parts.append("</main></div></body></html>")
    return "\n".join(parts) + "\n"
