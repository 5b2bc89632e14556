"""Energy counters readable without root: NVIDIA NVML, Linux RAPL, Apple IOReport; or why there is none.

A meter is read twice, just before the first timed call and just after the last (warmup excluded); the
difference gives joules per call, watts and GB/s per watt, for the counter's whole scope and, with
IOReport, per component (ANE, GPU, CPU, DRAM) and as DRAM traffic from the memory controllers. Where
no counter can be read, the record says "unavailable" and why, instead of a guess.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..model.energy import Component, Energy
from ..model.statistics import gbps
from ..util.seam import Seam
from .energy_check import MAX_WINDOW_S, MIN_COUNTER_STEPS, OBSERVE_MAX_S, observe_counter_step
from .energy_figures import Counted, energy_figures
from .host import SYSTEM_HOST
from .ioreport import IOReportCounters, active_ioreport

POWERCAP_ROOT = Path("/sys/class/powercap")
# Apple devices -> the IOReport component that does their work
WORK_COMPONENT: dict[str, Component] = {"ane": "ane", "gpu": "gpu", "mps": "gpu", "cpu": "cpu"}


class EnergyMeter(Protocol):
    source: str
    scope: str
    sampling: str

    def read(self) -> Any: ...

    def between(self, start: Any, end: Any) -> Counted: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Unavailable:
    reason: str


class ScalarMeter:
    """A counter of one number, in joules (``read_joules``)."""

    source = scope = ""
    sampling = "two readings of the counter: just before the first timed call and just after the last"

    def read_joules(self) -> float:
        raise NotImplementedError

    def read(self) -> float:
        return self.read_joules()

    def between(self, start: float, end: float) -> Counted:
        return Counted(end - start)

    def close(self) -> None:
        pass


class RaplMeter(ScalarMeter):
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


class NvmlMeter(ScalarMeter):
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


def current_platform() -> str:
    """The active host's platform (sys.platform unless a test states a host with host.use_host)."""
    return SYSTEM_HOST.platform().system


def counter_key(device: str) -> str:
    """The physical counter that covers ``device``. Devices with the same key share one counter: on a Mac
    the ANE, GPU and CPU are all inside IOReport's one SoC meter, so a run over several of them reads it
    once (reading it per device and summing counts the chip's energy once per device)."""
    platform = current_platform()
    if device.startswith("cuda"):
        return f"NVML {device}"
    if platform == "darwin":
        return "IOReport SoC"
    if device == "cpu" and platform.startswith("linux"):
        return "RAPL packages"
    return f"none {device}"


MeterFactory = Callable[[str], "EnergyMeter | Unavailable"]
# A caller's (or a test's) counters for every device, stated with use_meters while its block runs (a
# recorded IOReport, a fake SoC counter) instead of patching this module; None: the native counters.
METERS_SEAM: Seam[MeterFactory | None] = Seam(None)
use_meters = METERS_SEAM.use


def energy_meter(device: str, powercap_root: Path = POWERCAP_ROOT) -> EnergyMeter | Unavailable:
    """The energy counter that covers ``device``, or why there is none."""
    stated = METERS_SEAM.get()
    if stated is not None:
        return stated(device)
    platform = current_platform()
    if device.startswith("cuda"):
        return nvml_meter(device)
    if platform == "darwin":
        return ioreport_meter()
    if device == "cpu" and platform.startswith("linux"):
        return rapl_meter(powercap_root)
    return Unavailable(f"no energy counter known for device {device!r} on {platform}")


IOREPORT_MIN_WINDOW_S = 1.0  # a window at least this long (the samplers macmon, mactop use 1 s); see below
IOREPORT_POLL_S = 0.005  # each poll is a sample and a delta: not every millisecond


class IOReportMeter:
    """Apple's IOReport: Energy Model counters by component, and the DRAM bandwidth histograms.

    As for NVML, the counter's update step is observed before the window opens and the window is
    lengthened to at least ``min_window_s`` and MIN_COUNTER_STEPS steps; a window still shorter is
    flagged in the record (``window_check``)."""

    min_window_s = IOREPORT_MIN_WINDOW_S

    scope = "the whole SoC: every process on the machine, not only this one"
    sampling = ("two IOReport samples (Energy Model, PMP / DCS BW) just before the first timed call and just "
                "after the last, differenced by IOReportCreateSamplesDelta")

    def __init__(self, counters: IOReportCounters):
        self.counters = counters
        self.source = f"IOReport Energy Model (libIOReport via actop {counters.version})"

    def read(self) -> Any:
        return self.counters.sample()

    def observe_step(self) -> float | None:
        """The median interval between changes of the package total, polled for up to a second."""
        base = self.counters.sample()
        return observe_counter_step(lambda: self.counters.package_joules_since(base), poll_s=IOREPORT_POLL_S)

    def between(self, start: Any, end: Any) -> Counted:
        energy, dram = self.counters.between(start, end)
        return Counted(energy.components["package"].joules, energy, dram)

    def close(self) -> None:
        self.counters.close()


