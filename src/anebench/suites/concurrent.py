"""`anebench concurrent`: are two copies twice the bandwidth (independent units) or one shared ceiling?"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..engines.base import Engine
from ..errors import UserError
from ..measure.concurrency import (
    MIN_CALLS_IN_WINDOW,
    ConcurrencyAnalysis,
    analyse_concurrency,
    copy_workload,
    energy_extras,
    run_copies,
)
from ..model import Energy, ResultRecord
from ..session import RunOptions, preflight_memory
from ..system.host import SYSTEM_HOST, Host
from ..system.energy_figures import energy_warnings
from ..workloads import Workload

IDLE_GAP = 1.5  # sum of per-copy GB/s this far above combined: time went between calls
SEED_NOTE = "copy i holds the workload generated with seed + i (different weights, same shape and bytes)"
CHECKPOINT_NOTE = "every copy holds the checkpoint's own weights in a buffer of its own (same bytes, no sharing)"


@dataclass
class ConcurrentResult:
    records: list[ResultRecord]  # solo records first, then the together records, by copy
    analysis: ConcurrencyAnalysis


def preflight_copies(engine: Engine, device: str, workload: Workload, copies: int,
                     host: Host = SYSTEM_HOST) -> None:
    """All copies are resident at once: refuse before loading any if they cannot all fit."""
    if copies < 2:
        raise UserError(f"--copies {copies}: concurrency needs at least 2 copies")
    # The same head with every copy's rows: same dtype and quantization, so the same bytes per row.
    total = replace(workload, name=f"{copies} copies of {workload.name}", vocab=workload.vocab * copies,
                    source=None)
    preflight_memory(engine, device, total, host)


def run_concurrent(engine: Engine, device: str, workload: Workload, copies: int, options: RunOptions,
                   processes: bool = False) -> ConcurrentResult:
    preflight_copies(engine, device, workload, copies, options.host)
    run = run_copies(engine.name, device, workload, copies, options, processes)
    analysis = analyse_concurrency(run.solo, run.together, run.window_s, run.calls_in_window)
    shared = analysis.as_dict() | {"mode": "processes (spawn)" if processes else "threads",
                                   "copies_note": SEED_NOTE if workload.source is None else CHECKPOINT_NOTE}
    energy = energy_by_record(run, analysis)
    records = []
    for phase, group in (("solo", run.solo), ("together", run.together)):
        for copy, record in enumerate(group):
            update: dict = {"concurrency": {**(record.concurrency or {}), **shared}}
            if options.power:
                update["energy"] = energy.get((phase, copy), Energy(available=False, reason="not measured"))
            warnings = list(record.warnings)
            if phase == "together" and sum(analysis.together_gbps) > IDLE_GAP * analysis.combined_gbps:
                warnings.append(f"the copies' own GB/s sum to {sum(analysis.together_gbps):.1f} but together they "
                                f"moved {analysis.combined_gbps:.1f} GB/s: they spent most of the window between "
                                "calls (more threads than cores? set each copy's threads lower)")
            whole = (record.concurrency or {}).get("whole_calls_in_window")
            if phase == "together" and whole is not None and whole < MIN_CALLS_IN_WINDOW:
                warnings.append(f"only {whole} whole call(s) inside the common window: the copies barely "
                                "overlapped (use more --runs)")
            if update.get("energy") is not None:
                warnings += energy_warnings(update["energy"])
            records.append(record.model_copy(update={**update, "warnings": warnings}).with_id())
    return ConcurrentResult(records, analysis)


def energy_by_record(run, analysis: ConcurrencyAnalysis) -> dict[tuple[str, int], Energy]:
    """Solo windows are per copy; the together window is shared, so it is per call of all copies."""
    if "unavailable" in run.energy:
        reason = Energy(available=False, reason=run.energy["unavailable"])
        return {(phase, i): reason for phase in ("solo", "together") for i in range(len(run.solo))}
    found: dict[tuple[str, int], Energy] = {}
    for i, record in enumerate(run.solo):
        phase = run.energy.get(f"solo {i}")
        if phase is not None:
            calls = record.method.warmup_runs + len(record.samples_s)
            found[("solo", i)] = energy_extras(phase, calls, record.workload.weight_bytes, record.latency_s(),
                                               "this copy's warmup and timed calls, alone", record.engine.device)
    together = run.energy.get("together")
    if together is not None:
        # Every call from the common start to the last copy's end, not only those kept inside the window.
        calls = sum((r.concurrency or {}).get("calls", len(r.samples_s)) for r in run.together)
        weight_bytes = run.together[0].workload.weight_bytes
        # GB/s per watt of the whole machine: combined GB/s over the window's power.
        median_s = weight_bytes / (analysis.combined_gbps * 1e9)
        shared = energy_extras(together, calls, weight_bytes, median_s,
                               "every copy's calls together; GB/s per watt uses combined GB/s",
                               run.together[0].engine.device)
        for i in range(len(run.together)):
            found[("together", i)] = shared
    return found


__all__ = ["ConcurrentResult", "copy_workload", "run_concurrent"]
