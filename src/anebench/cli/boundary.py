"""The CLI's error boundary: whatever the library does not turn into a UserError (a full disk, a
permission, a deleted working directory, an encoding, memory, a closed pipe, a bug) ends as one line
naming what failed, a hint and a non-zero exit, never a traceback (``--debug`` shows it).

Also the streams: where stdout or stderr cannot encode the tool's few non-ASCII signs (``PYTHONIOENCODING
=ascii``, a latin-1 terminal) they are written with ASCII fallbacks (µs -> us, ± -> +/-)."""

from __future__ import annotations

import errno
import io
import os
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import name_settings

# The signs the tool prints itself; anything else a stream cannot encode is shown as a \\x escape.
ASCII_FALLBACKS = str.maketrans(
    {"µ": "u", "±": "+/-", "×": "x", "…": "...", "–": "-", "—": "-", "≤": "<=", "≥": ">=", "→": "->",
     "≈": "~", "²": "^2", "·": "."}
)
PROBE = "µ±×…"


class AsciiFallback(io.TextIOBase):
    """A text stream that writes what its encoding cannot hold as ASCII fallbacks, never raising
    UnicodeEncodeError. Attributes (encoding, isatty, fileno) are the wrapped stream's."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        text = text.translate(ASCII_FALLBACKS)
        encoding = getattr(self._stream, "encoding", None) or "ascii"
        safe = text.encode(encoding, "backslashreplace").decode(encoding, "replace")
        self._stream.write(safe)
        return len(text)

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._stream, "encoding", None) or "ascii"

    def __getattr__(self, name: str) -> object:
        return getattr(self._stream, name)


def _cannot_encode(stream: object) -> bool:
    encoding = getattr(stream, "encoding", None)
    if not encoding:
        return False
    try:
        PROBE.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return True
    return False


@contextmanager
def safe_streams() -> Iterator[None]:
    """stdout and stderr wrapped in :class:`AsciiFallback` where their encoding cannot show the tool's
    signs; restored afterwards (tests call ``main`` many times in one process)."""
    saved = sys.stdout, sys.stderr
    if sys.stdout is not None and _cannot_encode(sys.stdout):
        sys.stdout = AsciiFallback(sys.stdout)
    if sys.stderr is not None and _cannot_encode(sys.stderr):
        sys.stderr = AsciiFallback(sys.stderr)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = saved


def cwd_missing() -> bool:
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


_HINTS = {  # what to do; the system's own reason is printed before it
    errno.ENOSPC: "the disk is full: free space, or give --out (or --db) on another disk",
    errno.EDQUOT: "the disk quota is used up: free space, or write on another disk",
    errno.EACCES: "give a path in a folder you can write",
    errno.EPERM: "give a path in a folder you can write",
    errno.EROFS: "give a path on a writable disk",
    errno.EFBIG: "the process may not write a file this large (ulimit -f)",
    errno.EMFILE: "raise the open-file limit (ulimit -n)",
    errno.ENOENT: "check that the file or folder exists",
}


def describe_os_error(exc: OSError) -> str:
    """One line: the path(s), the system's reason and what to do."""
    if isinstance(exc, BrokenPipeError):
        return "the output was closed before everything was written (a closed pipe, e.g. `| head`)"
    if cwd_missing():
        return "the current directory no longer exists (deleted while in use): cd to an existing folder"
    paths = [str(p) for p in (exc.filename, exc.filename2) if p is not None]
    if not paths and _from_a_stream_write(exc):
        paths = ["writing the output (stdout or stderr)"]
    reason = exc.strerror or str(exc) or type(exc).__name__
    where = f"{' -> '.join(paths)}: " if paths else ""
    hint = _HINTS.get(exc.errno or 0)
    return f"{where}{reason}" + (f"; {hint}" if hint else "")


def _from_a_stream_write(exc: OSError) -> bool:
    """The error came from writing a console or stream (stdout redirected to a full disk), not a file."""
    frames = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    return bool(frames) and frames[-1].name in ("write", "flush", "_write_buffer", "_check_buffer")


def describe(exc: BaseException) -> tuple[str, int]:
    """The one line (without the leading "error:") and the exit code for an exception the library let
    through: 2 for the environment (disk, permission, memory, encoding), 1 for anything else."""
    if isinstance(exc, OSError):
        return describe_os_error(exc), 2
    if isinstance(exc, MemoryError):
        return (
            "out of memory (the process may use less memory than the workload needs: a container limit or "
            "ulimit -v); try a smaller workload or raise the limit",
            2,
        )
    if isinstance(exc, UnicodeEncodeError):
        return (
            f"the output's encoding ({exc.encoding}) cannot show a character; set PYTHONIOENCODING=utf-8",
            2,
        )
    if isinstance(exc, RecursionError):
        return "an input nested too deeply to process", 2
    where = ""
    tb = traceback.extract_tb(exc.__traceback__) if exc.__traceback__ else []
    if tb:
        frame = tb[-1]
        where = f" in {os.path.basename(frame.filename)}:{frame.lineno}"
    text = " ".join(str(exc).split())[:300] or "(no message)"
    return (
        f"unexpected {type(exc).__name__}{where}: {text}; this is a bug: rerun with --debug for the "
        "traceback and report it",
        1,
    )


def silence_stdout() -> None:
    """After a closed pipe: point stdout at /dev/null so Python's exit flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


__all__ = ["AsciiFallback", "cwd_missing", "describe", "describe_os_error", "safe_streams", "silence_stdout"]


def default_flag(setting: str) -> str:
    """The flag that sets a library setting: its name with dashes (``max_mb`` -> ``--max-mb``); a command
    whose flag is spelt otherwise says so with ``common.flags``."""
    return "--" + setting.replace("_", "-")


def error_text(exc: BaseException) -> str:
    """An error's message with the settings it names written as the flags that set them."""
    template = getattr(exc, "template", None)
    return name_settings(template, default_flag) if isinstance(template, str) else str(exc)
