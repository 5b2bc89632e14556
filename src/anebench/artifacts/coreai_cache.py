"""The Core AI asset cache, beside the Core ML bundles: one directory per build key, complete or absent.

An asset is written in a temporary directory and renamed into place with its manifest, as a bundle is
(``cache.py``). The manifest records the workload fingerprint (the Core ML bundle's, for the same
workload), the weight bytes and ``weights_sha256`` (equal to the Core ML bundle's for the same bytes),
the program file's sha256, and the asset summary that coreai-core itself reads back.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from ..errors import UserError, setting
from ..util.hashing import file_sha256
from ..util.paths import CACHE_ENV
from . import _coreai
from .cache import (
    MANIFEST_NAME,
    default_cache_dir,
    lock_staging,
    publish_staged,
    remove_abandoned_staging,
)
from .coreai import (
    FUNCTION,
    PROGRAM_FILE,
    AssetSpec,
    SplitProgress,
    asset_summary,
    weights_sha256,
    write_asset,
)

MANIFEST_SCHEMA = "anebench.coreai-build/1"


@dataclass
class AssetArtifact:
    """A built asset in the cache and what its manifest says about it."""

    package: Path
    manifest: dict
    reused: bool

    @property
    def weight_bytes(self) -> int:
        return int(self.manifest["weight_bytes"])

    @property
    def weight_sha256(self) -> str:
        return self.manifest["weights_sha256"]


def check_summary(spec: AssetSpec, summary: dict) -> None:
    """The asset must store exactly the weights asked for (a pass that folded, deduplicated or re-typed a
    constant would show here) and take and return what the engine feeds and reads."""
    stored = summary["storage_types"]
    expected = spec.expected_storage()
    for dtype, (least, most) in expected.items():
        if not least <= stored.get(dtype, 0) <= most:
            span = f"{least:,}" if least == most else f"{least:,} to {most:,}"
            raise ValueError(f"the asset stores {stored} elements by type; expected {dtype} x {span}")
    if set(stored) - set(expected):
        raise ValueError(f"the asset stores {stored} elements by type; expected only {', '.join(expected)}")
    outputs = summary["functions"].get(FUNCTION, {}).get("outputs", [])
    if len(outputs) != len(spec.splits):
        raise ValueError(f"the asset's {FUNCTION} returns {len(outputs)} outputs, not {len(spec.splits)}")


def describe_asset(spec: AssetSpec, package: Path, digests, seconds: float) -> dict:
    """The manifest of a freshly built asset, its storage read back by coreai-core."""
    summary = asset_summary(package)
    check_summary(spec, summary)
    program = package / PROGRAM_FILE
    return {
        "schema": MANIFEST_SCHEMA,
        "key": spec.key,
        "spec": spec.description(),
        "workload": spec.workload.name,
        "workload_fingerprint": spec.workload.fingerprint,
        "coreai_core": _coreai.version(),
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "build_seconds": round(seconds, 3),
        "package": package.name,
        "function": FUNCTION,
        "quant": spec.quant,
        "tokens": spec.tokens,
        "splits": [stop - start for start, stop in spec.splits],
        "weight_bytes": sum(d.nbytes for d in digests),
        "weight_blobs": len(digests),
        "weights_sha256": weights_sha256(digests),
        "program_file": PROGRAM_FILE,
        "program_file_bytes": program.stat().st_size,
        "program_sha256": file_sha256(program),
        "summary": summary,
        "notes": [note for note in [spec.conversion_note] if note],
    }


def _cached(entry: Path, key: str) -> AssetArtifact | None:
    try:
        manifest = json.loads((entry / MANIFEST_NAME).read_text())
    except (OSError, ValueError):
        return None
    program = entry / manifest.get("package", "") / manifest.get("program_file", PROGRAM_FILE)
    complete = (
        manifest.get("schema") == MANIFEST_SCHEMA
        and manifest.get("key") == key
        and program.is_file()
        and program.stat().st_size == manifest.get("program_file_bytes")
    )
    return AssetArtifact(entry / manifest["package"], manifest, reused=True) if complete else None


def lookup_asset(spec: AssetSpec, cache_dir: Path | None = None) -> AssetArtifact | None:
    """The complete cached asset for ``spec``, or None; builds nothing (what a dry run asks)."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    return _cached(cache_dir / spec.key, spec.key)


def build_or_reuse_asset(spec: AssetSpec, cache_dir: Path | None = None,
                         progress: SplitProgress | None = None) -> AssetArtifact:
    """The asset for ``spec``: from the cache when it is there and complete, else built into it."""
    cache_dir = Path(cache_dir) if cache_dir is not None else default_cache_dir()
    entry = cache_dir / spec.key
    found = _cached(entry, spec.key)
    if found is not None:
        return found
    try:
        cache_dir.mkdir(parents=True, exist_ok=True)
        remove_abandoned_staging(cache_dir)
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.key[:16]}-", dir=cache_dir))
        lock = lock_staging(staging)  # the bundle cache's rule: a live build holds its staging folder
    except OSError as exc:
        raise UserError(
            f"asset cache {cache_dir}: cannot write there ({exc.strerror or exc}); "
            f"choose another with ${CACHE_ENV} or the build's {setting('cache_dir')}"
        ) from None
    try:
        started = time.perf_counter()
        package = staging / spec.asset_name()
        digests = write_asset(spec, package, progress)
        manifest = describe_asset(spec, package, digests, time.perf_counter() - started)
        found = publish_staged(staging, entry, manifest, lambda: _cached(entry, spec.key))
        if found is not None:
            return found
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
        os.close(lock)
    return AssetArtifact(entry / spec.asset_name(), manifest, reused=False)
