"""Concurrency: N copies of a workload, each solo in turn, then all together from a common start.

Every copy is its own prepared workload (copy i uses seed + i, so the copies hold different weights
and no engine can share one buffer between them). The copies and the coordinator meet at one barrier:
  1. all copies prepared and output-checked;
  2. turn i: copy i alone warms up and is timed, the others wait (N turns);
  3. common start: every copy calls until every copy has done its runs, so none runs alone at the end;
  4. all done: each copy keeps the calls inside the common window (latest first start to earliest
     last end), counting the calls cut by the window's edges by the fraction inside it.
The same code runs the copies as threads (engines release the GIL inside a call) or as spawned
processes. The coordinator reads the energy counter at the barriers, so each phase gets its own window.
"""

from __future__ import annotations

import multiprocessing
import queue as queue_module
import threading
import time
from dataclasses import dataclass, field, replace

from ..errors import MeasurementError
from ..model import ResultRecord
from ..session import RunOptions, build_record, prepared_workload, verify_output
from ..workloads import Workload
from .timing import Timing, time_calls
from .verdicts import ConcurrencyVerdict, concurrency_verdict

BARRIER_TIMEOUT_S = 3600.0
START_MARGIN_NS = 20_000_000  # the copies start together this long after the barrier opens
MIN_CALLS_IN_WINDOW = 5


@dataclass(frozen=True)
class CopyJob:
    engine: str
    device: str
    workload: Workload
    copy: int
    copies: int
    options: RunOptions


@dataclass
class Shared:
    """What the copies share: threading objects for threads, their multiprocessing twins for processes."""

    barrier: object
    results: object
    done: object  # one flag per copy, 1 once it has done its runs (or spent its time budget); lock-free
    bounds: object  # 2 x copies int64: each copy's first call start and last call end (ns)
    start_at: object  # 1 int64: the common start (perf_counter ns), set by the coordinator; 0 until then


@dataclass
class CopyOutcome:
    copy: int
    solo_json: str | None = None
    together_json: str | None = None
    window_ns: int = 0
    calls_in_window: float = 0.0  # calls cut by the window's edges count by the fraction inside
    error: str | None = None


def copy_workload(workload: Workload, copy: int) -> Workload:
    return replace(workload, seed=workload.seed + copy)


def common_window(bounds: list[int]) -> tuple[int, int]:
    """(latest first start, earliest last end) from [start0, end0, start1, end1, ...]."""
    starts, ends = bounds[0::2], bounds[1::2]
    return max(starts), min(ends)


def calls_in_window(calls: list[tuple[int, int]], window: tuple[int, int]) -> tuple[list[int], float]:
    """Indices of the calls wholly inside the window, and the (fractional) number of calls in it."""
    lo, hi = window
    inside, fraction = [], 0.0
    for i, (t0, t1) in enumerate(calls):
        overlap = min(t1, hi) - max(t0, lo)
        if overlap <= 0:
            continue
        if t0 >= lo and t1 <= hi:
            inside.append(i)
        fraction += overlap / max(t1 - t0, 1)
    return inside, fraction


def _together(prepared, job: CopyJob, shared: Shared) -> tuple[list[tuple[int, int]], list[float] | None]:
    """Call until every copy has done its runs; returns every call's (start, end) and device times."""
    options = job.options
    now, call = options.clock.now_ns, prepared.call
    has_device = prepared.device_seconds() is not None
    budget_ns = int(options.time_budget_s * 1e9) if options.time_budget_s else None
    calls: list[tuple[int, int]] = []
    device: list[float] = []
    spent = 0
    done, me, finished = shared.done, job.copy, False
    while True:
        t0 = now()
        call()
        t1 = now()
        calls.append((t0, t1))
        if has_device:
            device.append(prepared.device_seconds())
        spent += t1 - t0
        if not finished and (len(calls) >= options.runs or (budget_ns and spent >= budget_ns)):
            done[me] = finished = 1
        if finished and all(done):
            return calls, (device if has_device else None)


def wait_for_start(start_at) -> None:
    """Sleep until the coordinator's common start, then spin the last millisecond: released processes
    wake milliseconds apart, but they all read the same monotonic clock."""
    while start_at[0] == 0 or time.perf_counter_ns() < start_at[0] - 1_000_000:
        time.sleep(0.0002)
    while time.perf_counter_ns() < start_at[0]:
        pass


