"""IOReport samples -> joules per component and DRAM bandwidth. Pure: no macOS call, testable anywhere.

The input is what IOReport's sample delta holds for each channel: group, subgroup, channel name, unit
label, an integer value (simple channels: the energy counted in the window) or state residencies
(histogram channels: the time spent in each state). ``ioreport.py`` makes these from the live library.

Energy ("Energy Model" group): the channel names differ by chip ("CPU Energy" on one die,
"DIE_0_CPU Energy"... on an Ultra; "ANE", "ANE0" or "ANE0_0"...), so components are matched by name
pattern, as macmon does; every channel of a component is summed and listed. Units are read from each
channel's label, never assumed, and matched without regard to case (actop lower-cases them; chips spell
them differently). A counter that went backwards in the window (wrapped or reset) is left out of its
component with the reason: no guessed modulus.

DRAM traffic ("PMP" group, "DCS BW" subgroup): one "AMCC ... RD+WR" histogram per memory-controller die;
each state is a bandwidth bucket named by its upper edge ("32GB/s"). A die's bandwidth is the
residency-weighted mean of the bucket midpoints; the dies are summed (pooling them would report one
die's rate as the chip's). The Neural Engine's own agent histograms ("ANE0 RD", "ANE0 WR", ...) are its
DRAM view: on M5 / macOS 27 the Energy Model's ANE channel reads 0 while they still move.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

ENERGY_GROUP = "Energy Model"
BANDWIDTH_GROUP, BANDWIDTH_SUBGROUP = "PMP", "DCS BW"
EXPECTED_COMPONENTS = ("ane", "gpu", "cpu", "dram")
PACKAGE_PARTS = ("cpu", "gpu", "ane", "dram", "gpu_sram")  # macmon's package: the SoC's own rails
# Lower case: units are matched without regard to case ("mJ", "mj", "MJ" all mean millijoules here: no SoC
# channel counts megajoules).
JOULES_PER_UNIT = {"mj": 1e-3, "uj": 1e-6, "\u00b5j": 1e-6, "\u03bcj": 1e-6, "nj": 1e-9, "j": 1.0}
EXPECTED_NAMES = {"ane": "ANE*", "gpu": "GPU Energy", "cpu": "*CPU Energy", "dram": "DRAM*"}
_BUCKET = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)B/s", re.IGNORECASE)
_TO_GB = {"": 1e-9, "K": 1e-6, "M": 1e-3, "G": 1.0, "T": 1e3}


@dataclass(frozen=True)
class Channel:
    """One channel of a sample delta, as IOReport reports it."""

    group: str
    subgroup: str
    name: str
    unit: str = ""
    value: int = 0
    states: tuple[tuple[str, int], ...] = ()


@dataclass
class ComponentReading:
    joules: float | None  # None: every channel of the component was left out
    channels: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # channels left out, and why


@dataclass
class EnergyReading:
    components: dict[str, ComponentReading]  # every component found, plus "package"
    missing: dict[str, str]  # expected component -> why there is no figure


@dataclass(frozen=True)
class DieBandwidth:
    channel: str
    gbps: float  # residency-weighted mean of the bucket midpoints
    bucket_width_gbps: float  # the widest bucket: the resolution of ``gbps``
    unnamed_states: tuple[str, ...] = ()  # states with no bandwidth in their name: not counted


@dataclass
class DramReading:
    dies: list[DieBandwidth]
    problems: list[str] = field(default_factory=list)
    ane: list[DieBandwidth] = field(default_factory=list)  # the Neural Engine's RD / WR histograms

    @property
    def gbps(self) -> float:
        return sum(d.gbps for d in self.dies)

    @property
    def resolution_gbps(self) -> float:
        return sum(d.bucket_width_gbps for d in self.dies)


def component_of(name: str) -> str | None:
    """The component an Energy Model channel belongs to, or None for rails not counted (display, ISP...)."""
    if name == "GPU Energy":
        return "gpu"
    if name.endswith("CPU Energy"):
        return "cpu"
    if name.startswith("GPU SRAM"):
        return "gpu_sram"
    if name.startswith("ANE"):
        return "ane"
    if name.startswith("DRAM"):
        return "dram"
    return None


def channel_joules(channel: Channel) -> float | str:
    """The channel's joules in the window, or why it cannot be used."""
    scale = JOULES_PER_UNIT.get(channel.unit.strip().lower())
    if scale is None:
        return f"{channel.name}: unknown energy unit {channel.unit!r} (known: {', '.join(JOULES_PER_UNIT)})"
    if channel.value < 0:
        return (f"{channel.name}: the counter went backwards by {-channel.value} {channel.unit.strip()} "
                "in the window (wrapped or reset); left out")
    return channel.value * scale


