"""The Markdown report: every cell escaped, charts linked as PNG files written beside it."""

from __future__ import annotations

from .escape import md_cell
from .tables import Section


def table_md(section: Section) -> str:
    lines = ["| " + " | ".join(md_cell(c) for c in section.columns) + " |",
             "|" + "|".join("---" for _ in section.columns) + "|"]
    lines += ["| " + " | ".join(md_cell(c) for c in row) + " |" for row in section.rows]
    if not section.rows:
        lines = ["(none)"]
    return "\n".join(lines)


def render_markdown(header: list[str], sections: list[Section], charts: dict[tuple, str]) -> str:
    """``charts`` maps a matrix group to the relative path of its PNG (absent: no chart written)."""
    parts = ["# anebench results by chip", ""]
    parts += [md_cell(line) for line in header] + [""]
    for section in sections:
        parts += [f"## {md_cell(section.title)}", ""]
        if section.group in charts:
            parts += [f"![GB/s by chip]({charts[section.group]})", ""]
        parts += [table_md(section), ""]
        if section.note:
            parts += [md_cell(section.note), ""]
    return "\n".join(parts)
