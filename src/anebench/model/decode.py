"""The decode suite's section: one token's stream of a model, its byte accounting, and its prediction.

A decode record's samples are seconds per token; its weight_bytes are everything one token streams
(linears, KV cache at the depth, norms, the embedding row), so its GB/s is the effective stream rate.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import LongStr, NonNegFloat, ShortStr, StrictModel

Bytes = Annotated[int, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]

DECODE_NOTE = (
    "the weight + KV stream of one decode step (every linear in layer order, the attention read "
    "of the KV cache at the depth, the LM head), not a full model: no rotary, no softmax, no "
    "sampling, no exact numerics"
)


class DecodeBytes(StrictModel):
    """One kind of weight per token: matrices stored and streamed, and their bytes."""

    kind: ShortStr
    shape: ShortStr
    stored_count: Count
    streamed_count: Count
    stored_bytes: Bytes  # in the checkpoint's dtype: every expert, a tied head once
    streamed_bytes: Bytes  # in the engine's dtype: what one token reads


class ChunkTime(StrictModel):
    """One dispatch of a chunked engine's token (one predict): its bytes and median time."""

    name: ShortStr
    bytes: Bytes
    median_s: Annotated[float, Field(gt=0, lt=3600, allow_inf_nan=False)]


class DecodePrediction(StrictModel):
    """tok/s = 1 / sum over dispatches of (overhead + bytes / bandwidth at that size), from a sweep."""

    tokens_per_s: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    seconds_per_token: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    dispatches: Annotated[int, Field(ge=1)]
    overhead_s: NonNegFloat
    bandwidth_gbps: Annotated[float, Field(gt=0, allow_inf_nan=False)]  # the sweep's memory bandwidth
    source: LongStr  # which sweep: stored (when, where) or a small one run here
    rule: LongStr


class DecodeSection(StrictModel):
    model: ShortStr
    family: ShortStr
    config_source: LongStr
    weights: ShortStr  # synthetic or checkpoint
    depth: Count
    layers: Annotated[int, Field(ge=1)]
    stream_bytes: Annotated[int, Field(gt=0)]  # = the record's weight_bytes
    stored_bytes: Bytes
    accounting: list[DecodeBytes] = Field(default_factory=list, max_length=64)
    timeline: list[ChunkTime] = Field(default_factory=list, max_length=4096)
    prediction: DecodePrediction | None = None
    prediction_error: LongStr | None = None  # why there is no prediction
    note: LongStr = DECODE_NOTE
