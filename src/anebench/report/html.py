"""The HTML report: one self-contained page (inline CSS, charts as data: URIs), every value escaped."""

from __future__ import annotations

import base64

from .escape import html_text
from .tables import Section

STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
table{border-collapse:collapse;margin:0.5em 0 1.5em}
th,td{border:1px solid #ccc;padding:3px 7px;font-size:13px;text-align:left;vertical-align:top}
th{background:#f2f2f2}
td.num{text-align:right;font-variant-numeric:tabular-nums}
p.note{color:#555;font-size:12px}
img{max-width:100%}
"""
NUMERIC = {"GB/s (median ± between-run)", "contributors", "latency ms (median)", "utilisation", "tier",
           "scaling", "combined GB/s", "GB/s", "J/token (scope)", "GB/s per W (work)", "GB/s per W (scope)",
           "records"}


def table_html(section: Section) -> str:
    if not section.rows:
        return "<p>(none)</p>"
    head = "".join(f"<th>{html_text(c)}</th>" for c in section.columns)
    body = []
    for row in section.rows:
        cells = "".join(
            f'<td class="num">{html_text(v)}</td>' if c in NUMERIC else f"<td>{html_text(v)}</td>"
            for c, v in zip(section.columns, row)
        )
        body.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def render_html(header: list[str], sections: list[Section], charts: dict[tuple, bytes]) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             ("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
             "img-src data:; style-src 'unsafe-inline'\">"),
             "<title>anebench results by chip</title>", f"<style>{STYLE}</style></head><body>",
             "<h1>anebench results by chip</h1>"]
    parts += [f"<p>{html_text(line)}</p>" for line in header]
    for section in sections:
        parts.append(f"<h2>{html_text(section.title)}</h2>")
        if section.group in charts:
            data = base64.b64encode(charts[section.group]).decode("ascii")
            parts.append(f'<img alt="{html_text("GB/s by chip: " + section.title)}" '
                         f'src="data:image/png;base64,{data}">')
        parts.append(table_html(section))
        if section.note:
            parts.append(f'<p class="note">{html_text(section.note)}</p>')
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
