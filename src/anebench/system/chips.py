"""The chip catalog (package data ``data/chips.csv``): memory bandwidth and core counts as published.

Names are looked up leniently ("Apple M4 Pro", "m4 pro", "NVIDIA H100 80GB HBM3") but never fuzzily:
an unknown name is None, not the nearest chip, so a figure is never put against the wrong bandwidth.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
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
    # (configuration, GB/s) where the bandwidth depends on it, e.g. (("32 GB", 170.0),)
    bandwidth_by_config: tuple[tuple[str, float], ...]
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

    @property
    def bandwidth_by_configuration(self) -> bool:
        """True where the published bandwidth depends on the configuration: figures are rows per config."""
        return bool(self.bandwidth_by_config) or self.bandwidth_varies

    def matching_config(self, config: str | None) -> str | None:
        """The catalog configuration a stated one belongs to ("32 GB Mac" -> "32 GB"), or None."""
        facts = config_facts(config or "")
        for name, _ in self.bandwidth_by_config:
            wanted = config_facts(name)
            if wanted and all(facts.get(k) == v for k, v in wanted.items()):
                return name
        return None

    def bandwidth_for(self, config: str | None = None) -> tuple[float, float] | None:
        """(low, high) GB/s of ``config``: its own figure where the catalog has one, else the chip's
        range (equal when one figure); None where nothing is published for it."""
        name = self.matching_config(config)
        if name is not None:
            value = dict(self.bandwidth_by_config)[name]
            return value, value
        if not self.bandwidth_known:
            return None
        assert self.bandwidth_gbps_min is not None and self.bandwidth_gbps_max is not None
        return self.bandwidth_gbps_min, self.bandwidth_gbps_max

    def bandwidth_label_for(self, config: str | None) -> str:
        bandwidth = self.bandwidth_for(config)
        if bandwidth is None:
            return "not published" + (f" for {config}" if config and self.bandwidth_by_config else "")
        low, high = bandwidth
        return f"{low:g}" if low == high else f"{low:g}-{high:g} (by configuration)"

    def utilisation(self, gbps: float, config: str | None = None) -> tuple[float, float] | None:
        """(low, high) fraction of the published bandwidth of ``config``; equal when it has one figure."""
        bandwidth = self.bandwidth_for(config)
        if bandwidth is None:
            return None
        return gbps / bandwidth[1], gbps / bandwidth[0]


_MEMORY = re.compile(r"(\d+)\s*GB\b", re.IGNORECASE)
_CPU_CORES = re.compile(r"(\d+)\s*(?:-\s*core|core|C)\s*CPU\b", re.IGNORECASE)


def config_facts(config: str) -> dict[str, int]:
    """The facts of a configuration's text that set its bandwidth: memory (GB) and CPU cores."""
    facts = {}
    if (memory := _MEMORY.search(config)) is not None:
        facts["memory_gb"] = int(memory[1])
    if (cores := _CPU_CORES.search(config)) is not None:
        facts["cpu_cores"] = int(cores[1])
    return facts


def host_config(cores: int | None, memory_bytes: int | None) -> str:
    """A measured host's configuration in the catalog's words: "16-core CPU / 48 GB"."""
    parts = []
    if cores:
        parts.append(f"{cores}-core CPU")
    if memory_bytes:
        parts.append(f"{round(memory_bytes / 2**30)} GB")
    return " / ".join(parts)


# Invisible format characters (zero-width space and joiners, word joiner, BOM, soft hyphen, bidi marks,
# tag characters): "Apple M1\u200b" is the M1, not an unknown chip with a generous bound.
INVISIBLE = re.compile("[\u00ad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff"
                       "\U000e0000-\U000e007f]")


def normalize(name: str) -> str:
    text = INVISIBLE.sub("", unicodedata.normalize("NFKC", name))
    text = re.sub(r"[\s_\-]+", " ", text.strip().lower())
    for prefix in _VENDOR_PREFIXES:
        text = text.removeprefix(prefix)
    return text.strip()


def _number(text: str) -> float | None:
    return float(text) if text.strip() else None


def _by_config(text: str) -> tuple[tuple[str, float], ...]:
    pairs = []
    for item in filter(None, (part.strip() for part in text.split(";"))):
        name, _, value = item.partition("=")
        pairs.append((name.strip(), float(value)))
    return tuple(pairs)


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
            bandwidth_by_config=_by_config(row.get("bandwidth_by_config", "")),
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


def figure_chip_name(device: str, details: dict, host_chip: str | None) -> str | None:
    """The chip a figure belongs to: the GPU for CUDA devices (engine details), else the host's chip."""
    if device.startswith("cuda"):
        gpu = details.get("gpu")
        if isinstance(gpu, str) and gpu:
            return gpu
    return host_chip


def memory_bound_gbps(chip_name: str | None, config: str = "") -> tuple[float, str] | None:
    """(GB/s, what it is): the highest memory bandwidth the catalog publishes for the chip (and its
    configuration, where that sets it); no streaming figure can be above it. None: not published."""
    chip = lookup_chip(chip_name)
    bandwidth = chip.bandwidth_for(config) if chip else None
    if chip is None or bandwidth is None:
        return None
    return bandwidth[1], f"{chip.key} memory bandwidth, chip catalog"
