"""Escaping for every output format: values come from contributors and are never trusted."""

from __future__ import annotations

import html
import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~])")


def md_cell(value: object) -> str:
    """One Markdown table cell: no pipes, backticks, brackets or raw HTML can take effect."""
    text = " ".join(str(value).split())  # a newline would end the table row
    text = html.escape(text, quote=True)  # <script> becomes text; & stays literal
    return _MD_SPECIAL.sub(r"\\\1", text)


def html_text(value: object) -> str:
    return html.escape(str(value), quote=True)


def csv_cell(value: object) -> object:
    """Spreadsheets run cells starting with = + - @ as formulas; a leading apostrophe keeps them text.

    Numbers pass through unchanged (a negative number is data, not a formula)."""
    if isinstance(value, (int, float)) or value is None:
        return value
    text = str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