def energy_by_component(channels: Iterable[Channel]) -> EnergyReading:
    found: dict[str, ComponentReading] = {}
    for channel in channels:
        if channel.group != ENERGY_GROUP:
            continue
        component = component_of(channel.name)
        if component is None:
            continue
        reading = found.setdefault(component, ComponentReading(None))
        joules = channel_joules(channel)
        if isinstance(joules, str):
            reading.problems.append(joules)
            continue
        reading.joules = (reading.joules or 0.0) + joules
        reading.channels.append(channel.name)
    missing = {c: f"no Energy Model channel named {EXPECTED_NAMES[c]} on this chip"
               for c in EXPECTED_COMPONENTS if c not in found}
    for name, reading in found.items():
        if reading.joules is None:
            missing.setdefault(name, "; ".join(reading.problems))
    found["package"] = _package(found, missing)
    return EnergyReading(found, missing)


def _package(found: dict[str, ComponentReading], missing: dict[str, str]) -> ComponentReading:
    parts = [p for p in PACKAGE_PARTS if p in found and found[p].joules is not None]
    package = ComponentReading(
        sum(found[p].joules or 0.0 for p in parts) if parts else None,
        [c for p in parts for c in found[p].channels],
        [p for part in parts for p in found[part].problems],
    )
    left_out = [p for p in PACKAGE_PARTS if p in missing]
    if left_out and parts:
        package.problems.append(f"sum of {', '.join(parts)}; without {', '.join(left_out)} (no figure)")
    return package


def bucket_edge_gbps(state: str) -> float | None:
    """The upper edge of a bandwidth bucket named like "32GB/s" or "0-512 MB/s", in GB/s."""
    # the last rate in the name is the upper edge
    match = next(reversed(list(_BUCKET.finditer(state))), None)
    if match is None:
        return None
    return float(match[1]) * _TO_GB[match[2].upper()]


def die_bandwidth(channel: Channel) -> DieBandwidth | str:
    """One die's DRAM bandwidth from its histogram delta, or why there is none."""
    buckets = []
    unnamed = []
    for state, residency in channel.states:
        edge = bucket_edge_gbps(state)
        if edge is None:
            unnamed.append(state)
            continue
        if residency < 0:
            return f"{channel.name}: state {state!r} residency went backwards in the window (reset?)"
        buckets.append((edge, residency))
    if not buckets:
        return f"{channel.name}: no state is named as a bandwidth ({', '.join(unnamed) or 'no states'})"
    buckets.sort()
    total = sum(r for _, r in buckets)
    if total <= 0:
        return f"{channel.name}: no residency in any bucket over the window"
    weighted, width, lower = 0.0, 0.0, 0.0
    for edge, residency in buckets:
        weighted += (lower + edge) / 2 * residency
        width = max(width, edge - lower)
        lower = edge
    return DieBandwidth(channel.name, weighted / total, width, tuple(unnamed))


def is_dram_total(channel: Channel) -> bool:
    """The memory controller's read+write total; per-agent channels (CPU, GPU, ANE...) are not summed."""
    return (channel.group == BANDWIDTH_GROUP and channel.subgroup == BANDWIDTH_SUBGROUP
            and channel.name.startswith("AMCC") and channel.name.endswith("RD+WR"))


