"""The one sha256 streamer: a file, or a byte range of it, read in fixed chunks (never whole in memory)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..errors import UserError

CHUNK_BYTES = 8 << 20


def stream_sha256(path: Path, offset: int = 0, nbytes: int | None = None) -> str:
    """sha256 of ``nbytes`` bytes of ``path`` from ``offset`` (``None``: to the end of the file).

    A file shorter than the range, or one that cannot be read, is a ``UserError`` naming the path."""
    digest = hashlib.sha256()
    buffer = bytearray(CHUNK_BYTES if nbytes is None else min(CHUNK_BYTES, max(nbytes, 1)))
    view = memoryview(buffer)
    remaining = nbytes
    try:
        with open(path, "rb", buffering=0) as handle:
            handle.seek(offset)
            while remaining is None or remaining:
                want = len(buffer) if remaining is None else min(len(buffer), remaining)
                got = handle.readinto(view[:want])
                if not got:
                    if remaining is None:
                        break
                    raise UserError(f"{path}: truncated while hashing ({remaining} bytes missing)")
                digest.update(view[:got])
                if remaining is not None:
                    remaining -= got
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of the whole file."""
    return stream_sha256(path)
