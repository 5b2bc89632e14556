"""Find JSON objects inside other text: an issue body, an e-mail, an HTML page.

People paste a tool's JSON into prose, a Markdown fence, an HTML ``<pre>`` (HTML-escaped) or a
``<script>``; some HTML reports carry it as a JavaScript string literal (escaped newlines and quotes).
The search tries the text as it is, then HTML-unescaped, then the string literals that hold a JSON
object, and stops at the first form that yields an object the caller accepts.
"""

from __future__ import annotations

import ast
import html
import json
import re
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass

# A quoted literal on one line that starts with "{" and ends with "}": where an HTML report keeps its
# JSON as a JavaScript (or Python repr) string. Escapes and plain characters are disjoint: linear time.
_STRING_LITERAL = re.compile(r"""(['"])\{(?:(?!\1)[^\\\n]|\\.)*\}\1""")


@dataclass
class Search:
    objects: list[dict]  # accepted objects, distinct, in the order they appear
    form: str | None  # "json", "text", "html-escaped" or "string literal": where they were found
    error: str | None  # when nothing was accepted: the parse error of the attempt that got furthest


def _literal_values(text: str) -> Iterator[str]:
    for match in _STRING_LITERAL.finditer(text):
        literal = match.group(0)
        try:
            if literal.startswith('"'):
                value = json.loads(literal)
            else:
                with warnings.catch_warnings():  # JS escapes Python does not know (\/) warn, not fail
                    warnings.simplefilter("ignore")
                    value = ast.literal_eval(literal)
        except (ValueError, SyntaxError, json.JSONDecodeError, MemoryError, RecursionError):
            continue
        if isinstance(value, str):
            yield value


def _scan(text: str, accept: Callable[[dict], bool]) -> tuple[list[dict], tuple[int, str] | None]:
    """Objects decoded from each '{' in turn; an accepted one is skipped over, others are searched."""
    decoder = json.JSONDecoder()
    found: list[dict] = []
    furthest: tuple[int, str] | None = None
    start = text.find("{")
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            progress = exc.pos - start
            if furthest is None or progress > furthest[0]:
                furthest = (progress, f"{exc.msg} (line {exc.lineno}, column {exc.colno})")
            start = text.find("{", start + 1)
            continue
        except RecursionError:
            start = text.find("{", start + 1)
            continue
        if isinstance(value, dict) and accept(value):
            found.append(value)
            start = text.find("{", end)
        else:
            start = text.find("{", start + 1)
    return found, furthest


def _distinct(objects: list[dict]) -> list[dict]:
    seen: set[str] = set()
    unique = []
    for value in objects:
        key = json.dumps(value, sort_keys=True)
        if key not in seen:
            seen.add(key)
            unique.append(value)
    return unique


def find_json_objects(text: str, accept: Callable[[dict], bool]) -> Search:
    """Every distinct JSON object in ``text`` that ``accept`` takes, from the first form that has one."""
    try:
        whole = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict) and accept(whole):
        return Search([whole], "json", None)

    furthest: tuple[int, str] | None = None
    forms: list[tuple[str, Callable[[], Iterator[str]]]] = [
        ("text", lambda: iter([text])),
        ("html-escaped", lambda: iter([html.unescape(text)] if "&" in text else [])),
        ("string literal", lambda: _literal_values(text)),
    ]
    for form, candidates in forms:
        objects: list[dict] = []
        for candidate in candidates():
            found, error = _scan(candidate, accept)
            objects.extend(found)
            if error and (furthest is None or error[0] > furthest[0]):
                furthest = error
        if objects:
            return Search(_distinct(objects), form, None)
    return Search([], None, furthest[1] if furthest else None)
