"""The GPU-only parts of one measurement: NVML state around the timing, the GPU warmup policy, an energy
window long enough for NVML's counter, and the streaming figures beside the per-call one.

``measure_workload`` builds a ``GpuRun`` for CUDA devices only and calls it in this order: construct
(NVML matched by UUID, state before), ``warmup_policy``, ``energy_window`` (when asked), then after the
timed calls ``after_timing``, ``fill_energy_window``, and ``report``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

from ..engines.base import Prepared
from ..errors import MeasurementError
from ..model import RecordWarning, gbps, median
from ..model.gpu import EnergyWindowCheck, GpuIdentity, GpuReport, GpuState, StreamingFigure, StreamMethod
from ..system.bounds import Bound, check_plausible
from ..system.energy_check import check_window, observe_counter_step, window_needed_s, window_warning
from ..system.nvml import (
    handle_by_uuid,
    load_nvml,
    read_identity,
    read_state,
    sm_clock_reader,
    throttle_warnings,
)
from ..system.power import EnergyWindow, Unavailable, nvml_meter
from .timing import Timing
from .warmup import WarmupPolicy, warmup_for

STREAM_WINDOW_S = 0.1  # each streaming window: many calls, so the event pair's own cost vanishes
STREAM_WINDOWS = 5
STREAM_MIN_CALLS, STREAM_MAX_CALLS = 10, 100_000
PER_CALL, DEVICE_TIME = "per-call figure (median wall clock)", "device-time figure"
HEADLINE_REASON = (
    "per-call: the wall clock around one synchronised call, as a batch-1 decode step pays it, and the "
    "figure every engine has (some have no device timestamps); the streaming figures are the device's "
    "read bandwidth with host dispatch overlapped, shown beside it"
)

NvmlLoader = Callable[[], tuple[Any, str]]


class GpuRun:
    def __init__(self, device: str, prepared: Prepared, nvml_loader: NvmlLoader = load_nvml,
                 now_s: Callable[[], float] = time.perf_counter):
        self.device, self.now_s = device, now_s
        self.uuid = _str_or_none(prepared.details.get("gpu_uuid"))
        self.nvml: Any = None
        self.handle: Any = None
        self.identity: GpuIdentity | None = None
        self.unavailable: str | None = None
        self.before: GpuState | None = None
        self.after: GpuState | None = None
        self.window_check: EnergyWindowCheck | None = None
        self._counter_step: float | None = None
        self._find_board(nvml_loader)
        if self.handle is not None:
            self.identity = read_identity(self.nvml, self.handle, self.uuid)
            self.before = read_state(self.nvml, self.handle)

    def _find_board(self, nvml_loader: NvmlLoader) -> None:
        if not self.uuid:
            self.unavailable = f"the CUDA UUID of {self.device} is unknown, so its NVML board cannot be found"
            return
        self.nvml, why = nvml_loader()
        if self.nvml is None:
            self.unavailable = why
            return
        try:
            self.handle = handle_by_uuid(self.nvml, self.uuid)
        except LookupError as exc:
            self.unavailable = str(exc)

    def warmup_policy(self, asked: WarmupPolicy) -> WarmupPolicy:
        reader = sm_clock_reader(self.nvml, self.handle) if self.handle is not None else None
        return warmup_for(self.device, asked, reader)

    def energy_window(self) -> EnergyWindow:
        """An energy window on this board's NVML counter, its update step observed first."""
        meter = nvml_meter(self.device, self.uuid)
        if not isinstance(meter, Unavailable):
            self._counter_step = observe_counter_step(meter.read_joules, self.now_s)
        return EnergyWindow(meter, "gpu", now_ns=lambda: int(self.now_s() * 1e9))

    def after_timing(self) -> None:
        if self.handle is not None:
            self.after = read_state(self.nvml, self.handle)

    def fill_energy_window(self, prepared: Prepared, window: EnergyWindow) -> int:
        """Run more calls until the window is long enough for the counter; returns how many."""
        if isinstance(window.meter, Unavailable) or window.opened_ns is None:
            return 0
        started_s = window.opened_ns / 1e9  # the window opens at the first timed call, after warmup
        needed = window_needed_s(self._counter_step)
        extra = 0
        call = prepared.call
        while window.now_ns() / 1e9 - started_s < needed:
            call()
            extra += 1
        window.close()  # the window now ends after the extra calls
        self.window_check = check_window(self._counter_step, window.now_ns() / 1e9 - started_s, extra)
        return extra

    def report(self, prepared: Prepared, timing: Timing, bound: Bound) -> GpuReport:
        """The GPU section; the timed figures are checked against ``bound`` first, so a refused
        measurement spends no time on streaming windows."""
        wall = median(timing.samples_s)
        device = median(timing.device_samples_s) if timing.device_samples_s else None
        check_plausible({PER_CALL: gbps(prepared.weight_bytes, wall),
                         DEVICE_TIME: gbps(prepared.weight_bytes, device) if device else None}, bound)
        fastest = min(timing.device_samples_s or timing.samples_s)
        streaming, notes = streaming_figures(prepared, fastest, bound)
        return GpuReport(
            headline_reason=HEADLINE_REASON,
            streaming=streaming,
            streaming_notes=notes,
            identity=self.identity,
            nvml_unavailable=self.unavailable,
            state_before=self.before,
            state_after=self.after,
            energy_window=self.window_check,
        )


def _str_or_none(value: object) -> str | None:
    return str(value) if value else None


def streaming_figures(prepared: Prepared, per_call_s: float, bound: Bound, window_s: float = STREAM_WINDOW_S,
                      windows: int = STREAM_WINDOWS) -> tuple[list[StreamingFigure], list[str]]:
    """Back-to-back and CUDA-graph figures, each the median of ``windows`` windows of ~``window_s``."""
    calls = min(max(math.ceil(window_s / per_call_s), STREAM_MIN_CALLS), STREAM_MAX_CALLS)
    figures: list[StreamingFigure] = []
    notes: list[str] = []
    methods: tuple[tuple[StreamMethod, bool], ...] = (("back-to-back", False), ("cuda-graph", True))
    for method, graph in methods:
        per_window: list[float] = []
        for _ in range(windows):
            seconds = prepared.stream_seconds(calls, graph=graph)
            if seconds is None:
                break
            if seconds <= 0:
                raise MeasurementError(f"a {method} window of {calls} calls measured {seconds:g} s: "
                                       "the events did not bracket the work")
            per_window.append(seconds)
        if not per_window:
            why = prepared.details.get("cuda_graph") if graph else None
            notes.append(f"{method}: not measured ({why or 'the engine has no streaming timer here'})")
            continue
        median_s = median(per_window)
        figure = gbps(prepared.weight_bytes, median_s)
        check_plausible({f"streaming ({method}) figure": figure}, bound)
        figures.append(StreamingFigure(method=method, calls_per_window=calls,
                                       seconds_per_call=per_window, median_s=median_s, gbps=figure))
    return figures, notes


def gpu_warnings(report: GpuReport) -> list[RecordWarning]:
    found: list[RecordWarning] = []
    if report.state_before is not None and report.state_after is not None:
        found += [RecordWarning(kind="gpu-throttle", text=text)
                  for text in throttle_warnings(report.state_before, report.state_after)]
    if report.energy_window is not None:
        warning = window_warning(report.energy_window)
        if warning:
            found.append(RecordWarning(kind="energy", text=warning))
    return found
