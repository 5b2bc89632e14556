"""What a GPU run records beyond the per-call samples: streaming figures, NVML state, energy window.

A leaf: it imports nothing of anebench (the record imports it), so its few field types are its own.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ["EnergyWindowCheck", "GpuIdentity", "GpuReport", "GpuState", "PlausibilityBound",
           "StreamingFigure"]

ShortStr = Annotated[str, StringConstraints(max_length=200)]
LongStr = Annotated[str, StringConstraints(max_length=2000)]
Seconds = Annotated[float, Field(gt=0, lt=3600, allow_inf_nan=False)]
GigabytesPerSecond = Annotated[float, Field(gt=0, lt=100_000, allow_inf_nan=False)]  # as in record.py
MHz = Annotated[int, Field(ge=0, le=100_000)]
Watts = Annotated[float, Field(ge=0, lt=100_000, allow_inf_nan=False)]
Nanoseconds = Annotated[int, Field(ge=0)]
StreamMethod = Literal["back-to-back", "cuda-graph"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PlausibilityBound(_Model):
    """The highest figure this device can physically give; a measured figure above it is refused."""

    gbps: Annotated[float, Field(gt=0, le=100_000, allow_inf_nan=False)]  # at most the schema's own limit
    source: LongStr  # where the bound comes from (catalog entry and its source, or the stated rule)


class StreamingFigure(_Model):
    """``calls_per_window`` back-to-back calls between one pair of device events, repeated ``windows`` times.

    No host synchronisation between the calls, so host-side dispatch overlaps the device's work.
    """

    method: StreamMethod
    calls_per_window: Annotated[int, Field(ge=1, le=10_000_000)]
    seconds_per_call: list[Seconds] = Field(min_length=1, max_length=1000)  # one mean per window
    median_s: Seconds
    gbps: GigabytesPerSecond
    timer: ShortStr = "CUDA events around each window"


class GpuIdentity(_Model):
    name: ShortStr | None = None
    uuid: ShortStr | None = None
    pci_bus_id: ShortStr | None = None
    driver_version: ShortStr | None = None
    cuda_driver_version: ShortStr | None = None  # the newest CUDA the driver supports, e.g. "12.4"


class GpuState(_Model):
    """One NVML snapshot; a field NVML could not give is None and named in ``unreadable``."""

    sm_clock_mhz: MHz | None = None
    memory_clock_mhz: MHz | None = None
    max_sm_clock_mhz: MHz | None = None
    max_memory_clock_mhz: MHz | None = None
    throttle_reasons: list[ShortStr] = Field(default_factory=list, max_length=32)
    performance_state: ShortStr | None = None  # "P0" is full speed
    power_draw_w: Watts | None = None
    power_limit_w: Watts | None = None  # the enforced limit
    temperature_c: Annotated[int, Field(ge=-50, le=200)] | None = None
    ecc_enabled: bool | None = None
    mig_enabled: bool | None = None
    persistence_mode: bool | None = None
    # NVML's cumulative time spent held below the requested clocks, by cause (ns since driver load)
    power_violation_ns: Nanoseconds | None = None
    thermal_violation_ns: Nanoseconds | None = None
    unreadable: list[ShortStr] = Field(default_factory=list, max_length=32)


class EnergyWindowCheck(_Model):
    """Whether the energy window was long enough for the counter's update interval."""

    counter_step_s: Seconds | None  # observed interval between counter updates; None: not seen to move
    window_s: Seconds
    steps_in_window: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None
    min_steps: Annotated[int, Field(ge=1)]
    min_seconds: Seconds
    extra_calls: Annotated[int, Field(ge=0)]  # calls run after timing only to lengthen the window
    reliable: bool


class GpuReport(_Model):
    headline: Literal["per-call"] = "per-call"
    headline_reason: LongStr
    streaming: list[StreamingFigure] = Field(default_factory=list, max_length=4)
    streaming_notes: list[LongStr] = Field(default_factory=list, max_length=8)  # variants not measured, why
    identity: GpuIdentity | None = None
    nvml_unavailable: LongStr | None = None
    state_before: GpuState | None = None
    state_after: GpuState | None = None
    energy_window: EnergyWindowCheck | None = None
