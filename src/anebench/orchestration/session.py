"""One measurement end to end: preflight, prepare, check the output, time, summarise, record.

The CLI and every suite go through ``measure`` (or ``measure_workload``, which builds the record at once)
so that all records are made the same way. A record is built once (orchestration/record_builder.py), with
every section it carries: a suite whose sections depend on several measurements (a sweep's fit, a
roofline's ridge) keeps each ``Measurement`` until its analysis is done, reads the figures the analysis
needs from its ``draft``, and then builds each record with its sections. Nothing patches a record after
it is built. How it runs is ``RunOptions`` (orchestration/run_options.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

import numpy as np

from ..engines.base import Engine, Prepared
from ..errors import MeasurementError, UserError, setting
from ..measure.check import check_output
from ..measure.gpu import GpuRun
from ..measure.timing import PhaseCallback, ProgressCallback, Timing, time_repetitions
from ..model import Energy, HostState, OutputCheck, RecordWarning, ResultRecord, utc_now
from ..model import median as median_of
from ..system.host import SYSTEM_HOST, Host
from ..workloads import Workload
from .preflight import preflight_memory
from .record_builder import PreparedFacts, build_record, record_bound
from .run_options import RunOptions

WINDOW = "the timed calls (warmup excluded)"


def check_tokens(engine: Engine, workload: Workload) -> None:
    if workload.tokens > 1 and not engine.token_batched:
        raise UserError(
            f"workload {workload.name!r} takes {workload.tokens} tokens per call, a "
            f"token-batched bundle; {engine.name} multiplies several vectors per call (a matmul batch) "
            "instead"
        )


@contextmanager
def prepared_workload(engine: Engine, device: str, workload: Workload,
                      host: Host = SYSTEM_HOST) -> Iterator[Prepared]:
    check_tokens(engine, workload)
    preflight_memory(engine, device, workload, host)
    try:
        prepared = engine.prepare(workload, device)
    except MemoryError:  # free memory is not all this process may use (a container limit, ulimit -v)
        raise UserError(
            f"workload {workload.name!r}: {engine.bytes_for(workload, device) / 1e9:.2f} GB for its weights "
            f"on {engine.name}:{device} could not be allocated, though the machine has that much free; "
            "this process may use less (a container limit or ulimit -v): choose a smaller workload or "
            "raise the limit"
        ) from None
    try:
        yield prepared
    finally:
        prepared.close()


def nonfinite_weights(prepared: Prepared) -> str | None:
    """Where the checked rows hold NaN or infinite weights (then no engine can pass the check)."""
    from ..measure.check import check_rows

    for start, stop in check_rows(prepared.workload.vocab):
        rows = np.asarray(prepared.workload.weights.read_rows(start, stop))
        if not np.all(np.isfinite(rows)):
            return f"rows {start}-{stop - 1}"
    return None


def verify_output(prepared: Prepared):
    prepared.call()
    check = check_output(prepared)
    if not check.passed and (where := nonfinite_weights(prepared)) is not None:
        raise UserError(
            f"workload {prepared.workload.name!r}: the weights hold NaN or infinite values ({where}); the "
            "checkpoint is broken, not the engine: its output cannot be checked or timed meaningfully"
        )
    if not check.passed:
        raise MeasurementError(
            f"output check failed on {prepared.workload.name}: relative error {check.relative_error:.3g} "
            f"> {check.tolerance:g}; the engine did not compute W @ x"
        )
    return check


# Called once the timed calls are done: the sections and warnings a hook measured, for the record.
FinishHook = Callable[[], tuple[dict[str, Any], list[RecordWarning]]]


@dataclass(frozen=True)
class MeasureHooks:
    """What a caller hooks into one measurement, passed down as one value: ``on_prepared`` hears the
    prepared workload (keep-awake starts its spinner there, decode keeps the loaded stream), ``phase`` the
    timing loop's marks, and ``finish`` (``measure_workload``) gives the sections and warnings it measured
    once the timing is done, for the record."""

    on_prepared: Callable[[Prepared], None] | None = None
    phase: PhaseCallback | None = None
    finish: FinishHook | None = None


NO_HOOKS = MeasureHooks()


@dataclass
class Measurement:
    """One finished measurement whose record is not built yet.

    ``sections`` and ``warnings`` are what the measurement itself found (energy, GPU report, keep-awake
    share); ``record`` builds the one record with those and the caller's sections (a sweep point's fit, a
    roofline's ridge, a concurrency verdict). ``draft`` is the record without the caller's sections: what
    a suite's analysis reads (the latency, the between-run interval) before the sections exist.
    """

    engine: Engine
    device: str
    workload: Workload
    facts: PreparedFacts
    options: RunOptions
    timing: Timing
    check: OutputCheck
    state: HostState | None
    sections: dict[str, Any] = field(default_factory=dict)
    warnings: list[RecordWarning] = field(default_factory=list)
    created: datetime = field(default_factory=utc_now)  # when it was measured, not when its record is built

    def record(self, sections: Mapping[str, Any] | None = None,
               warnings: Sequence[str | RecordWarning] = ()) -> ResultRecord:
        return build_record(self.engine, self.device, self.workload, self.facts, self.options, self.timing,
                            self.check, {**self.sections, **(sections or {})}, self.state,
                            [*self.warnings, *warnings], self.created)

    @cached_property
    def draft(self) -> ResultRecord:
        return self.record()

    def latency_s(self) -> float:
        """The median latency of the timed calls (what every suite's analysis reads)."""
        return median_of(self.timing.samples_s)


def measure_workload(
    engine: Engine,
    device: str,
    workload: Workload,
    options: RunOptions | None = None,
    progress: ProgressCallback | None = None,
    hooks: MeasureHooks = NO_HOOKS,
) -> ResultRecord:
    """``measure``, with the record built at once: ``hooks.finish`` (e.g. keep-awake's) gives the sections
    and warnings it measured once the timing is done, and the record is built with them."""
    measurement = measure(engine, device, workload, options, progress, hooks)
    sections, warnings = hooks.finish() if hooks.finish is not None else ({}, [])
    return measurement.record(sections, warnings)


def measure(
    engine: Engine,
    device: str,
    workload: Workload,
    options: RunOptions | None = None,
    progress: ProgressCallback | None = None,
    hooks: MeasureHooks = NO_HOOKS,
) -> Measurement:
    options = options or RunOptions()
    check_threads(engine, options.threads)
    if options.fresh_processes:  # the caller chooses: fresh processes sit above this module, not below it
        raise ValueError("fresh-process repetitions: call fresh_processes.measure_in_fresh_processes")
    with thread_limit(engine, options.threads), \
            prepared_workload(engine, device, workload, options.host) as prepared:
        if hooks.on_prepared is not None:
            hooks.on_prepared(prepared)
        check = verify_output(prepared)
        state = options.host.state()
        gpu = GpuRun(device, prepared) if device.startswith("cuda") else None
        window = (gpu.energy_window() if gpu else energy_window(device)) if options.power else None
        warmup = gpu.warmup_policy(options.warmup) if gpu else options.warmup
        try:
            timing = time_repetitions(prepared, options.runs, options.repetitions, warmup, options.clock,
                                      options.time_budget_s, progress, timed_window(window, hooks.phase))
            if gpu:
                gpu.after_timing()
            if gpu and window is not None:
                more = gpu.fill_energy_window(prepared, window)
            else:  # IOReport: at least a second and enough counter steps
                more = window.fill(prepared.call) if window is not None else 0
        except BaseException:
            if window is not None:  # finish() releases the counters otherwise
                window.release()
            raise
        energy = finish_energy(window, prepared, timing, more) if window is not None else None
        sections: dict = {"energy": energy} if energy is not None else {}
        if gpu:
            sections["gpu"] = gpu.report(
                prepared, timing, record_bound(engine, device, prepared, options.host)
            )
        facts = PreparedFacts.of(prepared)
        return Measurement(engine, device, workload, facts, options, timing, check, state, sections)


def check_threads(engine: Engine, threads: int | None) -> None:
    """Refuse, before any work, --threads for an engine that has no setting for its threads."""
    if threads is not None and engine.thread_control is None:
        raise UserError(
            f"{setting('threads')} {threads}: {engine.name} has no setting for its CPU threads (numpy: BLAS "
            f"threads via threadpoolctl; torch: torch.set_num_threads); drop {setting('threads')} for this "
            "engine"
        )


@contextmanager
def thread_limit(engine: Engine, threads: int | None) -> Iterator[None]:
    """The engine's calls limited to ``threads`` CPU threads while entered (nothing when None)."""
    if threads is None:
        yield
        return
    check_threads(engine, threads)
    with engine.thread_limit(threads):
        yield


def timed_window(window, phase: PhaseCallback | None) -> PhaseCallback | None:
    """The timing loop's phase hook: the energy window opens at the first timed call and closes after the
    last; ``phase`` (e.g. the keep-awake helper) hears the same marks."""
    if window is None:
        return phase

    def on_phase(name: str) -> None:
        if name == "timed":
            window.open()
        elif name == "timed-end":
            window.close()
        if phase is not None:
            phase(name)

    return on_phase


def energy_window(device: str):
    from ..system.power import EnergyWindow, energy_meter, work_component

    window = EnergyWindow(energy_meter(device), work_component(device))
    window.observe_step()  # before the window opens: IOReport's counter step (others: nothing)
    return window


def finish_energy(window, prepared: Prepared, timing, more_calls: int = 0) -> Energy:
    """The window holds every timed call, the warmups of repetitions after the first, and ``more_calls``."""
    between = sum(r.warmup_runs for r in (timing.repetitions or [])[1:])
    what = WINDOW + (f", with the {between} warmup calls of the later repetitions" if between else "") + (
        f", then {more_calls} calls to fill the window" if more_calls else "")
    return window.finish(len(timing.samples_s) + between + more_calls, prepared.weight_bytes,
                         median_of(timing.samples_s), what)
