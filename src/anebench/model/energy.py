"""What an energy counter saw over a measurement's window: joules by component, GB/s per watt, DRAM traffic.

One model for every source: NVIDIA NVML (the GPU board), Linux RAPL (CPU packages) and Apple's IOReport
(per component: ANE, GPU, CPU, DRAM, and the package total; plus the memory controllers' bandwidth
histograms, a second view of the bytes streamed). Where a counter is missing the model says
"unavailable" and why, never a guess. It imports nothing of anebench (the record imports it).
"""

from __future__ import annotations

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ["COMPONENTS", "ComponentEnergy", "DramTraffic", "Energy"]

_Short = Annotated[str, StringConstraints(max_length=200)]
_Long = Annotated[str, StringConstraints(max_length=2000)]
_NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]
_Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# No SoC or board draws 10 kW: a larger figure is a unit error or a counter that reset.
_Watts = Annotated[float, Field(ge=0, lt=10_000, allow_inf_nan=False)]
_Gbps = Annotated[float, Field(ge=0, lt=100_000, allow_inf_nan=False)]

Component = Literal["package", "ane", "gpu", "cpu", "dram", "gpu_sram"]
COMPONENTS: tuple[Component, ...] = get_args(Component)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComponentEnergy(_Model):
    """One component's energy over the window (IOReport), or why it has none."""

    component: Component
    available: bool
    joules: _NonNegative | None = None
    watts: _Watts | None = None
    joules_per_call: _NonNegative | None = None
    channels: list[_Short] = Field(default_factory=list, max_length=64)  # the counters summed
    reason: _Long | None = None  # why unavailable, or what the figure leaves out (e.g. a dropped channel)


class DramTraffic(_Model):
    """DRAM read+write bandwidth from the memory controllers' histograms, beside the tool's own figure.

    Each histogram bucket is named by its upper edge; a die's bandwidth is the residency-weighted mean of
    the bucket midpoints, so the true mean lies within one bucket width of it: that width (summed over
    dies) is the resolution, and the two views disagree only beyond it.
    """

    available: bool
    source: _Short = ""
    channels: list[_Short] = Field(default_factory=list, max_length=64)  # one per die, summed
    per_die_gbps: list[_Gbps] = Field(default_factory=list, max_length=64)
    gbps: _Gbps | None = None  # read+write, all dies
    bucket_width_gbps: _Positive | None = None  # the widest bucket of any die
    resolution_gbps: _Positive | None = None  # bucket widths summed over the dies
    bytes_per_call: _NonNegative | None = None  # gbps x window / calls
    weight_gbps: _Gbps | None = None  # the tool's weight bytes x calls / the same window
    agrees: bool | None = None  # |gbps - weight_gbps| <= resolution_gbps
    reason: _Long | None = None
    # The Neural Engine's own PMP histograms (ANE RD / WR): its DRAM traffic where the Energy Model's ANE
    # channel does not move (M5 / macOS 27); None where the chip has no such channel.
    ane_gbps: _Gbps | None = None
    ane_channels: list[_Short] = Field(default_factory=list, max_length=64)


class Energy(_Model):
    """A record's energy section. The top-level figures are the counter's whole scope (the NVML board,
    the RAPL packages, the IOReport package total); ``components`` break an IOReport window down."""

    available: bool
    reason: _Long | None = None
    source: _Short | None = None
    scope: _Long | None = None
    window: _Short | None = None  # which calls the window spans, e.g. "timed calls (warmup excluded)"
    sampling: _Short | None = None  # how the counter was read
    sampling_interval_s: _Positive | None = None  # time between the readings that were differenced
    calls: Annotated[int, Field(ge=1)] | None = None
    joules: _NonNegative | None = None
    seconds: _Positive | None = None
    watts: _Watts | None = None
    joules_per_call: _NonNegative | None = None
    gbps_per_watt: _NonNegative | None = None  # the record's GB/s over the whole scope's watts
    work_component: Component | None = None  # the component that did the work (ane, gpu, cpu)
    work_gbps_per_watt: _NonNegative | None = None  # GB/s over that component's watts
    components: list[ComponentEnergy] = Field(default_factory=list, max_length=16)
    dram_traffic: DramTraffic | None = None
    # The window against the counter's own step (IOReport: observed before the window opened); a text
    # starting "unreliable:" is a warning of the record.
    window_check: _Long | None = None

    def component(self, name: str) -> ComponentEnergy | None:
        return next((c for c in self.components if c.component == name), None)
