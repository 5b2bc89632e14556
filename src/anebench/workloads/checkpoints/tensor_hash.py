"""The sha256 of one tensor's bytes, streamed in chunks and cached by file identity.

Hashing a 1 GB head reads the whole tensor once (about a second); the cache makes every later run
free. A cache entry is keyed by the resolved file path, its size, inode, mtime and ctime and the
tensor's byte range, so a rewritten file is hashed again even when its mtime was set back (ctime cannot
be set by a user), and a file replaced by another (new inode) too. The cache is only an optimisation:
any failure to read or write it falls back to hashing, and entries are written atomically, one file per
key, so concurrent runs never see half an entry.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from ...errors import UserError
from ...util.hashing import stream_sha256
from ...util.outputs import atomic_write_bytes
from ...util.paths import cache_dir as kind_cache_dir
from .safetensors_file import TensorEntry

CACHE_VERSION = 2  # 2: inode and ctime joined the key
CACHE_KIND = "tensor-sha256"


def cache_dir() -> Path:
    return kind_cache_dir(CACHE_KIND)


def _cache_key(entry: TensorEntry) -> dict:
    stat = entry.path.stat()
    return {
        "version": CACHE_VERSION,
        "path": str(entry.path.resolve()),
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
        "inode": stat.st_ino,
        "device": stat.st_dev,
        "offset": entry.offset,
        "nbytes": entry.nbytes,
    }


def tensor_sha256(entry: TensorEntry, use_cache: bool = True) -> str:
    """sha256 of exactly the tensor's stored bytes."""
    if not use_cache:
        return stream_sha256(entry.path, entry.offset, entry.nbytes)
    try:
        key = _cache_key(entry)
    except OSError:
        return stream_sha256(entry.path, entry.offset, entry.nbytes)
    canonical = json.dumps(key, sort_keys=True)
    cached = cache_dir() / (hashlib.sha256(canonical.encode()).hexdigest()[:40] + ".json")
    try:
        stored = json.loads(cached.read_text(encoding="utf-8"))
        if stored.get("key") == key and isinstance(stored.get("sha256"), str) and len(stored["sha256"]) == 64:
            return stored["sha256"]
    except (OSError, ValueError, AttributeError):
        pass
    value = stream_sha256(entry.path, entry.offset, entry.nbytes)
    try:
        atomic_write_bytes(cached, json.dumps({"key": key, "sha256": value}, sort_keys=True).encode())
    except (OSError, UserError):
        pass  # a read-only cache costs a re-hash next time, nothing more
    return value
