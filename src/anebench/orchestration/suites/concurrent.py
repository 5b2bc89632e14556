"""`anebench concurrent`: are two copies twice the bandwidth (independent units) or one shared ceiling?"""

from __future__ import annotations

from dataclasses import dataclass

from ...engines.base import Engine
from ...measure.concurrency import (
    MIN_CALLS_IN_WINDOW,
    TOGETHER_DEFINITION,
    ConcurrencyAnalysis,
    analyse_concurrency,
)
from ...measure.timing import ProgressCallback
from ...model import Concurrency, Energy, RecordWarning, ResultRecord
from ...system.energy_figures import energy_warnings
from ...workloads import Workload
from ..concurrency import copy_workload, phase_energy, run_copies
from ..concurrency_plan import ConcurrencyPlan, plan_concurrent
from ..session import RunOptions
from .common import ProgressFactory, no_progress

BUSY_SHARE_MIN = 0.9  # a copy calling less of the common window than this spent the rest between calls
SEED_NOTE = "copy i holds the workload generated with seed + i (different weights, same shape and bytes)"
CHECKPOINT_NOTE = (
    "every copy holds the checkpoint's own weights in a buffer of its own (same bytes, no sharing)"
)


@dataclass
class ConcurrentResult:
    records: list[ResultRecord]  # solo records first, then the together records, by copy
    analysis: ConcurrencyAnalysis
    plan: ConcurrencyPlan


def run_concurrent(
    engine: Engine,
    device: str,
    workload: Workload,
    copies: int | None,
    options: RunOptions,
    mode: str | None = None,
    devices: str | None = None,
    threads_per_copy: int | None = None,
    progress: ProgressFactory = no_progress,
) -> ConcurrentResult:
    plan = plan_concurrent(engine, device, workload, copies, mode, devices, threads_per_copy, options.host)
    return run_plan(plan, options, progress)


class PhaseProgress:
    """One progress task per phase (prepare, each copy solo, together), each done when the next begins:
    the coordinator sees the phases at its barriers, not the copies' calls."""

    def __init__(self, plan: ConcurrencyPlan, progress: ProgressFactory):
        self.plan, self.progress = plan, progress
        self.label = f"concurrent {plan.engine.name} {plan.workload.name}"
        self.current: ProgressCallback = progress(f"{self.label}: prepare {plan.copies} copies", 1)

    def __call__(self, meeting: int) -> None:
        self.current(1, 1)
        copies = self.plan.copies
        if 1 <= meeting <= copies:  # meeting k: copy k-1's solo turn starts
            copy = meeting - 1
            self.current = self.progress(f"{self.label}: copy {copy} solo on {self.plan.devices[copy]}", 1)
        elif meeting == copies + 1:
            self.current = self.progress(f"{self.label}: {copies} copies together", 1)
        else:
            self.current = lambda _done, _total: None


def run_plan(
    plan: ConcurrencyPlan, options: RunOptions, progress: ProgressFactory = no_progress
) -> ConcurrentResult:
    run = run_copies(
        plan.engine,
        plan.devices,
        plan.workload,
        options,
        plan.mode == "processes",
        plan.threads_per_copy,
        PhaseProgress(plan, progress),
    )
    analysis = analyse_concurrency(run.solo, run.together, run.window_s, run.calls_in_window)
    a = analysis.as_dict()
    shared = {
        "window_s": analysis.window_s or None,
        "devices": list(plan.devices),
        "solo_gbps": a["solo_gbps"],
        "together_gbps": a["together_gbps"],
        "combined_gbps": a["combined_gbps"],
        "scaling": a["scaling"],
        "verdict": a["verdict"],
        "rule": a["rule"],
        "definitions": [a["combined_definition"], TOGETHER_DEFINITION],
        "copies_note": SEED_NOTE if plan.workload.source is None else CHECKPOINT_NOTE,
    }
    energy = energy_by_record(run, analysis)
    records = []
    # The copies built their records in their own threads or processes; the run's analysis exists only
    # here, so each record is rebuilt once with it (validated, as every record is built).
    for phase, group in (("solo", run.solo), ("together", run.together)):
        for copy, record in enumerate(group):
            assert record.concurrency is not None  # every copy's record carries its section
            section = Concurrency.model_validate({**record.concurrency.model_dump(by_alias=True), **shared})
            changes: dict = {"concurrency": section}
            if options.power:
                changes["energy"] = energy.get((phase, copy), Energy(available=False, reason="not measured"))
            warnings = list(record.warnings)
            if phase == "together" and (idle := between_calls_warning(run.together)):
                warnings.append(idle)
            whole = section.whole_calls_in_window
            if phase == "together" and whole is not None and whole < MIN_CALLS_IN_WINDOW:
                warnings.append(RecordWarning(kind="concurrency", text=(
                    f"only {whole} whole call(s) inside the common window: the copies barely "
                    "overlapped (time more calls per copy)")))
            if changes.get("energy") is not None:
                warnings += energy_warnings(changes["energy"])
            changes["warnings"] = warnings
            records.append(record.rebuilt(**changes))
    return ConcurrentResult(records, analysis, plan)


