"""Escaping for every output format: values come from contributors and are never trusted."""

from __future__ import annotations

import html
import re

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
# Markdown's inline syntax (emphasis, code, links, tables, strikethrough, math) and raw HTML's brackets:
# CommonMark shows any backslash-escaped ASCII punctuation as itself, so no HTML entity is ever needed.
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~<>$])")
_MD_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")  # "&amp;" would be read as "&": "\&amp;" stays as written
# What opens a block at the start of a paragraph: a heading, quote, list item or thematic break.
_MD_BLOCK_START = re.compile(r"^(\s*)(?:([#+=-])|(\d+)([.)]))")
# C0 controls but tab and newline, DEL, C1 controls, the bidirectional overrides, embeddings and
# isolates (U+202A-U+202E, U+2066-U+2069) and marks that can make text read differently than it is; the
# invisible format characters (soft hyphen, zero-width space/joiners, word joiner and invisible operators,
# BOM, interlinear annotations, the tag block that spells hidden text) and the line and paragraph
# separators U+2028/U+2029 (a line break to some readers, none to others).
_CONTROL = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u00ad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u206f"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)
# An @mention in Markdown meant for an issue or PR notifies that user or team: the at sign at the start
# of a word becomes a full-width one (still readable, never a mention); e-mail addresses are left alone.
_MENTION = re.compile(r"(?<![\w@])@(?=[A-Za-z0-9_-])")
FULLWIDTH_AT = "\uff20"


def clean_text(value: object, keep_newlines: bool = True) -> str:
    """The text with every control character shown as a visible escape (ESC -> \\x1b, RLO -> \\u202e):
    a contributor's string can neither drive a terminal nor reorder what a reader sees."""
    text = str(value)
    if not keep_newlines:
        text = text.replace("\n", " ").replace("\t", " ")
    return _CONTROL.sub(lambda m: m.group(0).encode("unicode_escape").decode("ascii"), text)


def md_cell(value: object) -> str:
    """One Markdown table cell: no pipes, backticks, brackets or raw HTML can take effect."""
    text = " ".join(clean_text(value).split())  # a newline would end the table row
    text = _MENTION.sub(FULLWIDTH_AT, text)
    return _MD_ENTITY.sub(r"\\&", _MD_SPECIAL.sub(r"\\\1", text))  # <script> is text; no entities


def md_text(value: object) -> str:
    """A Markdown paragraph of one line: a cell's escaping, and no heading, list or rule can start it
    (a table cell or a heading's text is inline, so ``md_cell`` is enough there)."""
    return _MD_BLOCK_START.sub(
        lambda m: f"{m.group(1)}\\{m.group(2)}" if m.group(2) else f"{m.group(1)}{m.group(3)}\\{m.group(4)}",
        md_cell(value),
        count=1,
    )


def html_text(value: object) -> str:
    return html.escape(clean_text(value), quote=True)


def csv_cell(value: object) -> object:
    """Spreadsheets run cells starting with = + - @ as formulas; a leading apostrophe keeps them text.

    Numbers pass through unchanged (a negative number is data, not a formula)."""
    if isinstance(value, (int, float)) or value is None:
        return value
    text = clean_text(value, keep_newlines=False)
    return "'" + text if text.startswith(FORMULA_STARTS) else text
