"""Repetitions in fresh processes (pyperf's worker processes): each repetition is a new spawned process
that loads the workload, checks its output, warms up and times its share of the calls.

In-process repetitions re-draw what changes over time (frequency and thermal state, background load,
the warmup); a fresh process also re-draws what is fixed for a process's life: where the weights land
in physical memory (pages, huge pages, NUMA node, DRAM channels), the allocator's and the engine's
state, the threads' placement. One process at a time, so each holds the machine alone.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from contextlib import nullcontext
from dataclasses import dataclass

from ..engines.base import Engine
from ..errors import MeasurementError, UserError, setting
from ..measure.clock import Clock
from ..measure.timing import ProgressCallback, Timing, combine, split_runs, time_calls
from ..measure.warmup import WarmupPolicy
from ..model import KeepAwake, OutputCheck
from ..util.lifeline import creator_info, die_with_parent
from ..workloads import Workload
from .keepawake import KeepAwakeProcess, measured, share_warning, spinner_threads
from .record_builder import PreparedFacts
from .session import Measurement, RunOptions, check_threads, prepared_workload, verify_output


@dataclass(frozen=True)
class RepetitionJob:
    engine: Engine
    device: str
    workload: Workload
    runs: int
    warmup: WarmupPolicy
    clock: Clock
    time_budget_s: float | None
    keep_awake: bool
    threads: int | None = None  # --threads (keep-awake's own limit otherwise)


def run_repetition(job: RepetitionJob) -> tuple[PreparedFacts, OutputCheck, Timing, KeepAwake | None]:
    """One repetition, start to end, in the process that calls it (the spawned worker's target)."""
    threads = job.threads or (spinner_threads(job.engine, job.device) if job.keep_awake else None)
    limit = job.engine.thread_limit(threads) if threads is not None else nullcontext()
    with limit, prepared_workload(job.engine, job.device, job.workload) as prepared:
        helper = KeepAwakeProcess() if job.keep_awake else None  # as in-process: check, warmup and timing
        if helper is not None:
            helper.start()
        try:
            check = verify_output(prepared)
            timing = time_calls(prepared, job.runs, job.warmup, job.clock, job.time_budget_s,
                                phase=helper.mark if helper is not None else None)
        finally:
            if helper is not None:
                helper.stop()
        return PreparedFacts.of(prepared), check, timing, helper.section() if helper is not None else None


def in_fresh_process(job: RepetitionJob, number: int) -> tuple[PreparedFacts, OutputCheck, Timing,
                                                                KeepAwake | None]:
    with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                             initializer=die_with_parent, initargs=creator_info()) as pool:
        try:
            return pool.submit(run_repetition, job).result()
        except BrokenProcessPool as exc:
            raise MeasurementError(f"repetition {number}'s process died before reporting (out of memory?); "
                                   "nothing was saved") from exc


def merge_facts(facts: list[PreparedFacts]) -> PreparedFacts:
    """The first process's facts; every process must have read the same bytes, and every warning counts."""
    first = facts[0]
    for other in facts[1:]:
        if (other.weight_bytes, other.run_dtype) != (first.weight_bytes, first.run_dtype):
            raise MeasurementError(
                f"the repetitions' processes loaded different workloads ({first.weight_bytes} vs "
                f"{other.weight_bytes} bytes, {first.run_dtype} vs {other.run_dtype})")
    warnings = list(dict.fromkeys(w for f in facts for w in f.warnings))
    return PreparedFacts(**{**first.__dict__, "warnings": warnings})


def measure_in_fresh_processes(engine: Engine, device: str, workload: Workload, options: RunOptions,
                               progress: ProgressCallback | None = None) -> Measurement:
    """``options.runs`` calls as ``options.repetitions`` repetitions, each in a new process."""
    check_threads(engine, options.threads)
    if options.power:
        fresh = setting("fresh_processes")
        raise UserError(f"{setting('power')} with {fresh}: the energy counter is read in one process; "
                        f"measure energy without {fresh}")
    sizes = split_runs(options.runs, options.repetitions)
    share = options.time_budget_s / options.repetitions if options.time_budget_s else None
    keep_awake = options.keep_awake  # a value, not a sentence looked up in the record's text
    results = []
    for i, size in enumerate(sizes):
        job = RepetitionJob(engine, device, workload, size, options.warmup, options.clock, share, keep_awake,
                            options.threads)
        results.append(in_fresh_process(job, i + 1))
        if progress is not None:
            progress(sum(sizes[:i + 1]), options.runs)
    facts = merge_facts([r[0] for r in results])
    check = max((r[1] for r in results), key=lambda c: c.relative_error)  # the worst of the checks
    timing = combine([r[2] for r in results], fresh_processes=True)
    helpers = [r[3] for r in results if r[3] is not None]
    if not helpers:
        return Measurement(engine, device, workload, facts, options, timing, check, None)
    # every repetition's timed window together: the spinner's CPU time over their wall time
    section = measured(sum(h.cpu_seconds for h in helpers), sum(h.wall_seconds for h in helpers))
    warning = share_warning(section)
    return Measurement(engine, device, workload, facts, options, timing, check, None,
                       {"keep_awake": section}, [warning] if warning else [])
