"""Energy counters readable without root: NVIDIA NVML, Linux RAPL; or the reason there is none.

A meter reads a monotonically growing energy counter in joules; a window around the timed calls turns
two readings into joules per call, watts and GB/s per watt. Where no counter can be read, the record
says "unavailable" and why, instead of a guess.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

POWERCAP_ROOT = Path("/sys/class/powercap")


class EnergyMeter(Protocol):
    source: str
    scope: str

    def read_joules(self) -> float: ...


@dataclass(frozen=True)
class Unavailable:
    reason: str


class RaplMeter:
    """Sum of the top-level RAPL package zones (``intel-rapl:N``), handling counter wrap-around."""

    source = "Linux RAPL (powercap)"
    scope = "CPU package(s): every process on the host, not only this one"

    def __init__(self, zones: list[Path]):
        self.zones = zones
        self.ranges = [int((z / "max_energy_range_uj").read_text()) for z in zones]
        self._last = [self._raw(z) for z in zones]
        self._total_uj = 0

    @staticmethod
    def _raw(zone: Path) -> int:
        return int((zone / "energy_uj").read_text())

    def read_joules(self) -> float:
        for i, zone in enumerate(self.zones):
            now = self._raw(zone)
            step = now - self._last[i]
            if step < 0:  # the counter wrapped
                step += self.ranges[i] + 1
            self._total_uj += step
            self._last[i] = now
        return self._total_uj / 1e6


def rapl_meter(root: Path = POWERCAP_ROOT) -> RaplMeter | Unavailable:
    if not root.exists():
        return Unavailable(f"no RAPL here: {root} does not exist")
    zones = sorted(z for z in root.glob("intel-rapl:*") if z.name.count(":") == 1)
    if not zones:
        return Unavailable(f"no RAPL package zone under {root}")
    try:
        return RaplMeter(zones)
    except PermissionError:
        return Unavailable(f"RAPL energy_uj under {root} is readable only by root on this kernel")
    except (OSError, ValueError) as exc:
        return Unavailable(f"RAPL counters under {root} could not be read: {exc}")


class NvmlMeter:
    source = "NVIDIA NVML total energy"
    scope = "the whole GPU board"

    def __init__(self, nvml, handle):
        self.nvml, self.handle = nvml, handle

    def read_joules(self) -> float:
        return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3  # millijoules


def nvml_meter(device: str, cuda_uuid: str | None = None) -> NvmlMeter | Unavailable:
    """The NVML energy counter of the board with ``cuda_uuid`` (a CUDA index is not an NVML index)."""
    if not cuda_uuid:
        return Unavailable(f"the NVML board of {device} is unknown without its CUDA UUID (NVML numbers GPUs "
                           "in PCI order and ignores CUDA_VISIBLE_DEVICES)")
    from .nvml import handle_by_uuid, load_nvml

    nvml, why = load_nvml()
    if nvml is None:
        return Unavailable(why)
    try:
        meter = NvmlMeter(nvml, handle_by_uuid(nvml, cuda_uuid))
        meter.read_joules()  # pre-Volta GPUs and MIG instances have no energy counter: fail here, not mid-run
        return meter
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses vary by version; optional library
        return Unavailable(f"NVML energy counter unavailable on {device}: {exc}")


def energy_meter(device: str, powercap_root: Path = POWERCAP_ROOT) -> EnergyMeter | Unavailable:
    """The energy counter that covers ``device``, or why there is none."""
    if device.startswith("cuda"):
        return nvml_meter(device)
    if sys.platform == "darwin":
        return Unavailable("macOS reports energy only through powermetrics, which needs root; "
                           "no unprivileged counter is read")
    if device == "cpu" and sys.platform.startswith("linux"):
        return rapl_meter(powercap_root)
    return Unavailable(f"no energy counter known for device {device!r} on {sys.platform}")


class EnergyWindow:
    """Two readings around a run of calls."""

    def __init__(self, meter: EnergyMeter | Unavailable):
        self.meter = meter
        self._start_j = self._start_ns = None
        if not isinstance(meter, Unavailable):
            self._start_ns = time.perf_counter_ns()
            self._start_j = meter.read_joules()

    def finish(self, calls: int, weight_bytes: int, median_s: float, what: str) -> dict:
        if isinstance(self.meter, Unavailable):
            return {"available": False, "reason": self.meter.reason}
        joules = self.meter.read_joules() - self._start_j
        seconds = (time.perf_counter_ns() - self._start_ns) / 1e9
        return energy_figures(self.meter, what, joules, seconds, calls, weight_bytes / median_s / 1e9)


def energy_figures(meter: EnergyMeter, window: str, joules: float, seconds: float, calls: int,
                   gbps: float) -> dict:
    """A record's extras["energy"] from the joules ``meter`` counted over ``seconds`` of ``calls``."""
    if joules <= 0 or seconds <= 0 or calls < 1:
        return {"available": False, "source": meter.source,
                "reason": f"the counter did not advance in {seconds:.3f} s; measure longer (--runs)"}
    watts = joules / seconds
    return {
        "available": True,
        "source": meter.source,
        "scope": meter.scope,
        "window": window,
        "calls": calls,
        "joules": joules,
        "seconds": seconds,
        "watts": watts,
        "joules_per_call": joules / calls,
        "gbps_per_watt": gbps / watts,
    }


def energy_line(energy: dict) -> str:
    """One line for a record's extras["energy"]."""
    if not energy.get("available"):
        return f"unavailable: {energy.get('reason', 'not measured')}"
    return (f"{energy['joules_per_call'] * 1e3:.3f} mJ per call, {energy['watts']:.1f} W, "
            f"{energy['gbps_per_watt']:.3f} GB/s per W ({energy.get('source', '')}; {energy.get('window', '')})")
