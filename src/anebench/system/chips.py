"""The chip catalog (package data ``data/chips.csv``): memory bandwidth and core counts as published.

Names are looked up leniently ("Apple M4 Pro", "m4 pro", "NVIDIA H100 80GB HBM3") but never fuzzily:
an unknown name is None, not the nearest chip, so a figure is never put against the wrong bandwidth.
"""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

_VENDOR_PREFIXES = ("apple ", "nvidia ", "geforce ")


@dataclass(frozen=True)
class Chip:
    key: str  # "M4 Pro", "H100 SXM"
    vendor: str
    family: str  # "M4" for M4/M4 Pro/M4 Max; the GPU architecture for NVIDIA
    kind: str  # "soc" | "gpu"
    bandwidth_gbps_min: float | None  # None: not published
    bandwidth_gbps_max: float | None
    bandwidth_note: str
    neural_engine_cores: int | None
    gpu_cores: str  # "7 or 8" where configurations differ; "" when not published
    aliases: tuple[str, ...]
    source: str

    @property
    def bandwidth_known(self) -> bool:
        return self.bandwidth_gbps_min is not None and self.bandwidth_gbps_max is not None

    @property
    def bandwidth_varies(self) -> bool:
        return self.bandwidth_known and self.bandwidth_gbps_min != self.bandwidth_gbps_max

    def bandwidth_label(self) -> str:
        if not self.bandwidth_known:
            return "not published"
        if self.bandwidth_varies:
            return f"{self.bandwidth_gbps_min:g}-{self.bandwidth_gbps_max:g} (by configuration)"
        return f"{self.bandwidth_gbps_min:g}"

    def utilisation(self, gbps: float) -> tuple[float, float] | None:
        """(low, high) fraction of the published bandwidth; equal when the chip has one figure."""
        if not self.bandwidth_known:
            return None
        return gbps / self.bandwidth_gbps_max, gbps / self.bandwidth_gbps_min


def normalize(name: str) -> str:
    text = re.sub(r"[\s_\-]+", " ", name.strip().lower())
    for prefix in _VENDOR_PREFIXES:
        text = text.removeprefix(prefix)
    return text.strip()


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def parse_catalog(text: str) -> list[Chip]:
    chips = []
    for row in csv.DictReader(io.StringIO(text)):
        chips.append(Chip(
            key=row["key"],
            vendor=row["vendor"],
            family=row["family"],
            kind=row["kind"],
            bandwidth_gbps_min=_number(row["bandwidth_gbps_min"]),
            bandwidth_gbps_max=_number(row["bandwidth_gbps_max"]),
            bandwidth_note=row["bandwidth_note"],
            neural_engine_cores=int(row["neural_engine_cores"]) if row["neural_engine_cores"] else None,
            gpu_cores=row["gpu_cores"],
            aliases=tuple(a.strip() for a in row["aliases"].split(";") if a.strip()),
            source=row["source"],
        ))
    return chips


@lru_cache(maxsize=1)
def catalog() -> tuple[Chip, ...]:
    text = resources.files("anebench").joinpath("data/chips.csv").read_text(encoding="utf-8")
    return tuple(parse_catalog(text))


@lru_cache(maxsize=1)
def _index() -> dict[str, Chip]:
    index: dict[str, Chip] = {}
    for chip in catalog():
        for name in (chip.key, *chip.aliases):
            index[normalize(name)] = chip
    return index


def lookup_chip(name: str | None) -> Chip | None:
    """The catalog entry for a chip name ("Apple M4 Pro", "M5 Max", "NVIDIA A100-SXM4-80GB"), or None."""
    if not name:
        return None
    return _index().get(normalize(name))


def chip_key(name: str | None) -> str | None:
    chip = lookup_chip(name)
    return chip.key if chip else None


def family_members(family: str) -> list[Chip]:
    return [chip for chip in catalog() if chip.family == family]
