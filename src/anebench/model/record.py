"""The result record: one measurement with full provenance, versioned like pyperf's JSON.

Every record carries what is needed to judge and compare it: the host, the engine and device, the
workload fingerprint, how it was timed (runs, warmup, timer, statistic, mitigations), every raw sample
and the summary. Numbers are validated where they are declared, so a stored record is always plausible.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Annotated, Any, Final, Literal

from pydantic import Field, model_validator

from .base import (
    GigabytesPerSecond,
    LongStr,
    PositiveFloat,
    Scalar,
    Seconds,
    Sha256,
    ShortStr,
    StrictModel,
)
from .concurrency import Concurrency, KeepAwake
from .decode import DecodeSection
from .energy import Energy
from .gpu import GpuReport, PlausibilityBound
from .quant import QuantSection
from .repetitions import Repetitions
from .source import SourceFacts
from .statistics import gbps as gbps_of
from .statistics import summary_fields
from .suites import ComputeResult, LatencyResult, RooflinePoint, SweepPoint
from .upgrade import upgrade_record
from .warning import RecordWarning

SCHEMA_VERSION: Final = "anebench.result/2"
DOCUMENT_SCHEMA: Final = "anebench.results/3"  # /3: each suite result held once, its points refer to it
OLD_SCHEMA_VERSIONS = ("anebench.result/1",)
OLD_DOCUMENT_SCHEMAS = ("anebench.results/1", "anebench.results/2")
# A measured record's stored statistics must match its samples to this relative tolerance.
DERIVED_TOLERANCE = 1e-6

_Model = StrictModel


class HostState(_Model):
    """What can change between two runs on the same host, read when the measurement starts."""

    load_average_1m: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    cpu_freq_mhz: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    cpu_freq_max_mhz: Annotated[float, Field(ge=0, allow_inf_nan=False)] | None = None
    governor: ShortStr | None = None
    power_source: ShortStr | None = None
    busy: bool | None = None  # load average above half the logical cores: figures may be halved


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
    state: HostState | None = None


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
    tokens: Annotated[int, Field(ge=1)] = 1  # input vectors one predict multiplies (token-batched bundle)
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
            "name": workload.name,
            "shape": list(workload.shape),
            "dtype": workload.dtype,
            "batch": workload.batch,
            "tokens": workload.tokens,
            "quant": workload.quant,
            "weight_bytes": weight_bytes,
            "fingerprint": workload.fingerprint,
            "note": workload.note,
        }
        return cls(**{**base, **fields})

class OutputCheck(_Model):
    passed: bool
    rows_checked: Annotated[int, Field(ge=0)]
    relative_error: Annotated[float, Field(ge=0, allow_inf_nan=False)]
    tolerance: PositiveFloat


# Record fields added after the first records were stored (a path into the record's JSON); left out of the
# content id while unset (None). Add a new optional field here, or every stored record's id changes.
FIELDS_ADDED_LATER: tuple[tuple[str, ...], ...] = (
    ("method", "threads"), ("decode",), ("repetitions", "interleave"),
)


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
    # CPU threads one call was limited to (`--threads`: BLAS via threadpoolctl, torch.set_num_threads);
    # None: the engine's own default, not limited by anebench.
    threads: Annotated[int, Field(ge=1, le=4096)] | None = None


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


Suite = Literal[
    "run", "sweep", "roofline", "latency", "latency-sweep", "compute", "concurrency", "quant", "decode"
]


class ResultRecord(_Model):
    """One measurement (``measured``) or one figure a source states (``published``/``imported``).

    A measured record keeps its raw samples; its summary and GB/s are derived from them whenever the
    record is built or loaded, and a file whose stored figures contradict its samples is refused. A
    stated record carries only what its source states. Each suite's meaning lives in its typed section.
    """

    schema_: Literal["anebench.result/2"] = Field(default=SCHEMA_VERSION, alias="schema")
    id: Sha256 | None = None
    tool: ToolInfo
    provenance: Literal["measured", "imported", "published"] = "measured"
    provenance_note: LongStr = ""
    created: datetime
    suite: Suite = "run"
    host: HostInfo
    engine: EngineInfo
    workload: WorkloadInfo
    method: MethodInfo
    # A measured record is built from its samples alone: the summary and GB/s are derived here (a stated
    # record must carry both, as its source states them; gbps may be null).
    summary: Summary = Field(default_factory=lambda: Summary(n=None))
    samples_s: list[Seconds] = Field(default_factory=list, max_length=1_000_000)
    device_samples_s: list[Seconds] | None = None
    device_summary: Summary | None = None
    device_time: LongStr = ""  # how device time was taken, or why there is none
    gbps: GigabytesPerSecond | None = None
    device_gbps: GigabytesPerSecond | None = None
    # {kind, text}; a record stored before warnings had kinds holds strings, classified when it loads
    warnings: list[RecordWarning] = Field(default_factory=list, max_length=64)
    sweep: SweepPoint | None = None
    roofline: RooflinePoint | None = None
    compute: ComputeResult | None = None
    latency: LatencyResult | None = None
    source: SourceFacts | None = None
    energy: Energy | None = None
    plausibility: PlausibilityBound | None = None  # the bound every measured figure was checked against
    gpu: GpuReport | None = None  # GPU runs: streaming figures, NVML state, energy window
    quant: QuantSection | None = None  # the quantisation suite's comparison with fp16
    concurrency: Concurrency | None = None
    decode: DecodeSection | None = None  # decode: one token's stream, its accounting, its prediction
    keep_awake: KeepAwake | None = None
    # How the samples split into independent repetitions, and the between-run interval derived from them.
    repetitions: Repetitions | None = None

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        return upgrade_record(data) if isinstance(data, dict) else data

    @model_validator(mode="after")
    def _derive(self) -> ResultRecord:
        if self.provenance != "measured":
            missing = [name for name in ("summary", "gbps") if name not in self.model_fields_set]
            if missing:
                raise ValueError(f"{', '.join(missing)}: a stated record must state it (gbps may be null)")
            if self.repetitions is not None:
                raise ValueError("repetitions: a stated record has no samples to repeat; its figure is a "
                                 "point")
            return self
        if not self.samples_s:
            raise ValueError("a measured record must keep its raw samples")
        derived = Summary(**summary_fields(self.samples_s))
        _check_derived("summary", self.summary, derived)
        self.summary = derived
        self.gbps = _checked_gbps("gbps", self.gbps, self.workload.weight_bytes, derived.median)
        if self.repetitions is not None and derived.median is not None:
            within = (derived.ci95_low, derived.ci95_high) if derived.ci95_low and derived.ci95_high else None
            self.repetitions = self.repetitions.derived(self.samples_s, derived.median,
                                                        self.workload.weight_bytes, within)
        if self.device_samples_s:
            device = Summary(**summary_fields(self.device_samples_s))
            if self.device_summary is not None:
                _check_derived("device_summary", self.device_summary, device)
            self.device_summary = device
            self.device_gbps = _checked_gbps("device_gbps", self.device_gbps, self.workload.weight_bytes,
                                             device.median)
        elif self.device_summary is not None or self.device_gbps is not None:
            raise ValueError("device_summary and device_gbps need device_samples_s")
        return self

    def content_id(self) -> str:
        """A stable id: the sha256 of the record's canonical JSON without its id."""
        body = self.model_dump(mode="json", by_alias=True, exclude={"id"})
        # The id covers each warning's text, not its kind: records stored when warnings were plain strings
        # keep their ids (their kind is classified from that text), and a kind is the producer's label
        # for what the text says, so the text already identifies the record's content.
        body["warnings"] = [warning["text"] for warning in body["warnings"]]
        # Fields added after records were first stored count only when set, so that a record that does not
        # use them keeps the id it always had: a file saved before stays loadable and a re-ingest a no-op.
        for path in FIELDS_ADDED_LATER:
            *parents, name = path
            section = body
            for parent in parents:
                section = section.get(parent) or {}
            if section.get(name) is None:
                section.pop(name, None)
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def with_id(self) -> ResultRecord:
        return self.model_copy(update={"id": self.content_id()})

    def rebuilt(self, **changes: Any) -> ResultRecord:
        """A new record: this one's fields with ``changes``, validated and derived again like any record
        (never a patch: pydantic's ``model_copy(update=)`` would skip every validator), with its new id.

        Only for a record that cannot be built once where its sections are known: a concurrency copy's
        record is made in the copy's own process, and the run's analysis exists only in the coordinator.
        """
        # a measured record derives its statistics from its samples again; a stated one keeps its own
        derived = {"summary", "gbps", "device_summary", "device_gbps"}
        if self.provenance != "measured":
            derived = set()
        fields = self.model_dump(by_alias=True, exclude={"id", *derived})
        for name, value in changes.items():
            fields[name] = value.model_dump(by_alias=True) if isinstance(value, StrictModel) else value
        return ResultRecord.model_validate(fields).with_id()

    def latency_s(self) -> float | None:
        """The latency the record's statistic names (median for measured records)."""
        value = getattr(self.summary, self.method.statistic)
        return float(value) if value is not None else None

    def between_run(self) -> tuple[float, float] | None:
        """The headline interval on latency (seconds), or None where it is unknown: a stated point, a run
        of one repetition, or a record made before repetitions were recorded."""
        between = self.repetitions.between_run if self.repetitions is not None else None
        if between is None or between.low_s is None or between.high_s is None:
            return None
        return between.low_s, between.high_s

    @property
    def is_single_call_bandwidth(self) -> bool:
        """A bandwidth result in the matrix's sense: a plain run (batch 1, one token, solo)."""
        return (self.suite == "run" and self.workload.batch == 1 and self.workload.tokens == 1
                and self.concurrency is None)

    @property
    def facts(self) -> SourceFacts:
        """What the record's source states beyond its figures (empty for our own measurements)."""
        return self.source or SourceFacts()

    @property
    def chip(self) -> str | None:
        """The chip the figure belongs to: the GPU for a CUDA device (as the engine named it), else the
        host's chip."""
        if self.engine.device.startswith("cuda"):
            gpu = self.engine.details.get("gpu")
            if isinstance(gpu, str) and gpu:
                return gpu
        return self.host.chip


