"""The record of one measurement, built once with every section it carries, and the checks made as it is
built (stability, cache, busy host, device gap, plausibility): ``session.Measurement.record``, the
concurrency copies and the interleaved rounds all build their records here."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from .. import __version__
from ..engines.base import Engine, Prepared
from ..measure.checks import checks
from ..measure.gpu import DEVICE_TIME, PER_CALL, gpu_warnings
from ..model import (
    EngineInfo,
    GpuReport,
    HostInfo,
    HostState,
    MethodInfo,
    PlausibilityBound,
    RecordWarning,
    Repetitions,
    ResultRecord,
    Scalar,
    ToolInfo,
    WorkloadInfo,
    utc_now,
)
from ..model import gbps as gbps_of
from ..model import median as median_of
from ..system.bounds import Bound, check_plausible, plausibility_bound
from ..system.host import SYSTEM_HOST, Host, busy_warning
from ..workloads import Workload


@dataclass
class PreparedFacts:
    """What a record takes from a Prepared: kept past its close (a suite builds its records at the end)
    and carried back from the process that held it (fresh processes)."""

    workload: Workload
    weight_bytes: int
    run_dtype: str
    dtype_note: str | None
    compute_units: str | None
    device_time_note: str
    artifact_sha256: str | None
    details: dict[str, Scalar] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    pid: int = 0  # the process that held it (not recorded: it says only that the processes differed)

    @classmethod
    def of(cls, prepared: Prepared) -> PreparedFacts:
        return cls(prepared.workload, prepared.weight_bytes, prepared.run_dtype, prepared.dtype_note,
                   prepared.compute_units, prepared.device_time_note, prepared.artifact_sha256,
                   dict(prepared.details), list(prepared.warnings), os.getpid())


def build_record(engine, device, workload, prepared, options, timing, check, sections=None,
                 state: HostState | None = None, extra_warnings: Sequence[str | RecordWarning] = (),
                 created: datetime | None = None) -> ResultRecord:
    """The record of one measurement, built once: ``sections`` are the typed sections it carries (energy,
    gpu, a suite's point), ``extra_warnings`` what its caller found beyond the checks made here.

    The record gets the raw samples only: the model derives the summary and GB/s from them. The figures
    read here are for the checks: ``measure.checks`` (stability, drift, cache, warmup cap, device gap; the
    report runs the same checks again on stored records) and plausibility.
    """
    sections = dict(sections or {})
    state = state or options.host.state()
    host = HostInfo.model_validate({**options.host.info().model_dump(), "state": state})
    warnings = checks(timing.samples_s, weight_bytes=prepared.weight_bytes,
                      cache_bytes=engine.cache_bytes(device), warmup_steady=timing.warmup_steady,
                      warmup_runs=timing.warmup_runs, device_samples_s=timing.device_samples_s)
    warnings += [RecordWarning(kind="engine", text=text) for text in prepared.warnings]
    energy = sections.get("energy")
    if energy is not None:
        from ..system.energy_figures import energy_warnings

        warnings.extend(energy_warnings(energy))
    busy = busy_warning(state, host.cores_logical)
    if busy:
        warnings.append(busy)
    gbps = gbps_of(prepared.weight_bytes, median_of(timing.samples_s))
    device_gbps = None
    if timing.device_samples_s:
        device_gbps = gbps_of(prepared.weight_bytes, median_of(timing.device_samples_s))
    bound = record_bound(engine, device, prepared, options.host)
    gpu: GpuReport | None = sections.get("gpu")
    streaming = {f"streaming ({s.method}) figure": s.gbps for s in (gpu.streaming if gpu else [])}
    check_plausible({PER_CALL: gbps, DEVICE_TIME: device_gbps, **streaming}, bound)
    if gpu is not None:
        warnings.extend(gpu_warnings(gpu))
    warnings.extend(RecordWarning.of(w) for w in extra_warnings)
    record = ResultRecord(
        tool=ToolInfo(version=__version__),
        created=created or utc_now(),
        suite=options.suite,
        host=host,
        engine=EngineInfo(
            name=engine.name,
            version=engine.version(),
            device=device,
            compute_units=prepared.compute_units,
            run_dtype=prepared.run_dtype,
            dtype_note=prepared.dtype_note,
            details=prepared.details,
        ),
        workload=WorkloadInfo.of(
            workload,
            prepared.weight_bytes,
            fingerprint=workload.streamed_fingerprint(prepared.run_dtype),  # identity = the bytes read
            source=workload.weights.description().get("source", "synthetic"),
            artifact_sha256=prepared.artifact_sha256,
            origin=workload.weights.provenance(),
        ),
        method=MethodInfo(
            runs=len(timing.samples_s),
            warmup_policy=timing.warmup_policy,
            warmup_runs=timing.warmup_runs,
            warmup_steady=timing.warmup_steady,
            timer=timing.timer,
            timer_resolution_s=timing.timer_resolution_s,
            statistic="median",
            timing=options.timing,
            mitigations=options.mitigations.describe(),
            output_check=check,
            threads=options.threads,
        ),
        samples_s=timing.samples_s,
        device_samples_s=timing.device_samples_s,
        device_time=prepared.device_time_note,
        warnings=warnings,
        # a caller's own (interleaved rounds: their place in the group), else the timing's
        repetitions=sections.pop("repetitions", None)
        or Repetitions(fresh_processes=timing.fresh_processes, runs=timing.repetition_list()),
        plausibility=PlausibilityBound(gbps=bound.gbps, source=bound.source),
        **sections,
    )
    return record.with_id()


def record_bound(engine: Engine, device: str, prepared: Prepared, host: Host = SYSTEM_HOST) -> Bound:
    gpu_name = prepared.details.get("gpu")
    return plausibility_bound(device, gpu_name=gpu_name if isinstance(gpu_name, str) else None,
                              host_chip=host.info().chip, weight_bytes=prepared.weight_bytes,
                              cache_bytes=engine.cache_bytes(device))
