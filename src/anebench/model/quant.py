"""The quantisation suite's section of a record: one variant of a head beside its fp16 original.

A leaf like the rest of the model: pydantic only, no other anebench import.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

Verdict = Literal[
    "streams compressed weights", "streams decompressed weights", "compute-bound", "inconclusive"
]


class QuantSection(BaseModel):
    """What one variant stores and streams, against the fp16 head measured in the same run."""

    model_config = ConfigDict(extra="forbid")

    variant: Annotated[str, StringConstraints(max_length=16)]  # fp16 | int8 | lut6 | lut4
    stored_bytes: Annotated[int, Field(gt=0)]  # weight bytes as the bundle stores them
    fp16_bytes: Annotated[int, Field(gt=0)]  # the same head in fp16
    gbps_as_stored: Annotated[float, Field(gt=0, lt=100_000, allow_inf_nan=False)]
    gbps_fp16_equivalent: Annotated[float, Field(gt=0, lt=100_000, allow_inf_nan=False)]
    latency_ratio: Annotated[float, Field(gt=0, allow_inf_nan=False)]  # latency / fp16 latency
    bytes_ratio: Annotated[float, Field(gt=0, allow_inf_nan=False)]  # stored bytes / fp16 bytes
    verdict: Verdict | None = None  # None for the fp16 variant itself
    inference: Annotated[str, StringConstraints(max_length=200)]  # the verdict over all variants
    rule: Annotated[str, StringConstraints(max_length=2000)]
    tolerance: Annotated[float, Field(gt=0, lt=1)]
