"""The macOS calls behind the IOReport energy source: subscribe, sample, difference. Nothing else.

libIOReport is reached through actop's ctypes layer (``actop.ioreport``, the `[mac]` extra, pinned): its
``IOReportSubscription`` subscribes to channel groups, takes samples and differences two of them into
plain (group, subgroup, channel, unit, integer value, state residencies) items, without sudo. That is
all this source needs, so no binding of our own is written; the parsing of those items lives in
``ioreport_parse`` and is tested on recorded samples. The differencing is IOReport's own
(IOReportCreateSamplesDelta), as in actop, macmon and mactop.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..util.seam import Seam
from .ioreport_parse import (
    BANDWIDTH_GROUP,
    BANDWIDTH_SUBGROUP,
    ENERGY_GROUP,
    Channel,
    DramReading,
    EnergyReading,
    dram_bandwidth,
    energy_by_component,
    keep_states,
)

ACTOP_PIN = "1.9.12"
MIN_PYTHON = (3, 11)  # actop's own floor
GROUPS = [(ENERGY_GROUP, None), (BANDWIDTH_GROUP, BANDWIDTH_SUBGROUP)]


def ioreport_problem() -> str | None:
    """Why IOReport cannot be read here, or None."""
    from .preflight import on_macos  # the host's platform, where tests state it

    if not on_macos():
        return "macOS only"
    if sys.version_info < MIN_PYTHON:
        return "IOReport is read through actop, which needs Python >= 3.11"
    try:
        importlib.import_module("actop.ioreport")
    except ImportError:
        return f"install the [mac] extra (actop=={ACTOP_PIN}) to read IOReport without sudo"
    except Exception as exc:  # noqa: BLE001 - loading libIOReport/CoreFoundation symbols: say why, never crash
        return f"libIOReport could not be loaded through actop: {type(exc).__name__}: {exc}"
    return None


def _keep_states(group: str, subgroup: str, channel: str) -> bool:
    """Residencies only for the AMCC totals and the ANE's own histograms: the ~90 other per-agent
    histograms cost ctypes calls for nothing."""
    return keep_states(Channel(group, subgroup, channel))


def _channel(item: Any) -> Channel:
    return Channel(item.group, item.subgroup, item.channel, item.unit, int(item.integer_value),
                   tuple((str(name), int(ns)) for name, ns in item.state_residencies))


class IOReportCounters:
    """One subscription to the Energy Model and PMP/DCS BW groups; samples stay held until ``close``."""

    def __init__(self) -> None:
        ioreport = importlib.import_module("actop.ioreport")
        self._module = ioreport
        self._subscription = ioreport.IOReportSubscription(GROUPS)  # RuntimeError: no channel at all
        self._held: list[Any] = []
        try:
            self.version = importlib.metadata.version("actop")
        except importlib.metadata.PackageNotFoundError:
            self.version = "unknown"

    def sample(self) -> Any:
        sample = self._subscription.sample()
        if not sample:
            raise RuntimeError("IOReportCreateSamples returned nothing")
        self._held.append(sample)
        return sample

    def package_joules_since(self, base: Any) -> float:
        """The Energy Model's package joules from ``base`` to now (the new sample is released at once:
        polled while the counter's step is observed)."""
        now = self._subscription.sample()
        if not now:
            raise RuntimeError("IOReportCreateSamples returned nothing")
        try:
            channels = self.channels_between(base, now)
        finally:
            self._module.cf_release(now)
        return energy_by_component(channels).components["package"].joules or 0.0

    def channels_between(self, start: Any, end: Any) -> list[Channel]:
        return [_channel(item) for item in self._subscription.delta(start, end, _keep_states)]

    def between(self, start: Any, end: Any) -> tuple[EnergyReading, DramReading]:
        channels = self.channels_between(start, end)
        return energy_by_component(channels), dram_bandwidth(channels)

    def close(self) -> None:
        for sample in self._held:
            self._module.cf_release(sample)
        self._held.clear()
        self._subscription.close()


def probe_channels(seconds: float = 0.1, during: Callable[[], None] | None = None) -> list[Channel]:
    """The channels one sample delta over ``seconds`` holds (what this Mac exposes; for `info` and
    `doctor`), calling ``during`` over and over meanwhile (the work a channel should count), else idle.
    Raises what the subscription raises."""
    import time

    counters = IOReportCounters()
    try:
        start = counters.sample()
        began = time.perf_counter()
        if during is None:
            time.sleep(seconds)  # nothing is timed: the delta covers whatever the machine did
        while during is not None and time.perf_counter() - began < seconds:
            during()
        return counters.channels_between(start, counters.sample())
    finally:
        counters.close()


@dataclass(frozen=True)
class IOReportBinding:
    """The native IOReport reader: why it cannot be read here, and the channels one sample delta holds.
    ``use_ioreport`` states a stand-in wherever the library asks (power's sources and meter, doctor), so
    tests give one instead of patching this module's functions."""

    problem: Callable[[], str | None] = ioreport_problem
    probe_channels: Callable[..., list[Channel]] = probe_channels


NATIVE_IOREPORT = IOReportBinding()
# The binding the library reads IOReport through: the native one, or the one stated with use_ioreport
# while its block runs.
IOREPORT_SEAM: Seam[IOReportBinding] = Seam(NATIVE_IOREPORT)
active_ioreport = IOREPORT_SEAM.get
use_ioreport = IOREPORT_SEAM.use


def record_sample(seconds: float = 1.0) -> dict:
    """A sample delta over ``seconds`` as JSON-ready data (energy and AMCC channels), to record what a chip
    exposes and test the parsing on it: `python -c "from anebench.system.ioreport import record_sample"`."""
    import platform
    import time

    from .ioreport_parse import channels_to_json

    counters = IOReportCounters()
    try:
        start = counters.sample()
        began = time.perf_counter()
        time.sleep(seconds)  # nothing here is timed: the delta covers whatever the machine did
        end = counters.sample()
        elapsed = time.perf_counter() - began
        channels = [c for c in counters.channels_between(start, end)
                    if c.group == ENERGY_GROUP or keep_states(c)]
    finally:
        counters.close()
    return {"machine": platform.machine(), "macos": platform.mac_ver()[0], "actop": counters.version,
            "seconds": elapsed, "channels": channels_to_json(channels)}
