"""Before a bundle is built: is there the memory and the disk for it? Refused in well under a second,
before a byte is allocated, like `run`'s memory preflight.

The builder's peak RSS is at most BUILD_MEMORY_FACTOR x the bundle's weight bytes (benchmarks/bench_build.py
checks 2.5x); the cache needs the weight file once, and --out a second copy.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from ..errors import UserError, setting
from ..system.host import available_memory_bytes
from ..workloads import Workload

BUILD_MEMORY_FACTOR = 2.5
DISK_HEADROOM = 1.05  # the program, manifest and file-system blocks beside weight.bin


def bundle_bytes(workload: Workload, quant: str | None, repeat: int = 1) -> int:
    """Weight bytes the bundle will hold: fp16 unless quantised, times the weight sets."""
    quant = quant or workload.quant or "fp16"
    base = workload.bytes_as("fp16") if quant == "fp16" else replace(workload, quant=quant).stored_bytes
    return base * repeat


def _existing(path: Path) -> Path:
    """The nearest existing folder of ``path`` (where the free space is measured)."""
    path = Path(path).absolute()
    while not path.exists() and path.parent != path:
        path = path.parent
    return path


def check_build_resources(workload: Workload, quant: str | None, repeat: int, cache_dir: Path,
                          out: Path | None = None) -> None:
    size = bundle_bytes(workload, quant, repeat)
    memory = size * BUILD_MEMORY_FACTOR
    free = available_memory_bytes()
    if memory > free:
        raise UserError(f"build {workload.name[:80]} ({quant or workload.quant or 'fp16'}, repeat {repeat}): "
                        f"needs about {memory / 1e9:.2f} GB of memory ({BUILD_MEMORY_FACTOR:g}x its "
                        f"{size / 1e9:.2f} GB of weights), but only {free / 1e9:.2f} GB is free; choose a "
                        "smaller workload or fewer weight sets")
    needs: dict[int, tuple[Path, float]] = {}
    for place, copies in ((cache_dir, 1), (out, 1)):
        if place is None:
            continue
        where = _existing(place)
        device = where.stat().st_dev
        previous = needs.get(device, (where, 0.0))[1]
        needs[device] = (where, previous + copies * size * DISK_HEADROOM)
    for where, needed in needs.values():
        try:
            free_disk = shutil.disk_usage(where).free
        except OSError:
            continue  # free space unknown: the build reports a full disk if it meets one
        if needed > free_disk:
            raise UserError(
                f"build {workload.name[:80]}: needs {needed / 1e9:.2f} GB of disk in {where}, but "
                f"only {free_disk / 1e9:.2f} GB is free; free space or choose {setting('cache_dir')} / "
                f"{setting('out')}"
            )


__all__ = ["BUILD_MEMORY_FACTOR", "bundle_bytes", "check_build_resources"]
