"""What every measuring command shares: the library errors' flags, the workloads and targets, and the
results table with what each record adds (the settings are cli/settings.py's, saving cli/saving.py's, the
console, verbosity, warnings and progress cli/console.py's; re-exported here)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import NamesSettings, SettingError, UserError, name_settings, setting
from ..measure.uncertainty import GbpsRange
from ..model import RecordWarning, ResultRecord, gbps
from ..orchestration.campaign import Target
from ..orchestration.campaign import resolve_targets as _resolve_targets
from ..orchestration.campaign import resolve_workloads as _resolve_workloads
from ..report.escape import clean_text
from ..system.energy_figures import energy_line
from ..workloads import Workload
from .console import (
    NORMAL,
    QUIET,
    VERBOSE,
    FollowingConsole,
    WarningLog,
    err_console,
    flush_warnings,
    out_console,
    progress_bar,
    say,
    verbosity,
    warn,
    warnings_log,
)
from .exports import export_text
from .options import FORMATS, format_option
from .saving import (
    SAVED_SO_FAR,
    StepSaver,
    hold_signals,
    interrupted_line,
    save_results,
    write_exports,
)
from .settings import MEASURING_FORMATS, Settings, measuring_options, output_format
from .tables import between_run_cell, results_table


@contextmanager
def flags(**mapping: str) -> Iterator[None]:
    """Library errors name settings, not flags: put the flag that set the value in front of the message
    (``flags(out="--out")``: "--out x: is a file; give a directory"), and write a setting the message
    names as this command's flag for it where that is not the default (``boundary.default_flag``)."""
    try:
        yield
    except NamesSettings as exc:
        exc.template = name_settings(exc.template, lambda name: mapping.get(name) or setting(name))
        flag = mapping.get(exc.setting) if isinstance(exc, SettingError) else None
        if flag is None:
            raise
        raise UserError(f"{flag} {exc.template}") from None


def resolve_targets(engine_names: tuple[str, ...], device: str | None) -> list[Target]:
    return _resolve_targets(engine_names, device)


def workload_inputs(workloads: list[Workload]) -> list[Path]:
    """A checkpoint's files (shards, index, config): inputs of the command, never an output."""
    return [Path(path) for workload in workloads for path in getattr(workload.source, "inputs", ()) or ()]


def announce_workloads(workloads: list[Workload]) -> None:
    """The user is told which real weights are measured (e.g. the tensor chosen)."""
    for workload in workloads:
        if workload.source is not None:
            say(clean_text(f"{workload.name}: {workload.note}"))


def resolve_workloads(specs: tuple[str, ...], settings: Settings,
                      default: str = "llama_lm_head") -> tuple[list[Workload], Settings]:
    """The workloads, announced, and the settings with their files as inputs of the command."""
    resolved = _resolve_workloads(specs, default)
    announce_workloads(resolved)
    return resolved, settings.reading(*workload_inputs(resolved))


def uncertainty_line(record: ResultRecord) -> str | None:
    """How the record repeated, its headline interval and its within-run CI (the secondary figure)."""
    s, latency = record.summary, record.latency_s()
    if record.provenance != "measured" or latency is None:
        return None
    reps = record.repetitions
    within = "-"
    if s.ci95_low is not None and s.ci95_high is not None and record.gbps:
        weight = record.workload.weight_bytes
        within = GbpsRange(record.gbps, gbps(weight, s.ci95_high), gbps(weight, s.ci95_low)).text()
    if reps is None:
        how = "repetitions not recorded"
    else:
        sizes = sorted({r.runs for r in reps.runs})
        calls = f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]}-{sizes[-1]}"
        where = "each in a fresh process" if reps.fresh_processes else "in one process"
        how = f"{reps.count} repetition{'s' if reps.count > 1 else ''} x {calls} calls, {where}"
    return (
        f"{how}; between-run GB/s {between_run_cell(record)} (the headline); within-run CI {within} "
        "(this run's samples only)"
    )


def record_label(record: ResultRecord) -> str:
    return clean_text(f"{record.engine.name}:{record.engine.device} {record.workload.name}")


def emit(
    records: list[ResultRecord],
    suite: str,
    settings: Settings,
    out: Path | None = None,
    title: str = "anebench results",
) -> Path | None:
    """Print the table (stderr under a machine format), what each record adds (how it repeated, device
    time, energy), its warnings once each, save the records (to ``out``, default the settings' --out),
    then the document in the format asked."""
    fmt = settings.format
    saved, failure = None, None
    if not settings.no_save:  # saved first: a closed stdout or a full log cannot lose the measurement
        try:
            saved = save_results(records, suite, out or settings.out, settings)
        except UserError as exc:
            failure = exc
    table = results_table(records, title, full_names=settings.verbosity >= VERBOSE)
    if fmt == "table":
        out_console().print(table)
    elif settings.verbosity > QUIET:
        err_console.print(table)
    for record in records:
        label = record_label(record)
        uncertainty = uncertainty_line(record)
        repeated = record.repetitions is not None and record.repetitions.count > 1
        if uncertainty is not None and (suite == "run" or repeated):  # suites' points: the table says enough
            say(f"{label}: {uncertainty}")
        if record.device_gbps:
            say(
                f"{label}: device time gives {record.device_gbps:.2f} GB/s ({clean_text(record.device_time)})"
            )
        if record.engine.dtype_note:
            warn(RecordWarning(kind="note", text=record.engine.dtype_note), label)
        for warning in record.warnings:
            warn(warning, label)
        if record.energy is not None:
            say(f"{label}: energy {clean_text(energy_line(record.energy))}")
    flush_warnings()
    if saved is not None:
        say(f"saved {len(records)} record(s) to {clean_text(str(saved), keep_newlines=False)}")
    write_exports(records, suite, settings)
    if fmt != "table":
        sys.stdout.write(export_text(fmt, records, suite))
        sys.stdout.flush()
    if failure is not None:
        raise failure
    return saved


__all__ = [
    "FORMATS",
    "MEASURING_FORMATS",
    "NORMAL",
    "QUIET",
    "SAVED_SO_FAR",
    "VERBOSE",
    "FollowingConsole",
    "Settings",
    "StepSaver",
    "WarningLog",
    "err_console",
    "flush_warnings",
    "format_option",
    "hold_signals",
    "interrupted_line",
    "measuring_options",
    "out_console",
    "output_format",
    "progress_bar",
    "results_table",
    "say",
    "verbosity",
    "warn",
    "warnings_log",
]
