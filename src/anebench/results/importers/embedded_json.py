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
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from ...util.inputs import MAX_JSON_DEPTH, nesting_depth

# A quoted literal on one line that starts with "{" and ends with "}": where an HTML report keeps its
# JSON as a JavaScript (or Python repr) string. Escapes and plain characters are disjoint: linear time.
_STRING_LITERAL = re.compile(r"""(['"])\{(?:(?!\1)[^\\\n]|\\.)*\}\1""")


# Parsing broken JSON from every "{" costs up to the rest of the text each time: the work is capped at
# this many characters per character of input (plus a floor), and by a deadline, then the search stops.
WORK_FACTOR = 16
WORK_FLOOR = 1 << 20
DEADLINE_S = 3.0


@dataclass
class Search:
    objects: list[dict]  # accepted objects, distinct, in the order they appear
    form: str | None  # "json", "text", "html-escaped" or "string literal": where they were found
    error: str | None  # when nothing was accepted: the parse error of the attempt that got furthest
    broken: list[str] = field(default_factory=list)  # blocks that start with ``marker`` but do not parse
    gave_up: str | None = None  # the search ran out of its work budget: the input is refused


class _Budget:
    def __init__(self, size: int):
        self.left = WORK_FACTOR * size + WORK_FLOOR
        self.deadline = time.monotonic() + DEADLINE_S

    def spend(self, amount: int) -> bool:
        """False once the budget is spent (then the search stops)."""
        self.left -= amount
        return self.left > 0 and time.monotonic() < self.deadline


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


class _GaveUp(Exception):
    pass


# Where an object can start: "{" then a key or "}". Each failed attempt costs O(position) in Python's
# JSONDecodeError (it counts lines), so braces that cannot open an object are never tried.
_CANDIDATE = re.compile(r'\{\s*["}]')
_FIRST_KEY = re.compile(r'\{\s*"([A-Za-z_]{1,40})"\s*:')


def _next_start(text: str, position: int) -> int:
    match = _CANDIDATE.search(text, position)
    return match.start() if match else -1


def bounded_int(text: str) -> int | float:
    """A JSON integer; one of more than 40 digits (past any real figure, and past Python's 4300-digit
    limit for int()) is read as infinity, which every figure's check then refuses by name."""
    return int(text) if len(text.lstrip("-")) <= 40 else float("inf")


def _opens_with(text: str, start: int, keys: tuple[str, ...]) -> bool:
    match = _FIRST_KEY.match(text, start)
    return match is not None and match.group(1) in keys


def _scan(text: str, accept: Callable[[dict], bool], budget: _Budget, marker: str | None = None,
          broken: list[str] | None = None,
          opening_keys: tuple[str, ...] = ()) -> tuple[list[dict], tuple[int, str] | None]:
    """Objects decoded from each '{' in turn; an accepted one is skipped over, others are searched.
    A failed decode whose parsed part holds ``marker``, or whose first key is one of ``opening_keys``
    (a block cut before the marker), is a broken block, added to ``broken``."""
    decoder = json.JSONDecoder(parse_int=bounded_int)
    found: list[dict] = []
    furthest: tuple[int, str] | None = None
    start = _next_start(text, 0)
    while start != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError as exc:
            progress = exc.pos - start
            if not budget.spend(progress + 1):
                raise _GaveUp from None
            where = f"{exc.msg} (line {exc.lineno}, column {exc.colno})"
            if furthest is None or progress > furthest[0]:
                furthest = (progress, where)
            if broken is not None and (
                (marker and marker in text[start:exc.pos]) or _opens_with(text, start, opening_keys)
            ):
                broken.append(where)
                start = _next_start(text, exc.pos)  # the block's inner objects are parts of it, not blocks
                continue
            start = _next_start(text, start + 1)
            continue
        except RecursionError:  # nested past the parser's limit: costly, and never a document
            if not budget.spend(100_000):
                raise _GaveUp from None
            start = _next_start(text, start + 1)
            continue
        if not budget.spend(end - start):
            raise _GaveUp
        if isinstance(value, dict) and accept(value):
            found.append(value)
            start = _next_start(text, end)
        else:
            start = _next_start(text, start + 1)
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


def find_json_objects(text: str, accept: Callable[[dict], bool], marker: str | None = None,
                      opening_keys: tuple[str, ...] = ()) -> Search:
    """Every distinct JSON object in ``text`` that ``accept`` takes, from the first form that has one;
    with ``marker`` (e.g. '"system_info"') or ``opening_keys``, also the blocks holding the marker, or
    opening with one of the keys, that do not parse: in that form, and in a later form (HTML-escaped)
    that shows more of them than the text does, so that an escaped broken block beside a raw whole one
    is seen."""
    try:
        whole = json.loads(text, parse_int=bounded_int)
    except (json.JSONDecodeError, RecursionError):
        whole = None
    if isinstance(whole, dict) and accept(whole):
        return Search([whole], "json", None)
    try:
        return _search_forms(text, accept, marker, opening_keys)
    except _GaveUp:
        return Search([], None, None, gave_up=(
            f"it holds too much broken or deeply nested JSON to search (limits: {DEADLINE_S:g} s, "
            f"{WORK_FACTOR}x its size in parsing, {MAX_JSON_DEPTH} levels of nesting)"))


def _shown(text: str, marker: str | None, opening_keys: tuple[str, ...]) -> list[int]:
    return [text.count(m) for m in ([marker] if marker else []) + [f'"{key}"' for key in opening_keys]]


def _search_forms(text: str, accept: Callable[[dict], bool], marker: str | None,
                  opening_keys: tuple[str, ...] = ()) -> Search:
    budget = _Budget(len(text))

    furthest: tuple[int, str] | None = None
    forms: list[tuple[str, Callable[[], Iterator[str]]]] = [
        ("text", lambda: iter([text])),
        ("html-escaped", lambda: iter([html.unescape(text)] if "&" in text else [])),
        ("string literal", lambda: _literal_values(text)),
    ]
    for number, (form, candidates) in enumerate(forms):
        objects: list[dict] = []
        broken: list[str] = []
        for candidate in candidates():
            if nesting_depth(candidate) > MAX_JSON_DEPTH:  # decoded literals were not depth-checked
                raise _GaveUp
            found, error = _scan(candidate, accept, budget, marker, broken, opening_keys)
            objects.extend(found)
            if error and (furthest is None or error[0] > furthest[0]):
                furthest = error
        if objects:
            broken += _broken_in_later_forms(text, forms[number + 1:], accept, budget, marker, opening_keys)
            return Search(_distinct(objects), form, None, broken)
    return Search([], None, furthest[1] if furthest else None)


def _broken_in_later_forms(text: str, forms: list[tuple[str, Callable[[], Iterator[str]]]],
                           accept: Callable[[dict], bool], budget: _Budget, marker: str | None,
                           opening_keys: tuple[str, ...]) -> list[str]:
    """Broken blocks that only a later form shows (an escaped block beside a raw one): a form is
    searched when it shows the marker or a key more often than the text itself."""
    if not marker and not opening_keys:
        return []
    shown = _shown(text, marker, opening_keys)
    broken: list[str] = []
    for _, candidates in forms:
        for candidate in candidates():
            if all(later <= now for later, now in zip(_shown(candidate, marker, opening_keys), shown)):
                continue
            if nesting_depth(candidate) > MAX_JSON_DEPTH:
                raise _GaveUp
            _scan(candidate, accept, budget, marker, broken, opening_keys)
    return broken
