"""Typed suite results: what a sweep, roofline, compute or latency point means, stored once per record.

Each suite's record is one point of its suite (a size, a batch); the fields that identify the point
(batch, tokens, size, copy, phase, threads) are typed fields, so reports can tell a roofline point from
a bandwidth result without guessing.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import FiniteFloat, LongStr, NonNegFloat, StrictModel

Count = Annotated[int, Field(ge=0)]


class LineFitInfo(StrictModel):
    """``latency = overhead + bytes / bandwidth``, present only when the fit passed its stated gates."""

    overhead_s: FiniteFloat
    overhead_se_s: NonNegFloat | None = None
    overhead_resolved: bool
    bandwidth_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    r_squared: FiniteFloat
    median_abs_rel_residual: NonNegFloat
    max_abs_rel_residual: NonNegFloat
    points: Annotated[int, Field(ge=2)]
    method: LongStr


class SweepPoint(StrictModel):
    point: Count  # this record's index among the sweep's sizes, smallest first
    points: Annotated[int, Field(ge=1)]
    in_fit: bool
    cache_bytes: Annotated[int, Field(gt=0)] | None = None
    knee_bytes: Annotated[int, Field(gt=0)] | None = None
    knee_rule: LongStr | None = None
    fit: LineFitInfo | None = None  # None: the fit failed (fit_error says why) or was not attempted
    fit_error: LongStr | None = None
    cache_peak_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    cache_peak_bytes: Annotated[int, Field(gt=0)] | None = None
    notes: list[LongStr] = Field(default_factory=list, max_length=16)


class RooflinePoint(StrictModel):
    batch: Annotated[int, Field(ge=1)]
    flop_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    bytes_per_flop: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    ridge_batch: Annotated[int, Field(ge=1)] | None = None  # None: see ridge_error
    ridge_error: LongStr | None = None  # why no ridge is reported: the gates it failed
    baseline_batch: Annotated[int, Field(ge=1)]
    model_ridge_batch: NonNegFloat | None = None
    peak_flop_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    memory_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    compute_bound: bool
    rule: LongStr


class ComputeResult(StrictModel):
    flops_per_call: Annotated[int, Field(gt=0)]
    tflop_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    half_batch: Annotated[int, Field(ge=1)]
    half_batch_tflop_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    growth_from_half: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    compute_bound: bool
    rule: LongStr


class LatencyResult(StrictModel):
    median_us: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    p95_us: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    refused_as_too_short: list[LongStr] = Field(default_factory=list, max_length=64)
    sweep_overhead_us: FiniteFloat | None = None
    sweep_overhead_se_us: NonNegFloat | None = None
    sweep_overhead_resolved: bool | None = None
    sweep_bandwidth_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None


# Each suite's analysis: the fields of its section that are the same in every point of one suite result
# (the sweep's fit and knee, the roofline's ridge and peaks, the concurrency verdict and its rule). The
# store keeps them once per suite result; a point's row keeps only what identifies it (its index, batch,
# copy, phase) and the suite result's id. Keyed by the record's field that holds the section.
ANALYSIS_FIELDS: dict[str, tuple[str, ...]] = {
    "sweep": ("points", "cache_bytes", "knee_bytes", "knee_rule", "fit", "fit_error", "cache_peak_gbps",
              "cache_peak_bytes", "notes"),
    "roofline": ("ridge_batch", "ridge_error", "baseline_batch", "model_ridge_batch", "peak_flop_per_s",
                 "memory_gbps", "compute_bound", "rule"),
    "concurrency": ("copies", "devices", "window_s", "solo_gbps", "together_gbps", "combined_gbps", "scaling",
                    "verdict", "rule", "definitions", "copies_note"),
}