def run_copy(job: CopyJob, shared: Shared) -> None:
    """One copy's whole life (a thread's or a spawned process's target)."""
    from ..engines import usable_engine

    outcome = CopyOutcome(job.copy)
    barrier = shared.barrier
    try:
        engine = usable_engine(job.engine)
        workload = copy_workload(job.workload, job.copy)
        options = replace(job.options, power=False)  # the coordinator owns the energy windows
        # Copies hold different weights (own fingerprints); the base fingerprint groups them in reports.
        about = {"copy": job.copy, "copies": job.copies, "base_fingerprint": job.workload.fingerprint}
        with prepared_workload(engine, job.device, workload) as prepared:
            check = verify_output(prepared)
            barrier.wait(BARRIER_TIMEOUT_S)
            for turn in range(job.copies):
                barrier.wait(BARRIER_TIMEOUT_S)
                if turn == job.copy:
                    timing = time_calls(prepared, options.runs, options.warmup, options.clock,
                                        options.time_budget_s)
                    solo = build_record(engine, job.device, workload, prepared, options, timing, check,
                                        {"concurrency": {**about, "phase": "solo"}})
                    outcome.solo_json = solo.model_dump_json(by_alias=True)
            barrier.wait(BARRIER_TIMEOUT_S)
            wait_for_start(shared.start_at)  # the common start
            calls, device = _together(prepared, job, shared)
            shared.bounds[2 * job.copy], shared.bounds[2 * job.copy + 1] = calls[0][0], calls[-1][1]
            barrier.wait(BARRIER_TIMEOUT_S)  # every copy has written its bounds
            window = common_window(list(shared.bounds))
            inside, outcome.calls_in_window = calls_in_window(calls, window)
            outcome.window_ns = max(window[1] - window[0], 0)
            kept = inside or list(range(len(calls)))  # no whole call inside: keep all, the record warns
            samples = [(calls[i][1] - calls[i][0]) / 1e9 for i in kept]
            timing = Timing(samples, [device[i] for i in kept] if device else None, 0, True,
                            "none: warm from its solo phase", options.clock.name, options.clock.resolution_s())
            together = build_record(engine, job.device, workload, prepared, options, timing, check,
                                    {"concurrency": {**about, "phase": "together", "calls": len(calls),
                                                     "whole_calls_in_window": len(inside)}})
            outcome.together_json = together.model_dump_json(by_alias=True)
    except BaseException as exc:  # noqa: BLE001 - every failure must release the others from the barrier
        barrier.abort()
        outcome.error = f"copy {job.copy}: {type(exc).__name__}: {exc}"
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
            outcome = results.get(timeout=BARRIER_TIMEOUT_S if all(_alive(w) for w in workers) else 5)
        except queue_module.Empty:
            break
        outcomes[outcome.copy] = outcome
    for worker in workers:
        worker.join(timeout=60)
    errors = [o.error for o in outcomes.values() if o.error]
    # The copies released by another's failure only report the broken barrier: name the cause.
    errors = [e for e in errors if "BrokenBarrierError" not in e] or errors
    lost = [i for i in range(len(workers)) if i not in outcomes]
    errors += [f"copy {i} exited (code {getattr(workers[i], 'exitcode', None)}) without reporting" for i in lost]
    if errors:
        raise MeasurementError("; ".join(errors))
    return [outcomes[i] for i in range(len(workers))]


def _alive(worker) -> bool:
    return worker.is_alive()


@dataclass
class PhaseEnergy:
    counted: object  # power.Counted: what the meter counted between the phase's two readings
    seconds: float
    meter: object  # the EnergyMeter read: its source and scope go into the records


@dataclass
class ConcurrencyRun:
    solo: list[ResultRecord]
    together: list[ResultRecord]
    window_s: float  # the common window: every copy was calling throughout it
    calls_in_window: list[float]
    energy: dict[str, PhaseEnergy | str] = field(default_factory=dict)


def _energy_reader(device: str, power: bool):
    if not power:
        return None, None
    from ..system.power import Unavailable, energy_meter

    meter = energy_meter(device)
    if isinstance(meter, Unavailable):
        return None, meter.reason
    return meter, None


def _start_copies(engine: str, device: str, workload: Workload, copies: int, options: RunOptions,
                  processes: bool) -> tuple[Shared, list]:
    if processes:
        ctx = multiprocessing.get_context("spawn")
        shared = Shared(ctx.Barrier(copies + 1), ctx.Queue(), ctx.Array("b", copies, lock=False),
                        ctx.Array("q", 2 * copies, lock=False), ctx.Array("q", 1, lock=False))
        make = ctx.Process
    else:
        shared = Shared(threading.Barrier(copies + 1), queue_module.Queue(), [0] * copies, [0] * (2 * copies), [0])
        make = threading.Thread
    workers = [make(target=run_copy, args=(CopyJob(engine, device, workload, i, copies, options), shared),
                    daemon=True) for i in range(copies)]
    for worker in workers:
        worker.start()
    return shared, workers


