"""Saving a command's records under the output policy: --out in the format its extension names (or a
default file named after host and time), the --export-* files, a fallback file when the save fails, the
checkpoints of a multi-step run, and what an interrupt leaves."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

from ..errors import UserError
from ..model import ResultRecord
from ..report.escape import clean_text
from ..results.files import document_json, save_records
from ..system.host import host_label
from ..util.outputs import atomic_write_text, write_new
from .boundary import error_text
from .console import say
from .exports import export_text, format_for
from .settings import Settings


def write_exports(records: list[ResultRecord], suite: str, settings: Settings) -> None:
    """Each --export-FORMAT file, in its format (after the results are saved: they come first)."""
    for fmt, path in settings.exports:
        text = export_text(fmt, records, suite)
        written = atomic_write_text(path, text, f"--export-{fmt}", settings.force, settings.protected_paths())
        say(f"exported {len(records)} record(s) as {fmt} to {clean_text(str(written), keep_newlines=False)}")


def default_out_stem(suite: str) -> str:
    """Unique per run: the time to the millisecond and the process id (parallel runs never collide;
    the file is also created only if the name is free)."""
    now = datetime.now()
    stamp = f"{now.strftime('%Y%m%dT%H%M%S')}.{now.microsecond // 1000:03d}"
    return f"anebench-{suite}-{host_label()}-{stamp}-{os.getpid()}"


def fallback_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir("anebench", appauthor=False)) / "unsaved"


def _fallback_dirs() -> Iterator[Path]:
    yield fallback_dir()
    yield Path(tempfile.gettempdir())  # raises when no temp dir is usable: the caller catches it


def keep_unsaved(records: list[ResultRecord], suite: str) -> Path | None:
    """The records in the user data dir (or the temp dir) when they could not be saved where asked;
    None when neither can take them."""
    data = document_json(records).encode()
    places = _fallback_dirs()
    while True:
        try:
            directory = next(places)
            return write_new(directory, default_out_stem(suite), ".json", data)
        except StopIteration:
            return None
        except (OSError, UserError):
            continue


def where_default_goes() -> str:
    """The folder a default-named file goes to, for messages; a deleted working directory is named."""
    try:
        return str(Path.cwd())
    except FileNotFoundError:
        return "the current directory (it no longer exists)"


def save_out(out: Path, records: list[ResultRecord], suite: str, settings: Settings,
             force: bool | None = None) -> Path:
    """--out in the format its extension names (the results document for .json). ``force``: replace
    ``out`` whatever --force says (a checkpoint replacing its own file)."""
    fmt = format_for(out)
    force = settings.force if force is None else force
    if fmt == "json":
        return save_records(out, records, "--out", force, settings.protected_paths())
    text = export_text(fmt, records, suite)
    return atomic_write_text(out, text, "--out", force, settings.protected_paths())


def save_results(records: list[ResultRecord], suite: str, out: Path | None, settings: Settings) -> Path:
    """Save under the output policy; if that fails, keep the records in a fallback file and say where."""
    try:
        if out is not None:
            return save_out(out, records, suite, settings)
        return write_new(Path.cwd(), default_out_stem(suite), ".json", document_json(records).encode())
    except (OSError, UserError) as exc:
        reason = error_text(exc) if isinstance(exc, UserError) else f"{exc.strerror or exc}"
        kept = keep_unsaved(records, suite)
        where = (
            f"they are kept in {kept}"
            if kept
            else f"and could not be kept in {fallback_dir()} or the temp dir either: they are lost; "
            "rerun with --json (or --format) to get them on stdout"
        )
        raise UserError(
            f"could not save the {len(records)} measured record(s) to {out or where_default_goes()}: "
            f"{reason}; {where}"
        ) from None


class StepSaver:
    """Saves a multi-step run's records as each step finishes (the file is rewritten whole, atomically),
    so a second Ctrl-C, SIGHUP, SIGKILL or a closed stdout loses only the step that was running. The
    first save picks the name (--out or a default one); later saves replace that file. A failed save
    stops the checkpoints quietly: the final save reports it (and keeps the records elsewhere)."""

    def __init__(self, suite: str, settings: Settings, steps: int):
        self.suite, self.settings, self.out = suite, settings, settings.out
        self.path: Path | None = None
        self.count = 0
        self.active = not settings.no_save and steps > 1

    def __call__(self, records: list[ResultRecord]) -> None:
        if not self.active:
            return
        try:
            if self.path is not None:
                save_out(self.path, records, self.suite, self.settings, force=True)
            elif self.out is not None:
                self.path = save_out(self.out, records, self.suite, self.settings)
            else:
                data = document_json(records).encode()
                self.path = write_new(Path.cwd(), default_out_stem(self.suite), ".json", data)
            self.count = len(records)
            _remember_saved(self.path, self.count)
        except (OSError, UserError):
            self.active = False

    def final_out(self) -> Path | None:
        """Where the final save goes: the checkpoint file when there is one."""
        return self.path or self.out


# This command's last checkpoint (file, records): read by the CLI's boundary after the command unwound.
SAVED_SO_FAR: dict[str, tuple[Path, int]] = {}


def _remember_saved(path: Path, count: int) -> None:
    SAVED_SO_FAR["last"] = (path, count)


def interrupted_line() -> str:
    """What an interrupt leaves: the checkpointed records, or nothing."""
    last = SAVED_SO_FAR.get("last")
    if last is None:
        return "interrupted: nothing was saved"
    return f"interrupted: the {last[1]} finished record(s) are saved to {clean_text(str(last[0]), False)}"


def hold_signals() -> None:
    """From here on a further Ctrl-C, SIGTERM or SIGHUP cannot cut short the saving of finished work."""
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        for name in ("SIGINT", "SIGTERM", "SIGHUP"):
            signum = getattr(signal, name, None)
            if signum is not None:
                signal.signal(signum, signal.SIG_IGN)
