"""Typed sections for concurrency and the keep-awake mitigation (a /1 record's extras upgrade to them)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from .base import GigabytesPerSecond, LongStr, Seconds, Sha256, ShortStr
from .base import StrictModel as _Model

__all__ = ["KEEP_AWAKE_MIN_SHARE", "THREADS_OF_ONE_PROCESS", "Concurrency", "KeepAwake"]

Count = Annotated[int, Field(ge=0, le=100_000_000)]
Scaling = Annotated[float, Field(gt=0, lt=10_000, allow_inf_nan=False)]

THREADS_OF_ONE_PROCESS = ("copies were threads of one process: predict() holds the GIL, so this run cannot "
                          "separate a shared ceiling from serialisation")
KEEP_AWAKE_MIN_SHARE = 0.9

Phase = Literal["solo", "together", "combined"]


class Concurrency(_Model):
    """One copy of a concurrency run (or a run's combined figure), with the run's analysis where it belongs.

    ``copy`` (``copy_`` in Python) is 0-based (a published "instance 1" is copy 0); None for a combined
    figure.
    """

    mode: Literal["threads", "processes"]
    # "copy" in files; copy_ in Python (BaseModel.copy is a method), as schema_ is for "schema"
    copy_: Annotated[int, Field(ge=0, le=4096)] | None = Field(None, alias="copy")
    copies: Annotated[int, Field(ge=1, le=4096)]
    phase: Phase
    call_releases_gil: bool | None = None  # None: not known; False with threads: the copies serialised
    threads_per_copy: Annotated[int, Field(ge=1, le=4096)] | None = None  # None: not set (engine default)
    device: ShortStr | None = None  # where this copy ran (several devices: copy i on device i)
    devices: list[ShortStr] = Field(default_factory=list, max_length=4096)  # every copy's, in copy order
    base_fingerprint: Sha256 | None = None  # the copies hold seed + i weights; this groups them
    calls: Count | None = None  # together: every call from the common start to this copy's last
    whole_calls_in_window: Count | None = None
    calls_in_window: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    window_s: Seconds | None = None
    # together: the share of the common window this copy spent inside its calls (measured)
    busy_share: Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)] | None = None
    # together: this copy's CPU seconds / wall seconds of its together calls (its threads summed)
    cpu_share: Annotated[float, Field(ge=0, le=4096, allow_inf_nan=False)] | None = None
    solo_gbps: list[GigabytesPerSecond] = Field(default_factory=list, max_length=4096)
    together_gbps: list[GigabytesPerSecond] = Field(default_factory=list, max_length=4096)
    combined_gbps: GigabytesPerSecond | None = None
    scaling: Scaling | None = None
    verdict: Literal["independent units", "partial", "shared ceiling", "inconclusive"] | None = None
    rule: LongStr | None = None
    definitions: list[LongStr] = Field(default_factory=list, max_length=8)
    copies_note: LongStr | None = None
    flags: list[LongStr] = Field(default_factory=list, max_length=16)


class KeepAwake(_Model):
    """The --keep-awake helper as measured: a separate process spinning on one core."""

    how: ShortStr = "a separate process spinning on one CPU core"
    cpu_seconds: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    wall_seconds: Annotated[float, Field(gt=0, lt=1e7, allow_inf_nan=False)]
    cpu_share: Annotated[float, Field(ge=0, le=64, allow_inf_nan=False)]  # CPU time / wall, timed window
    min_share: float = KEEP_AWAKE_MIN_SHARE
    effective: bool  # cpu_share >= min_share: the core really was kept busy
