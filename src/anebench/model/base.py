"""Bounded field types and the strict base model every record part derives from."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

ShortStr = Annotated[str, StringConstraints(max_length=200)]
LongStr = Annotated[str, StringConstraints(max_length=2000)]
Seconds = Annotated[float, Field(gt=0, lt=3600, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]
# 100 TB/s is far above any memory system; a larger figure is a unit or timing error.
GigabytesPerSecond = Annotated[float, Field(gt=0, lt=100_000, allow_inf_nan=False)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Scalar = str | int | float | bool | None


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