def ioreport_meter() -> IOReportMeter | Unavailable:
    problem = active_ioreport().problem()
    if problem:
        return Unavailable(f"IOReport: {problem}")
    try:
        return IOReportMeter(IOReportCounters())
    except Exception as exc:  # noqa: BLE001 - a private library: any failure means "no counter", said why
        return Unavailable(f"IOReport subscription failed: {type(exc).__name__}: {exc}")


def work_component(device: str) -> Component | None:
    """The IOReport component that does an Apple device's work (None off a Mac or for other devices)."""
    return WORK_COMPONENT.get(device)


class EnergyWindow:
    """Two readings around the timed calls: ``open`` just before the first, ``close`` just after the last."""

    def __init__(self, meter: EnergyMeter | Unavailable, work: Component | None = None,
                 now_ns: Callable[[], int] = time.perf_counter_ns):
        self.meter = meter
        self.work = work
        self.now_ns = now_ns
        self._start: tuple[Any, int] | None = None
        self._end: tuple[Any, int] | None = None
        self.counter_step_s: float | None = None
        self.step_observed = False
        self.extra_calls = 0

    @property
    def min_window_s(self) -> float:
        """How long the meter's window must be (0: any length; IOReport: a second)."""
        return float(getattr(self.meter, "min_window_s", 0.0))

    def observe_step(self) -> None:
        """Observe the counter's update step before the window opens (meters that can: IOReport)."""
        observe = getattr(self.meter, "observe_step", None)
        if observe is None or isinstance(self.meter, Unavailable):
            return
        try:
            self.counter_step_s = observe()
        except Exception:  # noqa: BLE001 - a private library: the step is then unknown, and the record says so
            self.counter_step_s = None
        self.step_observed = True

    def needed_s(self) -> float:
        if not self.min_window_s:
            return 0.0
        steps = MIN_COUNTER_STEPS * self.counter_step_s if self.counter_step_s else 0.0
        return min(max(self.min_window_s, steps), MAX_WINDOW_S)

    def fill(self, call: Callable[[], None]) -> int:
        """After the timed calls: more calls until the window is long enough for the counter; how many."""
        if self._start is None or isinstance(self.meter, Unavailable) or not self.min_window_s:
            return 0
        started_ns, needed_ns = self._start[1], self.needed_s() * 1e9
        while self.now_ns() - started_ns < needed_ns:
            call()
            self.extra_calls += 1
        if self.extra_calls:
            self.close()  # the window now ends after the extra calls
        return self.extra_calls

    def window_check(self, seconds: float) -> str | None:
        """The window against the counter's step and this meter's minimum; "unreliable: ..." is a warning
        of the record (the figure stays, as NVML's does)."""
        if not self.step_observed:
            return None
        step = self.counter_step_s
        if step is None:
            return (f"unreliable: the energy counter was not seen to step within {OBSERVE_MAX_S:g} s, so its "
                    "resolution over the window is unknown")
        steps = seconds / step
        if seconds < self.min_window_s or steps < MIN_COUNTER_STEPS:
            return (f"unreliable: the window ({seconds:.2f} s) spans {steps:.0f} counter steps of "
                    f"{step * 1e3:.0f} ms; at least {MIN_COUNTER_STEPS} steps and {self.min_window_s:g} s "
                    "are needed")
        return (f"ok: {steps:.0f} counter steps of {step * 1e3:.1f} ms in {seconds:.2f} s "
                f"({self.extra_calls} calls added to fill it)")

    def open(self) -> None:
        if not isinstance(self.meter, Unavailable):
            self._start = self._reading(self.meter)

    def close(self) -> None:
        if self._start is not None and not isinstance(self.meter, Unavailable):
            self._end = self._reading(self.meter)

    @property
    def opened_ns(self) -> int | None:
        """When the window opened (the first timed call), on this window's clock; None until then."""
        return self._start[1] if self._start is not None else None

    def _reading(self, meter: EnergyMeter) -> tuple[Any, int]:
        """The reading, timed at the middle of the read (a 100-channel IOReport sample takes a while)."""
        before = self.now_ns()
        reading = meter.read()
        return reading, (before + self.now_ns()) // 2

    def finish(self, calls: int, weight_bytes: int, median_s: float, what: str) -> Energy:
        if isinstance(self.meter, Unavailable):
            return Energy(available=False, reason=self.meter.reason)
        try:
            if self._start is None or self._end is None:
                return Energy(available=False, source=self.meter.source,
                              reason="the energy window was not opened and closed around the timed calls")
            counted = self.meter.between(self._start[0], self._end[0])
            seconds = (self._end[1] - self._start[1]) / 1e9
            return energy_figures(self.meter, what, counted, seconds, calls, gbps(weight_bytes, median_s),
                                  weight_bytes, self.work, self.window_check(seconds))
        finally:
            self.release()

    def release(self) -> None:
        if not isinstance(self.meter, Unavailable):
            self.meter.close()


__all__ = ["EnergyMeter", "EnergyWindow", "IOReportMeter", "NvmlMeter", "RaplMeter", "ScalarMeter",
           "Unavailable", "counter_key", "current_platform", "energy_meter", "ioreport_meter", "use_meters",
           "work_component"]
