"""Reading what a user hands us, bounded: regular files only, a size cap, a nesting cap, finite numbers.

A device (``/dev/zero``), a FIFO or a socket is refused before it is opened for reading, so nothing
can hang or read without end; a file is read with a cap one byte past its limit, so a file that grows
while it is read is refused too. JSON is checked for nesting depth in linear time before it is parsed
(Python's parser raises RecursionError a few thousand levels down, and a scan of broken JSON from
every brace is quadratic in the depth), and numbers outside float range or NaN/Infinity literals are
refused instead of becoming ``inf``.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..model.statistics import MiB

MAX_INPUT_BYTES = 256 * MiB  # a results document of 1000 full records is ~30 MB
MAX_JSON_DEPTH = 64  # a results document nests about 8 deep; anemll-bench's files about 6
_JSON_STRING = re.compile(rb'"(?:[^"\\\n]|\\.)*"')
_OPEN = np.zeros(256, dtype=np.int8)
_OPEN[[ord("{"), ord("[")]] = 1
_OPEN[[ord("}"), ord("]")]] = -1
_DEPTH_CHUNK = 4 * MiB  # bytes per numpy pass of nesting_depth: ~20 MB of scratch, whatever the input


def read_input_bytes(path: Path, what: str = "", limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most ``limit`` bytes; anything else is one UserError line."""
    path = Path(path)
    label = f"{what} {path}".strip()
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise UserError(f"{label}: is a directory; give a file")
        if not stat.S_ISREG(info.st_mode):
            kind = "a FIFO (named pipe)" if stat.S_ISFIFO(info.st_mode) else "a device or socket"
            raise UserError(f"{label}: is {kind}, not a regular file; give a file")
        if info.st_size > limit:
            raise UserError(f"{label}: {info.st_size:,} bytes is larger than the {limit:,}-byte limit")
        # O_NONBLOCK: a file swapped for a FIFO after the check must not block open() for good.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with open(fd, "rb") as handle:
            opened = os.fstat(handle.fileno())
            if not stat.S_ISREG(opened.st_mode):  # swapped after the check
                raise UserError(f"{label}: is not a regular file; give a file")
            if hasattr(os, "set_blocking"):
                os.set_blocking(fd, True)
            data = _read_capped(handle, opened.st_size, limit)
    except FileNotFoundError:
        raise UserError(f"{label}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{label}: is a directory; give a file") from None
    except OSError as exc:
        raise UserError(f"{label}: cannot be read ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise UserError(f"{label}: larger than the {limit:,}-byte limit")
    return data


def _read_capped(handle: Any, expected: int, limit: int) -> bytes:
    """At most ``limit + 1`` bytes. read(limit + 1) would reserve the whole cap (256 MB of address
    space, which a ``ulimit -v`` counts) for any file, so read its size, then the rest of a file that
    grew in small steps."""
    data = handle.read(min(expected, limit) + 1)
    if len(data) <= expected:
        return data
    parts = [data]
    total = len(data)
    while total <= limit:
        more = handle.read(min(MiB, limit + 1 - total))
        if not more:
            break
        parts.append(more)
        total += len(more)
    return b"".join(parts)


def nesting_depth(text: str | bytes) -> int:
    """The deepest bracket nesting outside JSON strings, in linear time (numpy, no recursion) and in
    chunks: arrays the length of the input would take 16 bytes per input byte (4 GB for a file at the
    size cap), so the running depth is carried from chunk to chunk instead."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    stripped = _JSON_STRING.sub(b"", raw)
    deepest = depth = 0
    for start in range(0, len(stripped), _DEPTH_CHUNK):
        count = min(_DEPTH_CHUNK, len(stripped) - start)
        steps = _OPEN[np.frombuffer(stripped, dtype=np.uint8, count=count, offset=start)]
        running = np.cumsum(steps, dtype=np.int32)  # a chunk moves the depth by at most its length
        deepest = max(deepest, depth + int(running.max()))
        depth += int(running[-1])
    return deepest


def check_depth(text: str | bytes, where: str, limit: int = MAX_JSON_DEPTH) -> None:
    depth = nesting_depth(text)
    if depth > limit:
        raise UserError(f"{where}: JSON nested {depth} levels deep (limit {limit}); not a file of this kind")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text[:40]} is outside the range of a float")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > 40:  # far past any size; also keeps int() from quadratic work
        raise ValueError(f"integer of {len(text)} digits is out of range")
    return int(text)


def loads(text: str | bytes, where: str, limit: int = MAX_JSON_DEPTH, constants: bool = True) -> Any:
    """json.loads with the nesting checked first and no number outside float range (1e400 is refused,
    not read as inf); errors are one UserError. ``constants``: NaN/Infinity literals are let through
    for a schema to name field by field (a result file), else refused."""
    check_depth(text, where, limit)
    try:
        if constants:
            return json.loads(text, parse_float=_finite_float, parse_int=_bounded_int)
        return json.loads(
            text, parse_float=_finite_float, parse_int=_bounded_int, parse_constant=_no_constant
        )
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deep") from None
    except UnicodeDecodeError:
        raise UserError(f"{where}: not UTF-8 text") from None
    except json.JSONDecodeError as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from None
    except ValueError as exc:
        raise UserError(f"{where}: not valid JSON ({exc})") from None


def read_json(
    path: Path, what: str = "", limit_bytes: int = MAX_INPUT_BYTES, depth: int = MAX_JSON_DEPTH
) -> Any:
    """A bounded regular file parsed as bounded JSON."""
    data = read_input_bytes(path, what, limit_bytes)
    return loads(data, f"{what} {path}".strip(), depth)


__all__ = ["MAX_INPUT_BYTES", "MAX_JSON_DEPTH", "check_depth", "loads", "nesting_depth", "read_input_bytes",
           "read_json"]
