"""The Markdown report: every cell escaped for Markdown (never with HTML entities), charts linked as PNG
files in the folder beside it (``report.md`` + ``report_files/``)."""

from __future__ import annotations

from .escape import md_cell, md_text
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
    for line in header:  # a paragraph each: consecutive lines would run together
        parts += [md_text(line), ""]
    for section in sections:
        parts += [f"## {md_cell(section.title)}", ""]
        if section.group in charts:
            # the path is ours (a slug of letters, digits, - and _); the alt text is the section's, escaped
            parts += [f"![{md_cell('GB/s by chip: ' + section.title)}]({charts[section.group]})", ""]
        parts += [table_md(section), ""]
        if section.note:
            parts += [md_text(section.note), ""]
    return "\n".join(parts)
