"""The sweep's sizes measured in interleaved rounds, so every size sees the same host phases.

On a shared machine the host's phase can change within one sweep (a read kernel moved from 21.9 to 16.4
GB/s in one): measured one after the other, the small sizes then read one machine and the large ones
another, and the fitted line bends. In rounds (as `run --interleave` does for configurations), every
size is prepared and output-checked once, then round i times repetition i of every size, ascending in
even rounds and descending in odd ones (a drift within a round favours no size). Each round is one pass
over all sizes, so the fit is made per round and combined (measure.line_fit.fit_by_rounds).

All sizes are held in memory at once; where their sum does not fit, with --power (one energy window per
size cannot be split between alternating sizes) or on a CUDA device (its warmup and event timing are per
size), the sizes are measured one after the other as before, and the sweep's notes say why.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from contextlib import ExitStack

from ...engines.base import Engine, Prepared
from ...measure.timing import ProgressCallback, Timing, combine, split_runs, time_calls
from ...model import Interleave, Repetitions, ResultRecord
from ...system.host import Host
from ...workloads import Workload
from ..preflight import MEMORY_HEADROOM
from ..record_builder import PreparedFacts
from ..session import (
    Measurement,
    RunOptions,
    prepared_workload,
    thread_limit,
    verify_output,
)
from .common import ProgressFactory

Finished = Callable[[list[ResultRecord]], None]


def memory_for_all(engine: Engine, device: str, workloads: Sequence[Workload],
                   host: Host) -> tuple[float, float]:
    """(bytes needed to hold every size at once, bytes free for them), as session.preflight_memory counts."""
    needed = sum(engine.bytes_for(w, device) for w in workloads) * MEMORY_HEADROOM
    free = engine.free_memory(device)
    if free is None:  # the weights live in host memory (0 free on a GPU is an answer, not "unknown")
        free = host.available_memory_bytes()
    return needed, free


def sequential_reason(engine: Engine, device: str, workloads: Sequence[Workload],
                      options: RunOptions) -> str | None:
    """Why the sizes are measured one after the other instead of in rounds (None: in rounds)."""
    if len(workloads) < 2 or options.repetitions < 2:
        return "sizes measured one after the other: rounds need at least two sizes and two repetitions"
    if options.power:
        return ("sizes measured one after the other (not in interleaved rounds): --power reads one energy "
                "window per size, which cannot be split between alternating sizes")
    if options.fresh_processes:
        return "sizes measured one after the other: each repetition runs in its own fresh process"
    if device.startswith("cuda"):
        return ("sizes measured one after the other: on a CUDA device the warmup and the event timing are "
                "per size")
    needed, free = memory_for_all(engine, device, workloads, options.host)
    if needed > free:
        return (f"sizes measured one after the other (not in interleaved rounds): holding all "
                f"{len(workloads)} at once needs {needed / 1e9:.2f} GB, but {free / 1e9:.2f} GB is free, so "
                "a host phase change between sizes can bend the fit")
    return None


def _offset(bar: ProgressCallback, before: int, total: int) -> ProgressCallback:
    return lambda done, _total: bar(before + done, total)


def measure_in_rounds(engine: Engine, device: str, workloads: Sequence[Workload], options: RunOptions,
                      progress: ProgressFactory, finished: Finished | None = None) -> list[Measurement]:
    """Every size's measurement, its repetitions timed in ``options.repetitions`` interleaved rounds (the
    sweep builds each record once, with its fit).

    ``finished`` gets every size's record so far after each repetition (one record per size, built from
    the repetitions it has), so an interrupted sweep keeps everything it timed."""
    runs_per_round = split_runs(options.runs, options.repetitions)
    share = options.time_budget_s / options.repetitions if options.time_budget_s else None
    group = secrets.token_hex(8)
    label = f"sweep {engine.name}:{device}"
    with thread_limit(engine, options.threads), ExitStack() as stack:
        prepared: list[Prepared] = []
        checks = []
        ready_bar = progress(f"{label} preparing and checking {len(workloads)} sizes", len(workloads))
        for i, workload in enumerate(workloads):  # every size prepared and checked before the first round
            ready = stack.enter_context(prepared_workload(engine, device, workload, options.host))
            checks.append(verify_output(ready))
            prepared.append(ready)
            ready_bar(i + 1, len(workloads))
        states = [options.host.state() for _ in workloads]
        parts: list[list[Timing]] = [[] for _ in workloads]
        measured: list[Measurement | None] = [None] * len(workloads)

        def measurement_of(j: int) -> Measurement:
            """Size j's measurement from the repetitions it has so far, with its place in the rounds."""
            timing = combine(parts[j])
            place = Interleave(group=group, position=j, configurations=len(workloads),
                               label=f"{engine.name}:{device} {workloads[j].name}", threads=options.threads)
            repetitions = Repetitions(fresh_processes=timing.fresh_processes, runs=timing.repetition_list(),
                                      interleave=place)
            return Measurement(engine, device, workloads[j], PreparedFacts.of(prepared[j]), options, timing,
                               checks[j], states[j], {"repetitions": repetitions})

        for round_index, runs in enumerate(runs_per_round):
            total = runs * len(workloads)
            bar = progress(f"{label} {len(workloads)} sizes, round ({round_index + 1}/{len(runs_per_round)})",
                           total)
            indices = list(range(len(workloads)))
            for done, j in enumerate(indices if round_index % 2 == 0 else indices[::-1]):
                parts[j].append(time_calls(prepared[j], runs, options.warmup, options.clock, share,
                                           _offset(bar, done * runs, total)))
                bar((done + 1) * runs, total)
                measured[j] = measurement_of(j)
                if finished is not None:  # every size's record so far, without the fit
                    finished([m.draft for m in measured if m is not None])
    return [m for m in measured if m is not None]


def rounds_of(records: Sequence[ResultRecord]) -> list[list[float]] | None:
    """Each record's per-round median latency, where the records are one sweep's sizes measured in the
    same interleaved rounds (one group, every size with every round); else None."""
    places = [r.repetitions.interleave if r.repetitions is not None else None for r in records]
    if not records or any(p is None for p in places) or len({p.group for p in places if p}) != 1:
        return None
    runs = [r.repetitions.runs for r in records if r.repetitions is not None]
    if len({len(rs) for rs in runs}) != 1 or len(runs[0]) < 2:
        return None
    medians = [[rep.median_s for rep in rs] for rs in runs]
    if any(m is None for per_size in medians for m in per_size):
        return None
    return [[float(m) for m in per_size if m is not None] for per_size in medians]


__all__ = ["measure_in_rounds", "memory_for_all", "rounds_of", "sequential_reason"]
