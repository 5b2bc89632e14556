"""From what a meter counted over a window to the record's Energy section, its warnings and one line.

Pure arithmetic on the readings (no counter is read here): joules, watts, joules per call, GB/s per
watt on the whole scope and on the component that did the work, and the DRAM view beside the tool's
own bytes over the same window.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..model.energy import COMPONENTS, Component, ComponentEnergy, DramTraffic, Energy
from ..model.statistics import GB, gbps
from ..model.warning import RecordWarning

if TYPE_CHECKING:
    from .ioreport_parse import DramReading, EnergyReading

MAX_WATTS = 10_000.0  # above this a window's figure is a counter reset or a unit error, not power
DID_NOT_MOVE = "counter did not move"
# Components surely busy over a window of timed calls: the one doing the work, the CPU driving the calls and
# the DRAM the weights stream from. A 0 reading there is a counter that does not count (M5 / macOS 27 read 0
# on all but the GPU), never 0 W.
DRIVEN = ("cpu", "dram")
MAX_REASON = 2000
DRAM_SOURCE = "IOReport PMP / DCS BW: the memory controllers' AMCC RD+WR histograms, one per die, summed"


@dataclass
class Counted:
    """What a meter counted between two readings (a meter in power.py makes it; the figures here read it)."""

    joules: float | None  # the meter's whole scope (IOReport: the package total)
    energy: EnergyReading | None = None  # IOReport: by component
    dram: DramReading | None = None  # IOReport: the memory controllers' view


def _clip(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 1] + "…"


def energy_figures(meter: Any, window: str, counted: Counted, seconds: float, calls: int, gbps: float,
                   weight_bytes: int, work: Component | None = None,
                   window_check: str | None = None) -> Energy:
    """The Energy section from the joules ``meter`` counted over ``seconds`` of ``calls``; ``window_check``:
    the window judged against the counter's step (EnergyWindow.window_check), where it was observed."""
    base: dict[str, Any] = {
        "source": meter.source, "scope": meter.scope, "window": window,
        "sampling": getattr(meter, "sampling", None),
        "sampling_interval_s": seconds if seconds > 0 else None, "calls": calls if calls >= 1 else None,
    }
    if window_check:
        base["window_check"] = window_check
    dram = dram_figures(counted.dram, seconds, calls, weight_bytes) if counted.dram else None
    ane_moved = dram.ane_gbps if dram is not None and dram.ane_gbps else None
    components = component_figures(counted.energy, seconds, calls, work, ane_moved) if counted.energy else []
    stalled = [c for c in components if not c.available and (c.reason or "").startswith(DID_NOT_MOVE)]
    if stalled:
        names = ", ".join(c.component for c in stalled)
        return Energy(available=False, components=components, dram_traffic=dram, **base, reason=_clip(
            f"{DID_NOT_MOVE}: the {names} channel(s) read 0 over {seconds:.3f} s of timed calls while busy; "
            "the package total would leave them out, so no watts and no GB/s per watt"))
    joules = counted.joules
    if joules is None or joules <= 0 or seconds <= 0 or calls < 1:
        package = next((c for c in components if c.component == "package" and not c.available), None)
        reason = (package.reason if package and package.reason
                  else f"the counter did not advance in {seconds:.3f} s; measure longer (--runs)")
        return Energy(available=False, reason=_clip(reason), components=components, dram_traffic=dram, **base)
    watts = joules / seconds
    if watts >= MAX_WATTS:
        return Energy(
            available=False,
            reason=f"{watts:.0f} W over {seconds:.3f} s is not physical: the counter "
            "reset or its unit is wrong",
            components=components,
            dram_traffic=dram,
            **base,
        )
    worker = next((c for c in components if c.component == work), None)
    work_gbps_per_watt = gbps / worker.watts if worker and worker.available and worker.watts else None
    return Energy(
        available=True, joules=joules, seconds=seconds, watts=watts, joules_per_call=joules / calls,
        gbps_per_watt=gbps / watts, work_component=work if components else None,
        work_gbps_per_watt=work_gbps_per_watt, components=components, dram_traffic=dram, **base,
    )


def component_figures(
    reading: EnergyReading, seconds: float, calls: int, work: Component | None, ane_gbps: float | None = None
) -> list[ComponentEnergy]:
    busy = {work, *DRIVEN} if work is not None else set()
    out = []
    for name in COMPONENTS:
        found = reading.components.get(name)
        if found is None or found.joules is None:
            if name in reading.missing or name == "package":
                reason = (
                    reading.missing.get(name) or "; ".join(found.problems if found else []) or "no channel"
                )
                out.append(ComponentEnergy(component=name, available=False, reason=_clip(reason)))
            continue
        watts = found.joules / seconds if seconds > 0 else None
        if watts is not None and watts >= MAX_WATTS:
            out.append(
                ComponentEnergy(
                    component=name,
                    available=False,
                    channels=found.channels,
                    reason=f"{watts:.0f} W is not physical: a counter reset or a wrong unit",
                )
            )
            continue
        if name in busy and found.joules == 0:
            seen = (f"; the PMP ANE RD/WR histograms moved ({ane_gbps:.1f} GB/s): the ANE ran, its Energy "
                    "Model channel does not count on this chip or macOS"
                    if name == "ane" and ane_gbps else "")
            work_note = " (it did the work)" if name == work else ""
            reason = (f"{DID_NOT_MOVE}: {', '.join(found.channels)} read 0 over {seconds:.3f} s while the "
                      f"{name}{work_note} was busy{seen}")
            out.append(ComponentEnergy(component=name, available=False, channels=found.channels[:64],
                                       reason=_clip(reason)))
            continue
        notes = list(found.problems)
        out.append(ComponentEnergy(
            component=name, available=True, joules=found.joules, watts=watts,
            joules_per_call=found.joules / calls if calls >= 1 else None, channels=found.channels[:64],
            reason=_clip("; ".join(notes)) if notes else None,
        ))
    return out


