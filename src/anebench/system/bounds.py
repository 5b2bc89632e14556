"""The plausibility bound: the highest GB/s a device can give, above which a figure is a measurement error.

A weight read cannot beat the memory system it reads from. Where the device's peak is published (the chip
catalog: Apple's memory bandwidth, NVIDIA's datasheet), that peak plus a margin for the datasheet's
rounding is the bound; where it is not, a stated generous bound still catches the gross errors (events on
the wrong GPU, a unit slip) that give figures 10x too high. Weights that may sit in a cache can beat the
memory bandwidth, so they are bounded only by the record schema's limit.

``stored_record_bound`` is the same rule for a stored record of any machine, measured or stated elsewhere:
a wider margin (the published figure's rounding, a faster memory configuration than the catalog's) and a
cache bound tied to the chip's memory bandwidth, since the record's own cache may not be stated.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import MeasurementError
from ..model.statistics import MiB
from .chips import lookup_chip

DATASHEET_MARGIN = 1.05  # datasheets round (H200: "4.8 TB/s"); no real read comes near the peak anyway
CACHE_FACTOR = 4  # STREAM's rule: past 4x the last-level cache nothing useful stays cached
ASSUMED_MAX_CACHE_BYTES = 128 * MiB  # when not stated: above every catalog chip's (M2 Ultra: 96 MB)
UNKNOWN_CACHE_FLOOR_BYTES = CACHE_FACTOR * ASSUMED_MAX_CACHE_BYTES
SCHEMA_LIMIT_GBPS = 100_000.0  # anebench.model's GigabytesPerSecond: nothing streams 100 TB/s
UNKNOWN_GPU_GBPS = 20_000.0  # 2.5x the fastest datasheet HBM in the catalog (B200, 8 TB/s)
UNKNOWN_APPLE_GBPS = 2_000.0  # 2.4x the fastest Apple memory system published (M3 Ultra, 819 GB/s)
CPU_GBPS = 4_000.0  # 2x a two-socket 12-channel MRDIMM-8800 server (~1.7 TB/s) or HBM Xeon Max (~2 TB/s)
APPLE_DEVICES = ("ane", "gpu", "mps", "all")
# A stored figure may exceed the chip's published memory bandwidth by this fraction (rounding of
# the published figure, a slightly faster memory configuration); more is a timing or unit error.
RECORD_MARGIN = 1.10
# Weights that may fit in a cache stream from SRAM, far faster than DRAM: a stored record's bound is this
# multiple of the memory bandwidth (or the unknown-device bound, whichever is larger).
CACHE_RESIDENT_FACTOR = 20.0


@dataclass(frozen=True)
class Bound:
    gbps: float
    source: str


def may_be_cache_resident(weight_bytes: int, cache_bytes: int | None) -> bool:
    if cache_bytes:
        return weight_bytes < CACHE_FACTOR * cache_bytes
    return weight_bytes < UNKNOWN_CACHE_FLOOR_BYTES


def plausibility_bound(device: str, *, gpu_name: str | None, host_chip: str | None, weight_bytes: int,
                       cache_bytes: int | None) -> Bound:
    """The bound for a figure measured on ``device`` (``gpu_name`` for CUDA, ``host_chip`` on a Mac)."""
    if may_be_cache_resident(weight_bytes, cache_bytes):
        where = f"{cache_bytes / 1e6:.1f} MB cache" if cache_bytes else "an unknown cache"
        return Bound(SCHEMA_LIMIT_GBPS, f"weights ({weight_bytes / 1e6:.1f} MB) may sit in {where}: only "
                                        f"the record schema's {SCHEMA_LIMIT_GBPS:g} GB/s limit applies")
    if device.startswith("cuda"):
        chip = lookup_chip(gpu_name)
        if chip is not None and chip.kind == "gpu" and chip.bandwidth_gbps_max:
            return _published(chip.key, chip.bandwidth_gbps_max, chip.source)
        return Bound(UNKNOWN_GPU_GBPS, f"GPU {gpu_name or '(unnamed)'} is not in the chip catalog: generous "
                                       f"bound {UNKNOWN_GPU_GBPS:g} GB/s (2.5x B200's 8 TB/s datasheet)")
    chip = lookup_chip(host_chip)
    if chip is not None and chip.vendor == "Apple":
        if chip.bandwidth_gbps_max:
            return _published(f"Apple {chip.key}", chip.bandwidth_gbps_max, chip.source)
        return Bound(UNKNOWN_APPLE_GBPS, f"Apple {chip.key}'s bandwidth is not published: generous bound "
                                         f"{UNKNOWN_APPLE_GBPS:g} GB/s (2.4x M3 Ultra's 819 GB/s)")
    if device in APPLE_DEVICES or (host_chip or "").startswith("Apple"):
        chip_name = host_chip or "(unknown)"
        return Bound(UNKNOWN_APPLE_GBPS, f"chip {chip_name} is not in the chip catalog: generous bound "
                                         f"{UNKNOWN_APPLE_GBPS:g} GB/s (2.4x M3 Ultra's 819 GB/s)")
    return Bound(CPU_GBPS, f"no published peak for {device!r} here: generous CPU bound {CPU_GBPS:g} GB/s "
                           "(2x the fastest two-socket server memory systems)")


def stored_record_bound(chip_name: str | None, weight_bytes: int, device: str = "") -> Bound:
    """The highest GB/s a stored record of ``chip_name`` can honestly show, and why: the catalog's
    memory bandwidth plus a margin, a generous cache bound for weights that may fit in a cache, or the
    stated bound for a device the catalog does not know.

    Only the catalog and the weight size decide: never what the record says of itself (its cache size,
    a "cache-resident" warning), which a hostile file could state to lift its own bound. "May fit in a
    cache" means smaller than 4x the largest cache of any catalog chip (``ASSUMED_MAX_CACHE_BYTES``)."""
    chip = lookup_chip(chip_name)
    small = may_be_cache_resident(weight_bytes, None)
    if chip is None or not chip.bandwidth_known or chip.bandwidth_gbps_max is None:
        if chip_name is None:
            what = "no chip is stated"
        elif chip is None:
            what = f"{chip_name!r} is not in the chip catalog"
        else:
            what = f"{chip.key} has no published bandwidth"
        if small or device.startswith("cuda"):
            return Bound(UNKNOWN_GPU_GBPS,
                         f"{what}; the bound for an unknown device is {UNKNOWN_GPU_GBPS:g} GB/s")
        if device == "cpu":
            return Bound(CPU_GBPS, f"{what}; the bound for a CPU is {CPU_GBPS:g} GB/s (2x the fastest "
                                   "two-socket server memory systems)")
        if device in APPLE_DEVICES or (chip_name or "").strip().lower().startswith("apple"):
            return Bound(UNKNOWN_APPLE_GBPS, f"{what}; the bound for an Apple chip is {UNKNOWN_APPLE_GBPS:g} "
                                             "GB/s (2.4x M3 Ultra's 819 GB/s)")
        return Bound(UNKNOWN_GPU_GBPS,
                     f"{what}; the bound for an unknown device is {UNKNOWN_GPU_GBPS:g} GB/s")
    memory = chip.bandwidth_gbps_max
    if small:
        bound = max(memory * CACHE_RESIDENT_FACTOR, UNKNOWN_GPU_GBPS)
        return Bound(bound, f"weights ({weight_bytes / 1e6:.1f} MB) small enough for a cache on {chip.key}: "
                            f"at most {bound:g} GB/s")
    return Bound(memory * RECORD_MARGIN,
                 f"{chip.key} has {memory:g} GB/s of memory bandwidth (+{RECORD_MARGIN - 1:.0%})")


def _published(name: str, peak: float, source: str) -> Bound:
    return Bound(peak * DATASHEET_MARGIN,
                 f"{name}: {peak:g} GB/s published ({source}) + {DATASHEET_MARGIN - 1:.0%} for rounding")


def check_plausible(figures: dict[str, float | None], bound: Bound) -> None:
    """Refuse the first figure above ``bound``: it is a measurement error, not a result."""
    for what, gbps in figures.items():
        if gbps is not None and gbps > bound.gbps:
            raise MeasurementError(
                f"{what} {gbps:.1f} GB/s is above the plausibility bound of {bound.gbps:.0f} GB/s "
                f"({bound.source}); refused as a measurement error"
            )
