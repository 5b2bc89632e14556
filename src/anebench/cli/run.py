"""`anebench run`, `anebench engines`, `anebench info`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import click

from ..engines import PUBLISHED_ANE_ENGINE, active_engines
from ..errors import UserError
from ..measure.timing import DEFAULT_REPETITIONS, DEFAULT_RUNS, split_runs
from ..measure.warmup import WarmupPolicy
from ..model import HostInfo
from ..orchestration.campaign import (
    Plan,
    Unrunnable,
    plan_run,
    preflight_steps,
    run_campaign,
    unrunnable_engines,
)
from ..orchestration.interleave import Configuration, check_interleavable, run_interleaved
from ..orchestration.runplan import (
    Mitigations,
    PlannedStep,
    concurrency_hint,
    describe_plan,
    mac_campaign_plan,
)
from ..orchestration.session import RunOptions, check_threads
from ..system import power as power_counters
from ..system.energy_sources import energy_sources
from ..system.host import SYSTEM_HOST, busy_warning
from .common import (
    QUIET,
    StepSaver,
    announce_workloads,
    check_out_path,
    emit,
    err_console,
    flags,
    flush_warnings,
    format_option,
    hold_signals,
    measuring_options,
    out_console,
    output_format,
    progress_bar,
    say,
    verbosity,
    warn,
)
from .console import wraps
from .options import dry_run_option, json_option
from .params import timing_flags
from .results import finish_run, store_options
from .tables import FittingTable, fmt_mb
from .terminal import PointLog


def say_line(line: str | None) -> None:
    if line:
        say(line)

run_options = timing_flags(
    DEFAULT_RUNS,
    None,
    runs_help="Timed calls per measurement, split over the repetitions.",
    budget_help="Stop timing after this many seconds of calls (at least one run).",
)


def repetition_options(func):
    """How a measurement repeats: R independent repetitions, optionally each in a fresh process."""
    func = click.option(
        "--fresh-processes",
        is_flag=True,
        help="Run each repetition in a new process (re-draws memory placement and process "
        "state; pyperf's workers).",
    )(func)
    func = click.option(
        "--repetitions",
        "-r",
        type=click.IntRange(1, 1000),
        default=DEFAULT_REPETITIONS,
        show_default=True,
        help="Independent repetitions, each with its own warmup; their spread gives the "
        "headline (between-run) interval. 1: that interval is unknown.",
    )(func)
    return func


def interleave_options(func):
    """`run --interleave [--interleave-threads 1,2]`: configurations alternated A B A B ... per repetition."""
    func = click.option(
        "--interleave-threads",
        default=None,
        metavar="N,M,...",
        help="With --interleave: each engine and workload once per thread limit (e.g. 1,2).",
    )(func)
    return click.option(
        "--interleave",
        is_flag=True,
        help="Alternate the repetitions of every configuration (engines x workloads x threads) A B A B ..., "
        "so all see the same host phases; `compare` then pairs them repetition by repetition.",
    )(func)


def thread_counts(text: str | None) -> list[int | None]:
    """--interleave-threads "1,2" -> [1, 2]; none given: [None] (each engine's own thread count)."""
    if text is None:
        return [None]
    counts = []
    for part in text.split(","):
        if not part.strip().isdigit() or not 1 <= int(part) <= 4096:
            raise UserError(f"--interleave-threads {text!r}: give thread counts from 1 to 4096 separated by "
                            "commas, e.g. 1,2")
        counts.append(int(part))
    return list(counts)


def power_option(func):
    return click.option(
        "--power/--no-power",
        default=None,
        help="Read energy (NVML, RAPL, IOReport on a Mac) around the timed calls: joules per call, "
        "GB/s per watt [default: off; on for the Mac campaign].",
    )(func)


def options_from(
    runs: int,
    time_budget: float | None,
    warmup: int | None,
    suite: str = "run",
    power: bool | None = False,
    repetitions: int = 1,
    fresh_processes: bool = False,
) -> RunOptions:
    policy = WarmupPolicy(fixed=warmup) if warmup is not None else WarmupPolicy()
    split_runs(runs, repetitions)  # refuse --runs < --repetitions before any work
    if power and fresh_processes:
        raise UserError(
            "--power with --fresh-processes: the energy counter is read in one process; drop one of them"
        )
    ctx = click.get_current_context(silent=True)
    threads = ctx.meta.get("anebench.threads") if ctx is not None else None
    if threads is not None and ctx is not None and ctx.params.get("keep_awake"):
        raise UserError(
            "--threads with --keep-awake: keep-awake already gives a CPU engine one thread fewer than the "
            "cores; drop one of them"
        )
    return RunOptions(
        threads=threads,
        runs=runs,
        time_budget_s=time_budget,
        warmup=policy,
        suite=suite,
        power=bool(power),
        repetitions=repetitions,
        fresh_processes=fresh_processes,
    )


def plan_table(plan: list[PlannedStep], title: str) -> FittingTable:
    rows = [
        [step.engine, step.device, step.workload, "on" if step.power else "off", step.energy_source]
        for step in plan
    ]
    return FittingTable(
        ["engine", "device", "workload", "power", "energy source"], rows, title, wrap={"energy source"}
    )


def show_plan(plan: list[PlannedStep], title: str, as_json: bool) -> None:
    fmt = click.get_current_context().meta.get("anebench.format", "json" if as_json else "table")
    if fmt == "json":
        sys.stdout.write(json.dumps({"plan": [asdict(step) for step in plan]}, indent=1) + "\n")
        return
    out_console().print(plan_table(plan, title))


def show_unrunnable(unrunnable: list[Unrunnable], planned: list[PlannedStep], as_json: bool) -> None:
    """A dry run naming engines this host cannot run: why, and what a host that can would do; the plan of
    the named engines that can run here, if any."""
    fmt = click.get_current_context().meta.get("anebench.format", "json" if as_json else "table")
    if fmt == "json":
        document = {"plan": [asdict(step) for step in planned],
                    "unavailable": [asdict(u) for u in unrunnable]}
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
        return
    console = out_console()
    if planned:
        console.print(plan_table(planned, "anebench run on this host"))
    for item in unrunnable:
        console.print(f"dry run: engine {item.engine} cannot run on this host: {item.reason}", markup=False,
                      highlight=False, soft_wrap=not wraps(console))
        for note in item.notes:
            console.print(f"  {note}", markup=False, highlight=False, soft_wrap=not wraps(console))
    console.print("nothing was built or measured", markup=False, highlight=False)


def mitigation_options(func):
    """The idle-state mitigations of a run (K predicts and R weight sets: engines with call mitigations);
    each is recorded in method.mitigations."""
    func = click.option(
        "--repeat",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help=f"-e {PUBLISHED_ANE_ENGINE}: the bundle reads R distinct weight sets per call (longer ANE "
        "tasks).",
    )(func)
    func = click.option(
        "--batch",
        "deprecated_batch",
        type=click.IntRange(1, 4096),
        default=None,
        hidden=True,
        help="Deprecated name of --predicts-per-call.",
    )(func)
    func = click.option(
        "--predicts-per-call",
        "predicts",
        type=click.IntRange(1, 4096),
        default=1,
        show_default=True,
        help=f"-e {PUBLISHED_ANE_ENGINE}: K predicts per call, each re-reading every weight (longer calls; "
        "not "
        "a batch: for several tokens per weight read build with --tokens).",
    )(func)
    func = click.option(
        "--keep-awake",
        is_flag=True,
        help="A separate process keeps one CPU core busy during warmup and timing; its CPU share is "
        "recorded.",
    )(func)
    return func


def plan_steps(
    engines: tuple[str, ...], device: str | None, workloads: tuple[str, ...], mitigations: Mitigations
) -> Plan:
    """The library's plan, and the CLI's part: say which real weights a checkpoint workload measures."""
    plan = plan_run(engines, device, workloads, mitigations)
    announce_workloads(plan.workloads)
    return plan


@click.command()
@store_options
@measuring_options
@run_options
@repetition_options
@power_option
@mitigation_options
@interleave_options
@dry_run_option("Print the plan (engine, device, workload, power) and measure nothing.")
@click.option(
    "--plan-for",
    type=click.Choice(["mac"]),
    default=None,
    help="With --dry-run: the plan `anebench run` with no options follows on that host (mac: the "
    "campaign with every engine, power on).",
)
@flags(batch="--predicts-per-call")  # a call too short to time: in `run`, K predicts per call lengthen it
def run(
    engines,
    device,
    workloads,
    out: Path | None,
    no_save: bool,
    as_json: bool,
    runs: int,
    time_budget: float | None,
    warmup: int | None,
    repetitions: int = DEFAULT_REPETITIONS,
    fresh_processes: bool = False,
    power: bool | None = None,
    keep_awake: bool = False,
    predicts: int = 1,
    deprecated_batch: int | None = None,
    repeat: int = 1,
    dry_run: bool = False,
    plan_for: str | None = None,
    interleave: bool = False,
    interleave_threads: str | None = None,
) -> None:
    """Measure weight-read bandwidth (default: llama_lm_head on the best engine here; on a Mac, the
    published campaign with energy: ANE heads, then the same head on GPU and CPU)."""
    if plan_for is not None:
        if not dry_run:
            raise UserError(f"--plan-for {plan_for}: only with --dry-run (this host cannot measure another)")
        if engines or device or workloads:
            raise UserError(
                f"--plan-for {plan_for} shows the campaign of `anebench run` with no options; "
                "drop --engine, --device and --workload"
            )
        show_plan(
            mac_campaign_plan(power is not False), "anebench run on a Mac (every engine installed)", as_json
        )
        return
    if deprecated_batch is not None:
        say("--batch is deprecated: it is --predicts-per-call (K predicts, each re-reading every weight)")
        predicts = deprecated_batch if predicts == 1 else predicts
    if interleave_threads is not None and not interleave:
        raise UserError("--interleave-threads: only with --interleave")
    if interleave and keep_awake:
        raise UserError("--interleave with --keep-awake: the spinner is set up per measurement; drop one")
    threads = thread_counts(interleave_threads)
    mitigations = Mitigations(keep_awake, predicts, repeat)
    if dry_run and engines and (unrunnable := unrunnable_engines(engines, workloads)):
        # Explained, not refused (a dry run measures nothing anyway); the engines that can run are planned.
        runnable = tuple(name for name in engines if name not in {u.engine for u in unrunnable})
        steps = plan_steps(runnable, device, workloads, mitigations).steps if runnable else []
        planned = describe_plan([(s.engine.name, s.device, s.workload.name) for s in steps], bool(power),
                                power_counters.current_platform())
        show_unrunnable(unrunnable, planned, as_json)
        return
    plan = plan_steps(engines, device, workloads, mitigations)
    power = plan.campaign if power is None else power  # the Mac campaign reads energy unless --no-power
    if dry_run:
        planned = describe_plan(
            [(s.engine.name, s.device, s.workload.name) for s in plan.steps],
            power,
            power_counters.current_platform(),
        )
        show_plan(planned, "anebench run on this host", as_json)
        return
    check_out_path(out)
    preflight_steps(plan.steps)
    for step in plan.steps:  # every engine of the plan, before the first is measured
        check_threads(step.engine, click.get_current_context().meta.get("anebench.threads"))
    options = options_from(
        runs, time_budget, warmup, power=power, repetitions=repetitions, fresh_processes=fresh_processes
    )
    configurations = [Configuration(s.engine, s.device, s.workload, t) for s in plan.steps for t in threads]
    if interleave:
        check_interleavable(configurations, options)
    busy = busy_warning(options.host.state(), options.host.info().cores_logical)
    if busy:  # said before measuring, so the user can stop and retry on a quiet machine; only once
        warn(busy)
        flush_warnings()
    if interleave:
        with progress_bar() as progress:
            def bar(label: str, total: int) -> Callable[[int, int], None]:
                task = progress.add_task(label, total=total)
                return lambda done, total: progress.update(task, completed=done)

            records = run_interleaved(configurations, options, bar)
        emit(records, "run", out, no_save, as_json)
        finish_run(records, as_json)
        say(f"interleaved: {len(configurations)} configurations in {repetitions} rounds; "
            "`anebench compare FILE` pairs them repetition by repetition")
        return
    log, piped = PointLog(), not err_console.is_terminal and verbosity() > QUIET
    with progress_bar() as progress:  # its exit restores the cursor, however the campaign ends

        def started(label: str, total: int) -> Callable[[int, int], None]:
            if len(plan.steps) > 1:  # "(2/5)": which step, and what the time-left estimate counts
                label = f"{label} ({len(progress.tasks) + 1}/{len(plan.steps)})"
            if piped:  # a log gets one line per finished step, not redraws
                say_line(log.start(label))
            task = progress.add_task(f"{label} (loading)", total=total)
            return lambda done, total: progress.update(task, completed=done, description=label)

        checkpoint = StepSaver("run", out, no_save, len(plan.steps))
        result = run_campaign(plan.steps, options, mitigations, started, finished=checkpoint)
    out = checkpoint.final_out()
    if piped and not result.interrupted:  # after the bars' last frame, so the log reads in order
        say_line(log.finish())
    if result.interrupted:
        hold_signals()  # a second Ctrl-C (or a SIGHUP) cannot cut the save of the finished steps
        saved = emit(result.records, "run", out, no_save, as_json)
        where = f"saved to {saved}" if saved else "not saved (--no-save)"
        say(
            f"interrupted: the {len(result.records)} finished step(s) of {result.planned} are {where}",
            quiet_too=True,
        )
        raise SystemExit(130)
    emit(result.records, "run", out, no_save, as_json)
    finish_run(result.records, as_json)  # --store, and the figure beside the published ones
    hint = concurrency_hint(SYSTEM_HOST.info().chip) if plan.campaign else None
    if hint:
        say(hint)
    if plan.campaign:
        say("the campaign's decode step: `anebench decode --campaign` (qwen3-0.6b on the ANE, GPU and CPU, "
            "power on; docs/decode.md)")


@click.command()
@format_option("table", "json")
@json_option()
def engines(fmt: str | None, as_json: bool) -> None:
    """List engines, their devices, and why any are unavailable."""
    found: list[dict[str, Any]] = []
    for name, factory in active_engines().items():
        engine = factory()
        availability = engine.available()
        found.append(
            {
                "engine": name,
                "available": bool(availability),
                "version": engine.version() if availability else None,
                "devices": engine.devices() if availability else [],
                "thread_control": engine.thread_control,
                "why_not": availability.reason or None,
            }
        )
    if output_format(fmt, as_json) == "json":
        click.echo(json.dumps({"engines": found}, indent=1))
        return
    rows = [
        [
            e["engine"],
            "yes" if e["available"] else "no",
            e["version"] or "-",
            ", ".join(e["devices"]) or "-",
            e["why_not"] or "-",
        ]
        for e in found
    ]
    out_console().print(
        FittingTable(
            ["engine", "available", "version", "devices", "why not"],
            rows,
            "anebench engines",
            wrap={"devices", "why not"},
        )
    )


def _known(value: object, unknown: str = "unknown") -> str:
    if value is None or value == "":
        return unknown
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def blas_line(lib: dict) -> str:
    """'openblas 0.3.27 (SkylakeX kernel, 16 threads, pthreads)' from one threadpoolctl entry."""
    extras = [
        f"{lib['kernel']} kernel" if lib.get("kernel") else "",
        f"{lib['threads']} threads" if lib.get("threads") else "",
        str(lib.get("threading") or ""),
    ]
    details = ", ".join(e for e in extras if e)
    name = " ".join(str(lib[k]) for k in ("library", "version") if lib.get(k)) or "unknown library"
    return f"{name} ({details})" if details else name


def host_rows(host: HostInfo) -> list[tuple[str, str]]:
    """The host as (fact, value) lines a reader can take in: units stated, nothing shown as None."""
    os_line = " ".join(p for p in (host.os, host.os_version) if p) + f" ({host.arch})"
    cores = ", ".join(
        f"{n} {kind}" for n, kind in ((host.cores_physical, "physical"), (host.cores_logical, "logical")) if n
    )
    rows = [
        ("OS", os_line),
        ("CPU", _known(host.cpu_model)),
        ("Apple chip", host.chip or "none (not an Apple silicon host)"),
        ("machine model", _known(host.machine_model, "-")),
        ("cores", cores or "unknown"),
        ("memory", f"{host.memory_bytes / 1e9:.1f} GB" if host.memory_bytes else "unknown"),
        ("last-level cache", f"{fmt_mb(host.llc_bytes)} MB" if host.llc_bytes else "unknown"),
        ("Python", _known(host.python)),
        ("under Rosetta", _known(host.rosetta, "no" if host.os != "macOS" else "unknown")),
    ]
    rows += [("BLAS" if i == 0 else "", blas_line(lib)) for i, lib in enumerate(host.blas)] or [
        ("BLAS", "none found")
    ]
    rows += [
        ("power source", _known(host.power_source)),
        ("low-power mode", _known(host.low_power_mode)),
        ("host fingerprint", _known(host.fingerprint, "-")),
    ]
    return rows


def source_detail(source) -> str:
    """The channels an IOReport source was found by (with their units), and what is missing or why not."""
    parts = [f"found: {'; '.join(source.channels)}"] if source.channels else []
    parts += [source.reason] if source.reason else []
    return "; ".join(parts) or "-"


@click.command()
@format_option("table", "json")
@json_option()
def info(fmt: str | None, as_json: bool) -> None:
    """Describe this host: OS, CPU, memory, caches, BLAS, power, and the energy sources --power can read."""
    host = SYSTEM_HOST.info()
    if output_format(fmt, as_json) == "json":
        click.echo(host.model_dump_json(indent=1))
        return
    console = out_console()
    console.print(
        FittingTable(
            ["fact", "value"],
            [list(row) for row in host_rows(host)],
            "this host",
            "MB = 1e6 bytes, GB = 1e9 bytes",
            wrap={"value"},
        )
    )
    rows = [
        [source.name, source.covers, "yes" if source.available else "no", source_detail(source)]
        for source in energy_sources()
    ]
    console.print(
        FittingTable(
            ["source", "measures", "available", "channels found / why not"],
            rows,
            "energy sources (--power)",
            wrap={"measures", "channels found / why not"},
        )
    )


def register(app: click.Group) -> None:
    for command in (run, engines, info):
        app.add_command(command)


__all__ = ["err_console", "options_from", "power_option", "register", "repetition_options", "run_options"]