def is_ane_traffic(channel: Channel) -> bool:
    """The Neural Engine's own DRAM histograms: "ANE0 RD", "ANE0 WR", "ANE RD+WR" (per chip)."""
    return (channel.group == BANDWIDTH_GROUP and channel.subgroup == BANDWIDTH_SUBGROUP
            and channel.name.upper().startswith("ANE") and ("RD" in channel.name.upper()
                                                            or "WR" in channel.name.upper()))


def keep_states(channel: Channel) -> bool:
    """The histograms whose residencies are read: the memory controllers' totals and the ANE's own."""
    return is_dram_total(channel) or is_ane_traffic(channel)


def dram_bandwidth(channels: Iterable[Channel]) -> DramReading:
    reading = DramReading([])
    for channel in channels:
        if is_ane_traffic(channel):
            ane = die_bandwidth(channel)
            if not isinstance(ane, str):
                reading.ane.append(ane)
            continue
        if not is_dram_total(channel):
            continue
        die = die_bandwidth(channel)
        if isinstance(die, str):
            reading.problems.append(die)
        else:
            reading.dies.append(die)
    if not reading.dies and not reading.problems:
        reading.problems.append(
            f"no {BANDWIDTH_GROUP} / {BANDWIDTH_SUBGROUP} AMCC RD+WR channel on this chip"
        )
    return reading


@dataclass(frozen=True)
class SourceFound:
    """One IOReport source as the channels found say it is: which channels, their units, or why none."""

    name: str
    available: bool
    channels: tuple[str, ...] = ()
    reason: str = ""


def sources_found(channels: Iterable[Channel]) -> list[SourceFound]:
    """The Energy Model, the PMP DRAM totals and the ANE's PMP histograms, by the channels actually found
    (actop subscribes to a missing group silently, so a subscription alone proves nothing)."""
    channels = list(channels)
    energy = [c for c in channels if c.group == ENERGY_GROUP and component_of(c.name) is not None]
    totals = [c for c in channels if is_dram_total(c)]
    ane = [c for c in channels if is_ane_traffic(c)]
    by_component: dict[str, list[str]] = {}
    for c in energy:
        unit = c.unit.strip() or "no unit"
        by_component.setdefault(component_of(c.name) or "", []).append(f"{c.name} ({unit})")
    missing = [f"no {name} channel ({EXPECTED_NAMES[name]})" for name in EXPECTED_COMPONENTS
               if name not in by_component]
    return [
        SourceFound("IOReport Energy Model", bool(energy),
                    tuple(f"{k}: {', '.join(v)}" for k, v in by_component.items()),
                    "; ".join(missing) if energy else f"no {ENERGY_GROUP} channel of a known component"),
        SourceFound("IOReport PMP / DCS BW", bool(totals), tuple(c.name for c in totals),
                    "" if totals else f"no {BANDWIDTH_GROUP} / {BANDWIDTH_SUBGROUP} AMCC RD+WR channel on "
                    "this Mac (the subscription found the other groups only)"),
        SourceFound("IOReport PMP ANE RD/WR", bool(ane), tuple(c.name for c in ane),
                    "" if ane else f"no {BANDWIDTH_GROUP} ANE RD / WR histogram on this Mac"),
    ]


def channels_from_json(data: dict) -> list[Channel]:
    """Channels from a recorded sample (``ioreport.record_sample``'s JSON: {"channels": [...]})."""
    return [Channel(c["group"], c.get("subgroup", ""), c["name"], c.get("unit", ""), int(c.get("value", 0)),
                    tuple((str(s), int(r)) for s, r in c.get("states", [])))
            for c in data["channels"]]


def channels_to_json(channels: Iterable[Channel]) -> list[dict]:
    return [{"group": c.group, "subgroup": c.subgroup, "name": c.name, "unit": c.unit, "value": c.value,
             "states": [list(s) for s in c.states]} for c in channels]
