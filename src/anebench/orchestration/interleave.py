"""`run --interleave`: several configurations measured in rounds, A B, B A, ..., sharing host phases.

On a shared machine the same command can read 30% apart minutes apart, while repetitions a few seconds
apart agree to 0.1%: two configurations measured one after the other differ by the host's phase as much
as by themselves. Interleaved, repetition i of every configuration runs in round i, next to the others'
repetition i (in turn: A B, then B A, so neither always goes first); `compare` then takes the ratio per
round (a paired comparison) and the host's phases cancel out. Every configuration is prepared and
output-checked once before the first round, each repetition warms up afresh, and each configuration
keeps its own thread limit around its own calls.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from contextlib import ExitStack, nullcontext
from dataclasses import dataclass

from ..engines.base import Engine, Prepared
from ..errors import UserError, setting
from ..measure.timing import ProgressCallback, Timing, combine, split_runs, time_calls
from ..model import Interleave, Repetitions, ResultRecord
from ..workloads import Workload
from .record_builder import build_record
from .session import RunOptions, prepared_workload, verify_output


@dataclass(frozen=True)
class Configuration:
    engine: Engine
    device: str
    workload: Workload
    threads: int | None = None  # the engine's thread limit around this configuration's calls

    def label(self) -> str:
        threads = f" ({self.threads} thread{'s' if self.threads != 1 else ''})" if self.threads else ""
        return f"{self.engine.name}:{self.device} {self.workload.name}{threads}"


def check_interleavable(configurations: list[Configuration], options: RunOptions) -> None:
    """Refuse, before any work, what an interleaved run cannot do (one line each)."""
    if len(configurations) < 2:
        interleave, engine = setting("interleave"), setting("engine")
        raise UserError(f"{interleave} needs at least two configurations: give several {engine}, "
                        f"{setting('workload')} or {setting('interleave_threads')} values (the same {engine} "
                        "twice compares it with itself)")
    interleave = setting("interleave")
    if options.repetitions < 2:
        raise UserError(f"{interleave} with {setting('repetitions')} {options.repetitions}: the rounds are "
                        "the repetitions; give at least 2 (3 by default)")
    if options.fresh_processes:
        raise UserError(f"{interleave} with {setting('fresh_processes')}: the configurations alternate in "
                        "one process; drop one of them")
    if options.power:
        raise UserError(f"{interleave} with {setting('power')}: one energy window cannot be split between "
                        "alternating configurations; drop one of them")


def _limit(configuration: Configuration):
    if configuration.threads is None:
        return nullcontext(False)
    return configuration.engine.thread_limit(configuration.threads)


StartedCallback = Callable[[str, int], ProgressCallback | None]


def run_interleaved(configurations: list[Configuration], options: RunOptions,
                    started: StartedCallback | None = None) -> list[ResultRecord]:
    """Every configuration's record, measured in ``options.repetitions`` rounds of one repetition each."""
    check_interleavable(configurations, options)
    sizes = split_runs(options.runs, options.repetitions)
    share = options.time_budget_s / options.repetitions if options.time_budget_s else None
    group = secrets.token_hex(8)
    with ExitStack() as stack:
        prepared: list[Prepared] = []
        checks = []
        for c in configurations:
            ready = stack.enter_context(prepared_workload(c.engine, c.device, c.workload, options.host))
            with _limit(c):
                checks.append(verify_output(ready))
            prepared.append(ready)
        states = [options.host.state() for _ in configurations]
        bars = [started(c.label(), options.runs) if started is not None else None for c in configurations]
        parts: list[list[Timing]] = [[] for _ in configurations]
        for round_index, size in enumerate(sizes):
            # A B, then B A, ...: a drift within a round (the host warming up, a background job starting)
            # favours neither configuration over the rounds
            indices = list(range(len(configurations)))
            for j in indices if round_index % 2 == 0 else indices[::-1]:
                c = configurations[j]
                with _limit(c):
                    parts[j].append(time_calls(prepared[j], size, options.warmup, options.clock, share))
                bar = bars[j]
                if bar is not None:
                    bar(sum(sizes[:round_index + 1]), options.runs)
        records = []
        for j, c in enumerate(configurations):
            place = Interleave(group=group, position=j, configurations=len(configurations), label=c.label(),
                               threads=c.threads)
            timing = combine(parts[j])
            repetitions = Repetitions(fresh_processes=timing.fresh_processes, runs=timing.repetition_list(),
                                      interleave=place)
            records.append(build_record(c.engine, c.device, c.workload, prepared[j], options, timing,
                                        checks[j], {"repetitions": repetitions}, states[j]))
    return records


__all__ = ["Configuration", "check_interleavable", "run_interleaved"]
