"""The bundle cache: one directory per build key, written in a temporary directory and renamed into place.

A cache entry is complete or absent: a build that fails or is interrupted leaves only a temporary
directory (removed on the way out), and a finished one appears with its manifest in one rename. A build
holds a lock on a file in its staging folder; the next build into the same cache removes every staging
folder whose lock is free (its builder was SIGKILLed, e.g. by the OOM killer). The
manifest records the spec, the coremltools version, the weight bytes the program reads (parsed from
the program, not from file sizes) and the sha256 of the weight file.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar

from ..errors import UserError, setting
from ..util.hashing import file_sha256
from ..util.paths import CACHE_ENV, cache_root
from .coreml import BuildSpec, SplitProgress, build_bundle
from .mlprogram import MLProgramBundle

MANIFEST_NAME = "anebench-build.json"
STAGING = re.compile(r"^\.[0-9a-f]{16}-")  # .KEY16-RANDOM: a build's staging folder
STAGING_LOCK = ".building"
# A folder without a lock file: an older version's build (or one being created this instant); removed
# only once older than any build takes.
UNLOCKED_GRACE_S = 24 * 3600.0
MANIFEST_SCHEMA = "anebench.coreml-build/1"
def default_cache_dir() -> Path:
    """The bundle cache: ``$ANEBENCH_CACHE_DIR`` or the platform's cache directory (e.g.
    ~/Library/Caches/anebench), the root the other caches keep their subdirectories under."""
    return cache_root()


@dataclass
class Artifact:
    """A built bundle in the cache and what its manifest says about it."""

    package: Path
    manifest: dict
    reused: bool

    @property
    def weight_bytes(self) -> int:
        return int(self.manifest["weight_bytes"])

    @property
    def weight_sha256(self) -> str:
        return self.manifest["weight_sha256"]

    def open(self) -> MLProgramBundle:
        return MLProgramBundle(self.package)


def describe_bundle(spec: BuildSpec, package: Path, seconds: float) -> dict:
    """The manifest of a freshly built bundle, read back from the bundle itself."""
    from ._coremltools import coremltools as import_coremltools

    coremltools = import_coremltools()

    bundle = MLProgramBundle(package)
    files = sorted({blob.file for blob in bundle.blobs.values()})
    if len(files) != 1:
        raise ValueError(f"{package}: expected one weight file, the program reads {len(files)}")
    weight_file = files[0]
    op_counts: dict[str, int] = {}
    for op_type in bundle.op_types():
        op_counts[op_type] = op_counts.get(op_type, 0) + 1
    return {
        "schema": MANIFEST_SCHEMA,
        "key": spec.key,
        "spec": spec.description(),
        "workload": spec.workload.name,
        "workload_fingerprint": spec.workload.fingerprint,
        "coremltools": coremltools.__version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": round(seconds, 3),
        "package": package.name,
        "quant": spec.quant,
        "lut_mode": spec.resolved_lut_mode if spec.is_lut else None,
        "group_size": spec.group_size if spec.is_lut else None,
        "repeat": spec.repeat,
        "tokens": spec.tokens,
        "splits": [stop - start for start, stop in spec.splits],
        "inputs": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in bundle.inputs],
        "outputs": [{"name": t.name, "shape": list(t.shape), "dtype": t.dtype} for t in bundle.outputs],
        "op_counts": op_counts,
        "weight_bytes": bundle.weight_bytes,
        "weight_blobs": len(bundle.blobs),
        "weight_file": str(weight_file.relative_to(package)),
        "weight_file_bytes": weight_file.stat().st_size,
        "weight_sha256": file_sha256(weight_file),
        "notes": [note for note in [spec.conversion_note] if note],
    }


def _cached(entry: Path, key: str) -> Artifact | None:
    manifest_path = entry / MANIFEST_NAME
    try:
        manifest = json.loads(manifest_path.read_text())
    except (OSError, ValueError):
        return None
    package = entry / manifest.get("package", "")
    weight_file = package / manifest.get("weight_file", "")
    complete = (
        manifest.get("schema") == MANIFEST_SCHEMA
        and manifest.get("key") == key
        and weight_file.is_file()
        and weight_file.stat().st_size == manifest.get("weight_file_bytes")
    )
    return Artifact(package, manifest, reused=True) if complete else None


def lookup(spec: BuildSpec, cache_dir: Path | None = None) -> Artifact | None:
    """The complete cached bundle for ``spec``, or None; builds nothing (what a dry run asks)."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return _cached(cache_dir / spec.key, spec.key)


def lock_staging(staging: Path) -> int:
    """Hold an exclusive lock in the staging folder for as long as this process lives (the kernel
    releases it however the process ends)."""
    fd = os.open(staging / STAGING_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _abandoned(folder: Path) -> bool:
    try:
        fd = os.open(folder / STAGING_LOCK, os.O_RDWR)
    except FileNotFoundError:  # an older version's folder, or one whose builder is just starting
        try:
            return time.time() - folder.stat().st_mtime > UNLOCKED_GRACE_S
        except OSError:
            return False
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True  # nobody holds it: its builder is gone
    except OSError:
        return False  # a build in progress
    finally:
        os.close(fd)


def remove_abandoned_staging(cache_dir: Path) -> list[Path]:
    """Remove the staging folders of builds that died without cleaning up; the removed folders."""
    removed: list[Path] = []
    try:
        candidates = [p for p in cache_dir.iterdir() if STAGING.match(p.name) and p.is_dir()]
    except OSError:
        return removed
    for folder in candidates:
        if _abandoned(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def build_or_reuse(spec: BuildSpec, cache_dir: Path | None = None,
                   progress: SplitProgress | None = None) -> Artifact:
    """The bundle for ``spec``: from the cache when it is there and complete, else built into it."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = cache_dir / spec.key
    found = _cached(entry, spec.key)
    if found is not None:
        return found
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        remove_abandoned_staging(cache_dir)
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.key[:16]}-", dir=cache_dir))
        lock = lock_staging(staging)
    except OSError as exc:
        raise UserError(
            f"bundle cache {cache_dir}: cannot write there ({exc.strerror or exc}); "
            f"choose another with ${CACHE_ENV} or the build's {setting('cache_dir')}"
        ) from None
    try:
        started = time.perf_counter()
        package = staging / spec.bundle_name()
        build_bundle(spec, package, progress)
        manifest = describe_bundle(spec, package, time.perf_counter() - started)
        found = publish_staged(staging, entry, manifest, lambda: _cached(entry, spec.key))
        if found is not None:
            return found
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        os.close(lock)
    return Artifact(entry / spec.bundle_name(), manifest, reused=False)


T = TypeVar("T")


def publish_staged(staging: Path, entry: Path, manifest: dict[str, Any],
                   already_built: Callable[[], T | None]) -> T | None:
    """Move a finished build from ``staging`` to its cache ``entry`` (one rename), with its manifest.

    Returns None once published, or what ``already_built`` finds when another process published the same
    entry first (the rename then fails); any other failure is raised. Shared by every artifact cache."""
    (staging / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    (staging / STAGING_LOCK).unlink()  # not part of the entry; the lock itself holds until the end
    if entry.exists():  # a stale or partial entry (or a concurrent build): replace it
        shutil.rmtree(entry, ignore_errors=True)
    try:
        os.rename(staging, entry)
    except OSError:
        found = already_built()
        if found is None:
            raise
        return found
    return None