def run_copies(engine: str, device: str, workload: Workload, copies: int, options: RunOptions,
               processes: bool = False) -> ConcurrencyRun:
    """Coordinate ``copies`` copies through the phases and collect their records."""
    meter, unavailable = _energy_reader(device, options.power)
    shared, workers = _start_copies(engine, device, workload, copies, options, processes)
    readings: list[tuple[object, int]] = []
    done = threading.Event()
    if processes:  # a copy that dies without reaching the barrier must not leave the others waiting
        threading.Thread(target=_watch, args=(workers, shared.barrier, done), daemon=True).start()
    try:
        for meeting in range(copies + 3):  # prepared, N turns, common start, done
            shared.barrier.wait(BARRIER_TIMEOUT_S)
            if meeting == copies + 1:
                shared.start_at[0] = time.perf_counter_ns() + START_MARGIN_NS
                if meter is not None:  # the together window opens at the common start, not at the barrier
                    wait_for_start(shared.start_at)
            if meter is not None:
                readings.append((meter.read(), time.perf_counter_ns()))
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
    run = ConcurrencyRun(
        solo=[ResultRecord.model_validate_json(o.solo_json) for o in outcomes],
        together=[ResultRecord.model_validate_json(o.together_json) for o in outcomes],
        window_s=outcomes[0].window_ns / 1e9,
        calls_in_window=[o.calls_in_window for o in outcomes],
    )
    if unavailable:
        run.energy["unavailable"] = unavailable
    elif readings:
        # readings[k] is taken at meeting k: 0 prepared, 1..N turn starts, N+1 common start, N+2 done
        for i in range(copies):
            (j0, t0), (j1, t1) = readings[1 + i], readings[2 + i]
            run.energy[f"solo {i}"] = PhaseEnergy(meter.between(j0, j1), (t1 - t0) / 1e9, meter)
        (j0, t0), (j1, t1) = readings[copies + 1], readings[copies + 2]
        run.energy["together"] = PhaseEnergy(meter.between(j0, j1), (t1 - t0) / 1e9, meter)
    if meter is not None:
        meter.close()
    return run


COMBINED_DEFINITION = ("combined GB/s = every copy's weight bytes x its calls inside the common window "
                       "(edge calls counted by the fraction inside) / the window's length")


@dataclass(frozen=True)
class ConcurrencyAnalysis:
    solo_gbps: list[float]
    together_gbps: list[float]
    combined_gbps: float
    verdict: ConcurrencyVerdict
    window_s: float | None = None

    def as_dict(self) -> dict:
        return {
            "solo_gbps": self.solo_gbps,
            "together_gbps": self.together_gbps,
            "combined_gbps": self.combined_gbps,
            "sum_of_copies_gbps": sum(self.together_gbps),
            "scaling": self.verdict.scaling,
            "verdict": self.verdict.verdict,
            "rule": self.verdict.rule,
            "combined_definition": COMBINED_DEFINITION,
            "window_s": self.window_s,
        }


def combined_gbps(together: list[ResultRecord], window_s: float, calls: list[float] | None = None) -> float:
    if window_s <= 0:
        raise MeasurementError("the copies never ran at the same time (the OS kept one off the CPU?): "
                               "no common window; use more --runs")
    calls = calls if calls is not None else [len(r.samples_s) for r in together]
    moved = sum(r.workload.weight_bytes * n for r, n in zip(together, calls))
    return moved / window_s / 1e9


def analyse_concurrency(solo: list[ResultRecord], together: list[ResultRecord], window_s: float,
                        calls_in_window: list[float] | None = None) -> ConcurrencyAnalysis:
    """Per-copy GB/s solo and together, combined GB/s, scaling and the verdict by the stated rule."""
    solo_gbps = [r.gbps for r in solo]
    combined = combined_gbps(together, window_s, calls_in_window)
    return ConcurrencyAnalysis(solo_gbps, [r.gbps for r in together], combined,
                               concurrency_verdict(solo_gbps, combined), window_s)


def energy_extras(phase: PhaseEnergy, calls: int, weight_bytes: int, median_s: float, window: str,
                  device: str | None = None):
    """The same Energy section as a single run's window (power.energy_figures), for one phase."""
    from ..system.power import energy_figures, work_component

    work = work_component(device) if device else None
    return energy_figures(phase.meter, window, phase.counted, phase.seconds, calls, weight_bytes / median_s / 1e9,
                          weight_bytes, work)
