"""Every energy source `--power` knows and whether it can be read here (what `anebench info` lists), and
the source a plan would read for a device (system/power.py opens and reads them)."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from pathlib import Path

from .ioreport import active_ioreport
from .power import POWERCAP_ROOT, Unavailable, current_platform, nvml_meter, rapl_meter, work_component


@dataclass(frozen=True)
class SourceStatus:
    name: str
    covers: str
    available: bool
    reason: str = ""  # why not; or, where available, what is missing (e.g. a component's channel)
    channels: tuple[str, ...] = ()  # the channels found (IOReport), with their units


def ioreport_sources() -> list[SourceStatus]:
    """The IOReport sources by the channels a short sample actually holds: actop subscribes to a missing
    group silently, so a subscription that succeeds proves only that one group exists."""
    from .ioreport_parse import sources_found

    covers = {
        "IOReport Energy Model": "ANE, GPU, CPU, DRAM energy and the package total (Apple silicon)",
        "IOReport PMP / DCS BW": "DRAM read+write GB/s from the memory controllers (a second view of the "
                                 "bytes streamed)",
        "IOReport PMP ANE RD/WR": "the Neural Engine's own DRAM traffic (its view where the Energy Model's "
                                  "ANE channel reads 0)",
    }
    binding = active_ioreport()
    problem = binding.problem()
    if problem is None:
        try:
            found = sources_found(binding.probe_channels(0.1))
        except Exception as exc:  # noqa: BLE001 - a private library: any failure means "no source", said why
            problem = f"IOReport subscription failed: {type(exc).__name__}: {exc}"
    if problem is not None:
        return [SourceStatus(name, what, False, problem) for name, what in covers.items()]
    return [SourceStatus(s.name, covers[s.name], s.available, s.reason, s.channels) for s in found]


def energy_sources(powercap_root: Path = POWERCAP_ROOT) -> list[SourceStatus]:
    """Every energy source `--power` knows, whether it can be read here, and why not."""
    out = ioreport_sources()
    if importlib.util.find_spec("pynvml") is None:
        out.append(SourceStatus("NVIDIA NVML", "the GPU board", False, "nvidia-ml-py is not installed"))
    else:
        nvml = nvml_meter("cuda:0")
        out.append(SourceStatus("NVIDIA NVML", "the GPU board", not isinstance(nvml, Unavailable),
                                nvml.reason if isinstance(nvml, Unavailable) else ""))
    if current_platform().startswith("linux"):
        rapl = rapl_meter(powercap_root)
        out.append(SourceStatus("Linux RAPL", "CPU package(s)", not isinstance(rapl, Unavailable),
                                rapl.reason if isinstance(rapl, Unavailable) else ""))
    else:
        out.append(SourceStatus("Linux RAPL", "CPU package(s)", False, "Linux only"))
    return out


def planned_source(device: str, platform: str) -> str:
    """The source `--power` would read for ``device`` on ``platform`` ("darwin", "linux"), for a plan."""
    if device.startswith("cuda"):
        return "NVIDIA NVML (the GPU board)"
    if platform == "darwin":
        work = work_component(device)
        return (f"IOReport Energy Model ({work} + package, by component) and PMP DCS BW (DRAM traffic)"
                if work else "IOReport Energy Model (package, by component) and PMP DCS BW (DRAM traffic)")
    if device == "cpu" and platform.startswith("linux"):
        return "Linux RAPL (CPU packages)"
    return f"none known for {device} on {platform}"


__all__ = ["SourceStatus", "energy_sources", "ioreport_sources", "planned_source"]
