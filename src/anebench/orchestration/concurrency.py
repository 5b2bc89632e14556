"""Running N copies of a workload: each solo in turn, then all together from a common start.

Every copy is its own prepared workload (copy i uses seed + i, so the copies hold different weights
and no engine can share one buffer between them), on its own device where several are given. The copies
and the coordinator meet at one barrier:
  1. all copies prepared and output-checked;
  2. turn i: copy i alone warms up and is timed, the others wait (N turns);
  3. common start: every copy calls until every copy is done (the timing loop's UntilAllDone rule), so
     none runs alone at the end and every copy's counted calls lie inside the common window;
  4. all done: each copy keeps the calls inside the common window (latest first start to earliest
     last end), counting the calls cut by the window's edges by the fraction inside it.
The same code runs the copies as threads (engines that release the GIL and are thread-safe) or as
spawned processes. The engine travels to a spawned copy by value (its class by import path), so any
importable Engine runs there. The coordinator reads the energy counters at the barriers, so each phase
gets its own window.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from ..engines.base import Engine
from ..errors import MeasurementError
from ..measure.concurrency import busy_share, calls_in_window, checked_window, common_window
from ..measure.timing import Timing, UntilAllDone, time_calls, timing_loop
from ..model import Concurrency, Energy, ResultRecord, gbps
from ..system.energy_check import window_covers
from ..util.lifeline import creator_info, die_with_parent
from ..workloads import Workload
from .record_builder import build_record
from .session import RunOptions, prepared_workload, verify_output

BARRIER_TIMEOUT_S = 3600.0
START_MARGIN_NS = 20_000_000  # the copies start together this long after the barrier opens
READ_LEAD_NS = 10_000_000  # the together window's first reading, at least this long before the common start


@dataclass(frozen=True)
class CopyJob:
    engine: Engine
    device: str  # this copy's device
    workload: Workload
    copy: int
    copies: int
    options: RunOptions
    mode: Literal["threads", "processes"]
    threads_per_copy: int | None = None  # applied inside the copy (processes); by the coordinator (threads)


@dataclass
class Shared:
    """What the copies share: threading objects for threads, their multiprocessing twins for processes."""

    barrier: Any
    results: Any
    done_at: Any  # one int64 per copy: when it finished its counted calls (ns); 0 until then
    bounds: Any  # 2 x copies int64: each copy's first call start and last call end (ns)
    start_at: Any  # 1 int64: the common start (perf_counter ns), set by the coordinator; 0 until then


@dataclass
class CopyOutcome:
    copy: int
    solo_json: str | None = None
    together_json: str | None = None
    window_ns: int = 0
    calls_in_window: float = 0.0  # calls cut by the window's edges count by the fraction inside
    error: str | None = None
    # the copy stopped only because another copy's failure broke the barrier: its error names no cause
    released: bool = False


def copy_workload(workload: Workload, copy: int) -> Workload:
    return replace(workload, seed=workload.seed + copy)


def wait_for_start(start_at) -> None:
    """Sleep until the coordinator's common start, then spin the last millisecond: released processes
    wake milliseconds apart, but they all read the same monotonic clock."""
    while start_at[0] == 0 or time.perf_counter_ns() < start_at[0] - 1_000_000:
        time.sleep(0.0002)
    while time.perf_counter_ns() < start_at[0]:
        pass


@contextmanager
def thread_limit(engine: Engine, threads: int | None) -> Iterator[bool]:
    if threads is None:
        yield False
        return
    with engine.thread_limit(threads) as applied:
        yield applied


def _section(job: CopyJob, phase: Literal["solo", "together"], **fields: Any) -> Concurrency:
    return Concurrency(mode=job.mode, copy=job.copy, copies=job.copies, phase=phase,
                       call_releases_gil=job.engine.releases_gil, threads_per_copy=job.threads_per_copy,
                       device=job.device, base_fingerprint=job.workload.fingerprint, **fields)


def _together(prepared, job: CopyJob, shared: Shared, resolution_s: float, barrier) -> tuple[Timing, dict]:
    """The together phase through the one timing loop; returns the calls kept and their counts."""
    options = job.options
    rule = UntilAllDone(options.runs, job.copy, shared.bounds, shared.done_at, options.time_budget_s,
                        stop=lambda: barrier.broken)
    # CPU time: a call the OS takes off the CPU (other load, a CPU quota) still counts as inside a call
    cpu_clock = time.thread_time if job.mode == "threads" else time.process_time
    cpu_start, wall_start = cpu_clock(), time.perf_counter()
    loop = timing_loop(prepared, options.clock, rule, resolution_s, spans=True)
    cpu_share = (cpu_clock() - cpu_start) / max(time.perf_counter() - wall_start, 1e-9)
    if rule.aborted:
        raise threading.BrokenBarrierError
    barrier.wait(BARRIER_TIMEOUT_S)  # every copy has written its bounds
    window = common_window(list(shared.bounds))
    spans = loop.spans_ns
    inside, fraction = calls_in_window(spans, window)
    kept = inside or list(range(len(spans)))  # no common window: the coordinator refuses with the bounds
    samples = [loop.samples_s[i] for i in kept]
    device = [loop.device_samples_s[i] for i in kept] if loop.device_samples_s else None
    timing = Timing(
        samples, device, 0, True, "none: warm from its solo phase", options.clock.name, resolution_s
    )
    counts = {"calls": len(spans), "whole_calls_in_window": len(inside), "calls_in_window": fraction,
              "window_ns": max(window[1] - window[0], 0), "busy_share": busy_share(spans, window),
              "cpu_share": min(max(cpu_share, 0.0), 4096.0)}
    return timing, counts


def run_copy(job: CopyJob, shared: Shared, parent: tuple[int, bool] | None = None) -> None:
    """One copy's whole life (a thread's or a spawned process's target: ``parent`` set, it dies with
    the coordinator instead of waiting at a barrier for an hour)."""
    if parent is not None:
        die_with_parent(*parent)
    outcome = CopyOutcome(job.copy)
    barrier = shared.barrier
    try:
        engine = job.engine
        availability = engine.available()
        if not availability:
            raise MeasurementError(f"engine {engine.name!r} is not available here: {availability.reason}")
        workload = copy_workload(job.workload, job.copy)
        options = replace(job.options, power=False)  # the coordinator owns the energy windows
        resolution = options.clock.resolution_s()
        in_process = job.mode == "processes"
        with thread_limit(engine, job.threads_per_copy if in_process else None), \
                prepared_workload(engine, job.device, workload) as prepared:
            check = verify_output(prepared)
            barrier.wait(BARRIER_TIMEOUT_S)
            for turn in range(job.copies):
                barrier.wait(BARRIER_TIMEOUT_S)
                if turn == job.copy:
                    timing = time_calls(prepared, options.runs, options.warmup, options.clock,
                                        options.time_budget_s)
                    solo = build_record(engine, job.device, workload, prepared, options, timing, check,
                                        {"concurrency": _section(job, "solo")})
                    outcome.solo_json = solo.model_dump_json(by_alias=True)
            barrier.wait(BARRIER_TIMEOUT_S)
            wait_for_start(shared.start_at)  # the common start
            timing, counts = _together(prepared, job, shared, resolution, barrier)
            outcome.window_ns, outcome.calls_in_window = counts["window_ns"], counts["calls_in_window"]
            section = _section(job, "together", calls=counts["calls"],
                               whole_calls_in_window=counts["whole_calls_in_window"],
                               calls_in_window=counts["calls_in_window"], busy_share=counts["busy_share"],
                               cpu_share=counts["cpu_share"])
            together = build_record(engine, job.device, workload, prepared, options, timing, check,
                                    {"concurrency": section})
            outcome.together_json = together.model_dump_json(by_alias=True)
    except BaseException as exc:  # noqa: BLE001 - every failure must release the others from the barrier
        barrier.abort()
        outcome.error = f"copy {job.copy}: {type(exc).__name__}: {exc}"
        outcome.released = isinstance(exc, threading.BrokenBarrierError)
    shared.results.put(outcome)


def _watch(workers, barrier, done: threading.Event) -> None:
    while not done.wait(0.2):
        if any(w.exitcode not in (None, 0) for w in workers):
            barrier.abort()
            return


def _collect(workers, results) -> list[CopyOutcome]:
    outcomes: dict[int, CopyOutcome] = {}
    for _ in workers:
        try:
            outcome = results.get(timeout=BARRIER_TIMEOUT_S if all(w.is_alive() for w in workers) else 5)
        except queue_module.Empty:
            break
        outcomes[outcome.copy] = outcome
    for worker in workers:
        worker.join(timeout=60)
    failed = [o for o in outcomes.values() if o.error]
    # The copies released by another's failure only report the broken barrier: name the cause.
    errors = [o.error for o in failed if o.error and not o.released] or [o.error for o in failed if o.error]
    lost = [i for i in range(len(workers)) if i not in outcomes]
    errors += [
        f"copy {i} exited (code {getattr(workers[i], 'exitcode', None)}) without reporting" for i in lost
    ]
    if errors:
        raise MeasurementError("; ".join(errors))
    return [outcomes[i] for i in range(len(workers))]


@dataclass
class PhaseEnergy:
    counted: Any  # energy_figures.Counted: what the meter counted between the phase's two readings
    seconds: float
    meter: Any  # the EnergyMeter read: its source and scope go into the records
    problem: str | None = None  # why the window cannot stand for the phase's calls (then no figure)


@dataclass
class ConcurrencyRun:
    solo: list[ResultRecord]
    together: list[ResultRecord]
    window_s: float  # the common window: every copy was calling throughout it
    calls_in_window: list[float]
    energy: dict[str, PhaseEnergy | str] = field(default_factory=dict)


class SummedMeter:
    """The energy counters of several devices read as one (the copies' devices together)."""

    def __init__(self, meters: list[Any], devices: list[str]):
        self.meters = meters
        self.source = meters[0].source + (f" (sum over {', '.join(devices)})" if len(meters) > 1 else "")
        self.scope = meters[0].scope + (" x each device" if len(meters) > 1 else "")
        self.sampling = getattr(meters[0], "sampling", None)

    def read(self) -> list[Any]:
        return [m.read() for m in self.meters]

    def between(self, start: list[Any], end: list[Any]) -> Any:
        """One meter: its own view (components, DRAM); several: the summed joules of their scopes."""
        counted = [m.between(a, b) for m, a, b in zip(self.meters, start, end)]
        if len(counted) == 1:
            return counted[0]
        from ..system.energy_figures import Counted

        joules = [c.joules for c in counted]
        return Counted(None if any(j is None for j in joules) else sum(joules))

    def close(self) -> None:
        for meter in self.meters:
            meter.close()


def _energy_reader(devices: list[str], power: bool) -> tuple[SummedMeter | None, str | None]:
    if not power:
        return None, None
    from ..system.power import Unavailable, counter_key, energy_meter

    # One meter per physical counter: a Mac's ane, gpu and cpu share IOReport's one SoC meter.
    by_counter: dict[str, str] = {}
    for device in devices:
        by_counter.setdefault(counter_key(device), device)
    distinct = list(by_counter.values())
    meters = []
    for device in distinct:
        meter = energy_meter(device)
        if isinstance(meter, Unavailable):
            return None, meter.reason
        meters.append(meter)
    return SummedMeter(meters, distinct), None


def _start_copies(jobs: list[CopyJob], processes: bool) -> tuple[Shared, list]:
    copies = len(jobs)
    make: Any
    if processes:
        ctx = multiprocessing.get_context("spawn")
        shared = Shared(ctx.Barrier(copies + 1), ctx.Queue(), ctx.Array("q", copies, lock=False),
                        ctx.Array("q", 2 * copies, lock=False), ctx.Array("q", 1, lock=False))
        make = ctx.Process
    else:
        shared = Shared(
            threading.Barrier(copies + 1), queue_module.Queue(), [0] * copies, [0] * (2 * copies), [0]
        )
        make = threading.Thread
    parent = creator_info() if processes else None
    workers = [make(target=run_copy, args=(job, shared, parent), daemon=True) for job in jobs]
    for worker in workers:
        worker.start()
    return shared, workers


def run_copies(engine: Engine, devices: list[str], workload: Workload, options: RunOptions,
               processes: bool = False, threads_per_copy: int | None = None,
               on_meeting: Callable[[int], None] | None = None) -> ConcurrencyRun:
    """Coordinate one copy per entry of ``devices`` through the phases and collect their records.

    ``on_meeting(k)`` after each barrier the coordinator passes: 0 all prepared, 1..N copy k-1's solo turn
    starts, N+1 the common start, N+2 all done (the caller's progress per phase)."""
    copies = len(devices)
    mode: Literal["threads", "processes"] = "processes" if processes else "threads"
    jobs = [CopyJob(engine, device, workload, i, copies, options, mode, threads_per_copy)
            for i, device in enumerate(devices)]
    meter, unavailable = _energy_reader(devices, options.power)
    readings: list[tuple[Any, int, int]] = []  # (reading, ns before the read, ns after it)
    done = threading.Event()
    # Threads share one process: the thread limit is set once, around all of them.
    with thread_limit(engine, None if processes else threads_per_copy):
        shared, workers = _start_copies(jobs, processes)
        if processes:  # a copy that dies without reaching the barrier must not leave the others waiting
            threading.Thread(target=_watch, args=(workers, shared.barrier, done), daemon=True).start()
        try:
            for meeting in range(copies + 3):  # prepared, N turns, common start, done
                shared.barrier.wait(BARRIER_TIMEOUT_S)
                if meeting == copies + 1:
                    # The together window's first reading must end before the copies start (window_covers
                    # checks it): read ahead of the common start by twice the longest read so far plus
                    # READ_LEAD_NS, before the copies' last-millisecond spin (threads hold the GIL there).
                    longest = max((after - before for _, before, after in readings), default=0)
                    lead = 2 * longest + READ_LEAD_NS
                    shared.start_at[0] = time.perf_counter_ns() + max(START_MARGIN_NS, 2 * lead)
                    if meter is not None:
                        while time.perf_counter_ns() < shared.start_at[0] - lead:
                            time.sleep(0.0002)
                if meter is not None:
                    before = time.perf_counter_ns()
                    readings.append((meter.read(), before, time.perf_counter_ns()))
                if on_meeting is not None:
                    on_meeting(meeting)
        except threading.BrokenBarrierError:
            pass  # a copy failed: its outcome names the error
        finally:
            done.set()
        try:
            outcomes = _collect(workers, shared.results)
        except BaseException:
            if meter is not None:
                meter.close()
            raise
    checked_window(list(shared.bounds), shared.start_at[0])  # a refusal names every copy's bounds
    run = ConcurrencyRun(
        solo=[ResultRecord.model_validate_json(o.solo_json) for o in outcomes if o.solo_json],
        together=[ResultRecord.model_validate_json(o.together_json) for o in outcomes if o.together_json],
        window_s=outcomes[0].window_ns / 1e9,
        calls_in_window=[o.calls_in_window for o in outcomes],
    )
    if unavailable:
        run.energy["unavailable"] = unavailable
    elif meter is not None and readings:
        # readings[k] is taken at meeting k: 0 prepared, 1..N turn starts, N+1 common start, N+2 done;
        # each is timed at the middle of its read (an IOReport sample can take a while under load)
        for i in range(copies):
            (j0, *r0), (j1, *r1) = readings[1 + i], readings[2 + i]
            run.energy[f"solo {i}"] = PhaseEnergy(meter.between(j0, j1), (sum(r1) - sum(r0)) / 2e9, meter)
        (j0, *r0), (j1, *r1) = readings[copies + 1], readings[copies + 2]
        problem = window_covers((r0[0], r0[1]), (r1[0], r1[1]), common_window(list(shared.bounds)))
        run.energy["together"] = PhaseEnergy(meter.between(j0, j1), (sum(r1) - sum(r0)) / 2e9, meter, problem)
    if meter is not None:
        meter.close()
    return run


def phase_energy(phase: PhaseEnergy, calls: int, weight_bytes: int, median_s: float, window: str,
                 device: str | None = None) -> Energy:
    """The same Energy section as a single run's window (power.energy_figures), for one phase."""
    from ..system.energy_figures import energy_figures
    from ..system.power import work_component

    work = work_component(device) if device else None
    if phase.problem is not None:
        return Energy(available=False, reason=phase.problem, source=phase.meter.source,
                      scope=phase.meter.scope, window=window)
    return energy_figures(
        phase.meter,
        window,
        phase.counted,
        phase.seconds,
        calls,
        gbps(weight_bytes, median_s),
        weight_bytes,
        work,
    )
