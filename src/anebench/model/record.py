"""The result record: one measurement with full provenance, versioned like pyperf's JSON.

Every record carries what is needed to judge and compare it: the host, the engine and device, the
workload fingerprint, how it was timed (runs, warmup, timer, statistic, mitigations), every raw sample
and the summary. Numbers are validated where they are declared, so a stored record is always plausible.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

__all__ = ['DOCUMENT_SCHEMA', 'SCHEMA_VERSION', 'EngineInfo', 'GigabytesPerSecond', 'HostInfo', 'LongStr', 'MethodInfo', 'OutputCheck', 'PositiveFloat', 'ResultRecord', 'ResultsDocument', 'Scalar', 'Seconds', 'Sha256', 'ShortStr', 'Summary', 'ToolInfo', 'WorkloadInfo', 'utc_now']

SCHEMA_VERSION = "anebench.result/1"
DOCUMENT_SCHEMA = "anebench.results/1"

ShortStr = Annotated[str, StringConstraints(max_length=200)]
LongStr = Annotated[str, StringConstraints(max_length=2000)]
Seconds = Annotated[float, Field(gt=0, lt=3600, allow_inf_nan=False)]
PositiveFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
# 100 TB/s is far above any memory system; a larger figure is a unit or timing error.
GigabytesPerSecond = Annotated[float, Field(gt=0, lt=100_000, allow_inf_nan=False)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
Scalar = str | int | float | bool | None


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class HostInfo(_Model):
    os: ShortStr
    os_version: ShortStr = ""
    arch: ShortStr
    cpu_model: ShortStr = ""
    chip: ShortStr | None = None  # e.g. "Apple M4 Pro", mapped to the chip catalog
    machine_model: ShortStr | None = None  # e.g. "Mac16,1"
    cores_physical: Annotated[int, Field(ge=1, le=4096)] | None = None
    cores_logical: Annotated[int, Field(ge=1, le=4096)] | None = None
    memory_bytes: Annotated[int, Field(gt=0)] | None = None
    llc_bytes: Annotated[int, Field(gt=0)] | None = None
    python: ShortStr = ""
    rosetta: bool | None = None
    blas: list[dict[str, Scalar]] = Field(default_factory=list, max_length=16)
    power_source: ShortStr | None = None
    low_power_mode: bool | None = None
    fingerprint: ShortStr = ""


class EngineInfo(_Model):
    name: ShortStr
    version: ShortStr = ""
    device: ShortStr
    compute_units: ShortStr | None = None
    run_dtype: ShortStr  # the dtype the weights were streamed in
    dtype_note: LongStr | None = None  # why run_dtype differs from the workload's dtype
    details: dict[ShortStr, Scalar] = Field(default_factory=dict, max_length=64)


class WorkloadInfo(_Model):
    name: ShortStr
    shape: list[Annotated[int, Field(gt=0)]] = Field(min_length=2, max_length=2)  # [vocab, hidden]
    dtype: ShortStr
    batch: Annotated[int, Field(ge=1)] = 1
    quant: ShortStr | None = None
    weight_bytes: Annotated[int, Field(gt=0)]  # bytes one call reads, as the engine stores them
    fingerprint: Sha256
    source: ShortStr = "synthetic"
    artifact_sha256: Sha256 | None = None
    note: LongStr = ""
    # Where non-synthetic weights came from (checkpoint model, file, tensor, why it was chosen).
    origin: dict[ShortStr, Scalar] = Field(default_factory=dict, max_length=32)


    @classmethod
    def of(cls, workload, weight_bytes: int, **fields) -> WorkloadInfo:
        """The record's view of a ``workloads.Workload``: what it is, plus the bytes one call read."""
        base = {
            "name": workload.name, "shape": list(workload.shape), "dtype": workload.dtype,
            "batch": workload.batch, "quant": workload.quant, "weight_bytes": weight_bytes,
            "fingerprint": workload.fingerprint, "note": workload.note,
        }
        return cls(**{**base, **fields})

class OutputCheck(_Model):
    passed: bool
    rows_checked: Annotated[int, Field(ge=0)]
    relative_error: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    tolerance: PositiveFloat


class MethodInfo(_Model):
    runs: Annotated[int, Field(ge=1)] | None  # None: not stated by the source
    warmup_policy: ShortStr | None
    warmup_runs: Annotated[int, Field(ge=0)] | None
    warmup_steady: bool | None = None
    timer: ShortStr
    timer_resolution_s: PositiveFloat | None = None
    statistic: Literal["median", "mean"] = "median"
    timing: ShortStr = "wall clock per call"
    mitigations: list[ShortStr] = Field(default_factory=list, max_length=16)
    output_check: OutputCheck | None = None


class Summary(_Model):
    """Statistics of per-call latency in seconds (torch.utils.benchmark style: median and IQR)."""

    n: Annotated[int, Field(ge=1)] | None
    median: Seconds | None = None
    ci95_low: Seconds | None = None
    ci95_high: Seconds | None = None
    mean: Seconds | None = None
    stdev: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    min: Seconds | None = None
    max: Seconds | None = None
    p5: Seconds | None = None
    p95: Seconds | None = None
    iqr: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None


class ToolInfo(_Model):
    name: ShortStr = "anebench"
    version: ShortStr


# Typed sections live in their own modules and use the types above, so they are imported here, after
# those types exist (importing them at the top would be a cycle).
from .concurrency import Concurrency, KeepAwake


class ResultRecord(_Model):
    schema_: Literal["anebench.result/1"] = Field(SCHEMA_VERSION, alias="schema")
    id: Sha256 | None = None
    tool: ToolInfo
    provenance: Literal["measured", "imported", "published"] = "measured"
    provenance_note: LongStr = ""
    created: datetime
    suite: ShortStr = "run"
    host: HostInfo
    engine: EngineInfo
    workload: WorkloadInfo
    method: MethodInfo
    summary: Summary
    samples_s: list[Seconds] = Field(default_factory=list, max_length=1_000_000)
    device_samples_s: list[Seconds] | None = None
    device_summary: Summary | None = None
    device_time: LongStr = ""  # how device time was taken, or why there is none
    gbps: GigabytesPerSecond | None
    device_gbps: GigabytesPerSecond | None = None
    warnings: list[LongStr] = Field(default_factory=list, max_length=64)
    concurrency: Concurrency | None = None
    keep_awake: KeepAwake | None = None
    extras: dict[ShortStr, Any] = Field(default_factory=dict)

    def content_id(self) -> str:
        """A stable id: the sha256 of the record's canonical JSON without its id."""
        body = self.model_dump(mode="json", by_alias=True, exclude={"id"})
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_id(self) -> ResultRecord:
        return self.model_copy(update={"id": self.content_id()})

    def latency_s(self) -> float | None:
        """The latency the record's statistic names (median for measured records)."""
        return getattr(self.summary, self.method.statistic)


class ResultsDocument(_Model):
    schema_: Literal["anebench.results/1"] = Field(DOCUMENT_SCHEMA, alias="schema")
    results: list[ResultRecord]


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)