def _check_derived(name: str, stored: Summary, derived: Summary) -> None:
    """Refuse a stored summary that contradicts the samples (a summary left unset is filled in)."""
    for field in ("n", "median", "min", "max", "p5", "p95"):
        value, truth = getattr(stored, field), getattr(derived, field)
        if value is None or truth is None:
            continue
        if abs(value - truth) > DERIVED_TOLERANCE * max(abs(truth), 1e-12):
            raise ValueError(f"{name}.{field} = {value!r} contradicts the samples, which give {truth!r}")


def _checked_gbps(name: str, stored: float | None, weight_bytes: int, median_s: float | None) -> float:
    if median_s is None:
        raise ValueError(f"{name}: the samples have no median")
    truth = gbps_of(weight_bytes, median_s)
    if stored is None:
        return truth
    if abs(stored - truth) > DERIVED_TOLERANCE * truth:
        raise ValueError(f"{name}: {stored:g} disagrees with weight_bytes / latency = {truth:.4g} GB/s")
    return stored  # agrees to the tolerance: keep the figure as written (no rounding churn in ids)


class ResultsDocument(_Model):
    """A results document as loaded: every record whole (the file keeps each suite result once and its
    points refer to it; ``results.files`` joins them before this validates)."""

    schema_: Literal["anebench.results/3"] = Field(default=DOCUMENT_SCHEMA, alias="schema")
    results: list[ResultRecord]

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("schema") in OLD_DOCUMENT_SCHEMAS:
            return {**data, "schema": DOCUMENT_SCHEMA}
        return data


def utc_now() -> datetime:
    return datetime.now(timezone.utc).replace(microsecond=0)