def off_cpu_warning(together: list[ResultRecord]) -> RecordWarning | None:
    """What was measured when the OS kept a copy off the CPU during its calls: each copy's CPU share
    (CPU seconds / wall seconds of its together calls). A call descheduled midway counts as inside a
    call, so the busy share alone cannot see it."""
    if any(r.engine.device != "cpu" for r in together):
        return None  # an accelerator's call waits for its device: the host CPU is idle by design
    shares = [r.concurrency.cpu_share if r.concurrency else None for r in together]
    if any(s is None for s in shares) or min(s for s in shares if s is not None) >= BUSY_SHARE_MIN:
        return None
    listed = ", ".join(f"copy {i} {s:.0%}" for i, s in enumerate(shares) if s is not None)
    return RecordWarning(kind="concurrency", text=(
        f"the copies were on a CPU for only part of their together calls ({listed}; a 1-thread copy "
        f"needs >= {BUSY_SHARE_MIN:.0%}): other load or a CPU quota took the rest, so the verdict "
        "describes this host's load, not the hardware"))


def between_calls_warning(together: list[ResultRecord]) -> RecordWarning | None:
    """What was measured when a copy spent part of the common window between calls: each copy's busy
    share (the time inside its calls / the window), so the verdict's cause can be seen, not guessed."""
    shares = [r.concurrency.busy_share if r.concurrency else None for r in together]
    if any(s is None for s in shares) or min(s for s in shares if s is not None) >= BUSY_SHARE_MIN:
        return off_cpu_warning(together)
    listed = ", ".join(f"copy {i} {s:.0%}" for i, s in enumerate(shares) if s is not None)
    return RecordWarning(kind="concurrency", text=(
        f"the copies were inside a call for only part of the common window ({listed}; each needs "
        f">= {BUSY_SHARE_MIN:.0%} for the verdict to describe the hardware): the rest of the window "
        "they were between calls, off the CPU or in the harness, so combined GB/s understates them"))


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
            found[("solo", i)] = phase_energy(
                phase,
                calls,
                record.workload.weight_bytes,
                record.latency_s(),
                "this copy's warmup and timed calls, alone",
                record.engine.device,
            )
    together = run.energy.get("together")
    if together is not None:
        # Every call from the common start to the last copy's end, not only those kept inside the window.
        calls = sum(
            (r.concurrency.calls if r.concurrency and r.concurrency.calls is not None else len(r.samples_s))
            for r in run.together
        )
        weight_bytes = run.together[0].workload.weight_bytes
        # GB/s per watt of the whole machine: combined GB/s over the window's power.
        median_s = weight_bytes / (analysis.combined_gbps * 1e9)
        shared = phase_energy(
            together,
            calls,
            weight_bytes,
            median_s,
            "every copy's calls together; GB/s per watt uses combined GB/s",
            run.together[0].engine.device,
        )
        for i in range(len(run.together)):
            found[("together", i)] = shared
    return found


__all__ = ["ConcurrentResult", "copy_workload", "run_concurrent", "run_plan"]
