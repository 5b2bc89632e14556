"""The one output policy every writer follows: atomic writes, to regular files only, never over an input.

- A target that is a directory, a device, a FIFO or a socket is refused (``/dev/null`` stays a device).
- A symlink is written *through*: the link stays, the regular file it points to is replaced atomically
  (a link to a device or a directory is refused like the device or directory itself).
- A read-only file is replaced only with ``force``.
- A target that is one of the command's own inputs, or the open results store, is refused.
- An SQLite database (a results store anywhere) and the side files of a protected one (``-journal``,
  ``-wal``, ``-shm``: SQLite deletes or replays them) are refused, ``force`` or not.
- Default names never replace anything: the file is linked into place only if the name is free.

Every refusal is a ``UserError``: one line naming the option and the path, exit code 2.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path

from ..errors import UserError, setting

# (path, what it is to this command), e.g. (db, "the results store (--db)")
Protected = Iterable[tuple[Path, str]]


def _kind(mode: int) -> str | None:
    """Why a file of this mode cannot be a target; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory; give a file name"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "is a device, not a regular file; give a file name"
    if stat.S_ISFIFO(mode):
        return "is a FIFO (named pipe), not a regular file; give a file name"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file; give a file name"
    return "is not a regular file; give a file name"


def same_file(a: Path, b: Path) -> bool:
    """True when both names reach one file: the same resolved path, or the same inode (hard links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


OUT = setting("out")  # the default output a check or write names (the CLI: --out)
SQLITE_MAGIC = b"SQLite format 3\x00"
SQLITE_SIDE_FILES = ("-journal", "-wal", "-shm")


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb", opener=lambda p, f: os.open(p, f | os.O_NONBLOCK)) as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _sqlite_side_file_of(path: Path) -> Path | None:
    """The database a name like ``x.db-journal`` belongs to, when that database exists."""
    for suffix in SQLITE_SIDE_FILES:
        if path.name.endswith(suffix) and len(path.name) > len(suffix):
            database = path.with_name(path.name[: -len(suffix)])
            if _is_sqlite(database):
                return database
    return None


def _own_stream(info: os.stat_result) -> str | None:
    """"standard output" or "standard error" when ``info`` is the regular file this process prints to
    (``--out /proc/self/fd/1`` with stdout redirected to a file: the file would be replaced)."""
    if not stat.S_ISREG(info.st_mode):
        return None  # a pipe or a terminal is written through, as documented
    for fd, name in ((1, "standard output"), (2, "standard error")):
        try:
            stream = os.fstat(fd)
        except OSError:
            continue
        if (stream.st_dev, stream.st_ino) == (info.st_dev, info.st_ino):
            return name
    return None


def check_target(path: Path, what: str = OUT, force: bool = False, protected: Protected = (),
                 need_parent: bool = True, replaces_own_database: bool = False) -> Path:
    """The path to write for ``path`` under the policy (a symlink resolved), or a UserError.

    ``replaces_own_database``: the writer regenerates this SQLite file itself (a leaderboard's built store),
    so an SQLite file there is its own earlier output, not a results store to protect."""
    path = Path(path)
    for other, label in protected:
        other = Path(other)
        if same_file(path, other):
            raise UserError(f"{what} {path}: is {label}; writing there would destroy it")
        for suffix in SQLITE_SIDE_FILES:
            if same_file(path, other.with_name(other.name + suffix)):
                raise UserError(f"{what} {path}: is SQLite's {suffix[1:]} file of {label} {other}; "
                                "SQLite would delete or replay it")
    database = _sqlite_side_file_of(path)
    if database is not None:
        raise UserError(f"{what} {path}: is the side file of the SQLite database {database}; "
                        "SQLite would delete or replay it; give another name")
    target = path
    try:
        link = os.lstat(path)
        info: os.stat_result | None = link
        if stat.S_ISLNK(link.st_mode):
            target = Path(os.path.realpath(path))
            try:  # what the link reaches (/dev/stdout: a pipe or a terminal), not what its name resolves to
                info = os.stat(path)
            except FileNotFoundError:
                info = None  # a dangling link: written through, creating its target
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot be checked ({exc.strerror or exc})") from None
    if info is not None:
        why = _kind(info.st_mode)
        if why:
            raise UserError(f"{what} {path}: {why}")
        # Mode bits, not os.access: as root, access() says every file is writable.
        stream = _own_stream(info)
        if stream:
            raise UserError(f"{what} {path}: is this command's own {stream}, which is redirected there; "
                            "writing the file would replace what the command prints; give another name")
        if stat.S_ISREG(info.st_mode) and not replaces_own_database and _is_sqlite(target):
            raise UserError(f"{what} {path}: is an SQLite database (a results store?); writing there would "
                            "destroy it; give another name")
        if not force and (info.st_mode & 0o222 == 0 or not os.access(target, os.W_OK)):
            raise UserError(f"{what} {path}: is read-only; give {setting('force')} to replace it")
    if need_parent and not target.parent.is_dir():
        raise UserError(f"{what} {path}: directory {target.parent} does not exist")
    return target


def _read_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Read once at import: os.umask can only be read by setting it, which is unsafe once threads run.
_UMASK = _read_umask()


def atomic_write_bytes(path: Path, data: bytes, what: str = "output", force: bool = False,
                       protected: Protected = (), exclusive: bool = False,
                       replaces_own_database: bool = False) -> Path:
    """Write ``data`` beside the target and rename (or, ``exclusive``, link) it into place.

    Never half-written: readers see the old file or the new one. With ``exclusive`` an existing file
    is never replaced (FileExistsError). Returns the path written (a symlink's target).
    """
    target = check_target(path, what, force, protected, need_parent=False,
                          replaces_own_database=replaces_own_database)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise _cannot_write(what, path, exc) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_UMASK)  # mkstemp makes 0600; results are shared files
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        if exclusive:
            os.link(tmp, target)  # fails if the name was taken meanwhile: nothing is replaced
            os.unlink(tmp)
        else:
            os.replace(tmp, target)
    except FileExistsError:
        Path(tmp).unlink(missing_ok=True)
        raise
    except OSError as exc:  # a full disk, a quota, an I/O error: the target named, not the temp file
        Path(tmp).unlink(missing_ok=True)
        raise _cannot_write(what, path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


_WRITE_HINTS = {errno.ENOSPC: "the disk is full", errno.EDQUOT: "the disk quota is used up",
                errno.EACCES: "the folder is not writable", errno.EPERM: "the folder is not writable",
                errno.EROFS: "the file system is read-only", errno.EFBIG: "the file size limit is reached"}


def _cannot_write(what: str, path: Path, exc: OSError) -> UserError:
    hint = _WRITE_HINTS.get(exc.errno or 0)
    reason = exc.strerror or str(exc)
    return UserError(f"{what} {path}: cannot be written ({reason}" + (f": {hint})" if hint else ")")
                     + "; nothing was written there")


def atomic_write_text(path: Path, text: str, what: str = "output", force: bool = False,
                      protected: Protected = ()) -> Path:
    """``atomic_write_bytes`` of ``text`` in UTF-8."""
    return atomic_write_bytes(Path(path), text.encode("utf-8"), what, force, protected)


def write_new(directory: Path, stem: str, suffix: str, data: bytes) -> Path:
    """Write ``data`` under a name not yet taken in ``directory`` (STEM.SUFFIX, then STEM-2.SUFFIX, ...)."""
    for attempt in range(1, 1000):
        name = f"{stem}{'' if attempt == 1 else f'-{attempt}'}{suffix}"
        try:
            return atomic_write_bytes(directory / name, data, exclusive=True)
        except FileExistsError:
            continue
    raise UserError(f"{directory}: no free file name for {stem}{suffix}")


__all__ = ["Protected", "atomic_write_bytes", "atomic_write_text", "check_target", "same_file", "write_new"]