def dram_figures(reading: DramReading, seconds: float, calls: int, weight_bytes: int) -> DramTraffic:
    """The DRAM view beside the tool's weight bytes over the same window; unavailable if any die is. The
    ANE's own histograms are kept beside it where the chip has them."""
    ane: dict[str, Any] = {"ane_channels": [d.channel for d in reading.ane][:64],
                           "ane_gbps": sum(d.gbps for d in reading.ane) if reading.ane else None}
    if reading.problems:
        partial = " (a sum over the other dies would be partial)" if reading.dies else ""
        return DramTraffic(available=False, source=DRAM_SOURCE,
                           channels=[d.channel for d in reading.dies],
                           reason=_clip("; ".join(reading.problems) + partial), **ane)
    if seconds <= 0 or calls < 1:
        return DramTraffic(available=False, source=DRAM_SOURCE, reason="empty window", **ane)
    dram_gbps, resolution = reading.gbps, reading.resolution_gbps
    weight_gbps = gbps(weight_bytes * calls, seconds)
    unnamed = sorted({s for d in reading.dies for s in d.unnamed_states})
    return DramTraffic(
        available=True,
        source=DRAM_SOURCE,
        channels=[d.channel for d in reading.dies],
        per_die_gbps=[d.gbps for d in reading.dies],
        gbps=dram_gbps,
        bucket_width_gbps=max(d.bucket_width_gbps for d in reading.dies) or None,
        resolution_gbps=resolution or None,
        bytes_per_call=dram_gbps * GB * seconds / calls,
        weight_gbps=weight_gbps,
        agrees=abs(dram_gbps - weight_gbps) <= resolution,
        reason=_clip(f"states not named as a bandwidth, not counted: {', '.join(unnamed)}")
        if unnamed
        else None,
        **ane,
    )


def energy_warnings(energy: Energy) -> list[RecordWarning]:
    """What the record must warn about: the DRAM view disagreeing, the work's component idle."""
    warnings = []
    dram = energy.dram_traffic
    if dram and dram.available and dram.agrees is False:
        warnings.append(RecordWarning(
            kind="dram-traffic",
            text=f"DRAM traffic: the memory controllers saw {dram.gbps:.1f} GB/s read+write "
            "but the calls streamed "
            f"{dram.weight_gbps:.1f} GB/s of weights over the same window (histogram resolution "
            f"{dram.resolution_gbps:.0f} GB/s): the engine reads more or less than its weight bytes, or "
            "something else loaded memory",
        ))
    stalled = [c for c in energy.components if not c.available and (c.reason or "").startswith(DID_NOT_MOVE)]
    for component in stalled:
        warnings.append(RecordWarning(kind="energy",
                                      text=f"energy: {component.component} unavailable: {component.reason}"))
    if energy.window_check and energy.window_check.startswith("unreliable"):
        warnings.append(RecordWarning(kind="energy", text=f"energy figure {energy.window_check}"))
    return warnings


def energy_line(energy: Energy) -> str:
    """One line for a record's energy section."""
    if not energy.available:
        return f"unavailable: {energy.reason or 'not measured'}"  # the reason names every stalled channel
    assert energy.joules_per_call is not None and energy.watts is not None
    line = (f"{energy.joules_per_call * 1e3:.3f} mJ per call, {energy.watts:.1f} W, "
            f"{energy.gbps_per_watt or 0:.3f} GB/s per W ({energy.source}; {energy.window})")
    parts = [f"{c.component} {c.watts:.2f} W" for c in energy.components
             if c.available and c.watts is not None and c.component != "package"]
    parts += [f"{c.component} unavailable"
              + (f" ({DID_NOT_MOVE})" if (c.reason or "").startswith(DID_NOT_MOVE) else "")
              for c in energy.components if not c.available]
    if parts:
        line += "; " + ", ".join(parts)
    if energy.work_gbps_per_watt is not None:
        line += f"; {energy.work_gbps_per_watt:.3f} GB/s per {energy.work_component} W"
    dram = energy.dram_traffic
    if dram is not None:
        line += (f"; DRAM {dram.gbps:.1f} GB/s read+write (resolution {dram.resolution_gbps:.0f}) vs weights "
                 f"{dram.weight_gbps:.1f} GB/s"
                 if dram.available else f"; DRAM traffic unavailable: {dram.reason}")
        if dram.ane_gbps is not None:
            line += f"; ANE DRAM {dram.ane_gbps:.1f} GB/s (PMP {', '.join(dram.ane_channels)})"
    return line
