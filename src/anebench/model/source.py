"""What a stated (published or imported) result's source says beyond its figures."""

from __future__ import annotations

from pydantic import Field

from .base import LongStr, Scalar, ShortStr, StrictModel


class SourceFacts(StrictModel):
    """Facts of a published or imported record that are not measurements of ours."""

    chip_config: ShortStr | None = None  # e.g. "32 GB": the configuration the chip's figure belongs to
    gbps_derived: LongStr | None = None  # how GB/s was derived when the source states only a latency
    weight_bytes_unknown: bool = False  # the source mixed artifacts: its bytes are an upper bound
    flags: list[LongStr] = Field(default_factory=list, max_length=16)  # e.g. "run count ... not stated"
    size_convention: dict[ShortStr, Scalar] | None = None  # the source's size vs the exact bytes
    tool_figures: dict[ShortStr, Scalar] | None = None  # the source tool's own figures, kept verbatim
