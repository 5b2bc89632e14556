"""Records with scripted repetitions (exact medians) and stated points, for the uncertainty tests."""

from __future__ import annotations

from anebench.model import (
    EngineInfo,
    HostInfo,
    MethodInfo,
    Repetition,
    Repetitions,
    ResultRecord,
    Summary,
    ToolInfo,
    WorkloadInfo,
    utc_now,
)
from anebench.workloads import resolve_workload

SPREAD = (-0.004, -0.002, 0.0, 0.002, 0.004)  # symmetric: each repetition's median is exactly its centre


def samples_around(median_s: float, spread: tuple[float, ...] = SPREAD) -> list[float]:
    return [median_s * (1 + d) for d in spread]


def repeated_record(medians_s: list[float], chip: str | None = "Apple M4 Pro", engine: str = "mlx",
                    device: str = "gpu", workload: str = "llama_lm_head",
                    spread: tuple[float, ...] = SPREAD, **sections) -> ResultRecord:
    """A measured record whose repetitions have exactly these medians (their samples around them)."""
    w = resolve_workload(workload)
    samples = [s for m in medians_s for s in samples_around(m, spread)]
    reps = Repetitions(runs=[Repetition(runs=len(spread), warmup_runs=2, warmup_steady=True)
                             for _ in medians_s])
    return ResultRecord(
        tool=ToolInfo(version="0.1.0"), created=utc_now(),
        host=HostInfo(os="macOS", arch="arm64", chip=chip, fingerprint="abc"),
        engine=EngineInfo(name=engine, device=device, run_dtype=w.dtype),
        workload=WorkloadInfo(name=w.name, shape=list(w.shape), dtype=w.dtype, quant=w.quant,
                              weight_bytes=w.stored_bytes, fingerprint=w.fingerprint),
        method=MethodInfo(runs=len(samples), warmup_policy="fixed: 2 calls", warmup_runs=2 * len(medians_s),
                          timer="fake"),
        summary=Summary(n=len(samples)), samples_s=samples, gbps=None, repetitions=reps, **sections,
    ).with_id()


def stated_record(gbps: float, chip: str = "Apple M4 Pro", engine: str = "mlx", device: str = "gpu",
                  workload: str = "llama_lm_head") -> ResultRecord:
    """A published figure: a point, as its source states it (a mean latency, no samples, no interval)."""
    w = resolve_workload(workload)
    latency = w.weight_bytes / (gbps * 1e9)
    return ResultRecord(
        tool=ToolInfo(name="anemll-bench", version="x"), provenance="published",
        provenance_note="a source; row 1",
        created=utc_now(), host=HostInfo(os="macOS", arch="arm64", chip=chip),
        engine=EngineInfo(name=engine, device=device, run_dtype=w.dtype),
        workload=WorkloadInfo(name=w.name, shape=list(w.shape), dtype=w.dtype, quant=w.quant,
                              weight_bytes=w.stored_bytes, fingerprint=w.fingerprint),
        method=MethodInfo(runs=None, warmup_policy=None, warmup_runs=None, timer="unknown", statistic="mean"),
        summary=Summary(n=None, mean=latency), gbps=gbps,
    ).with_id()
