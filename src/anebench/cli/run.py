"""`anebench run`, `anebench engines`, `anebench info`."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import click
from rich.table import Table

from ..engines import ENGINE_FACTORIES
from ..errors import UserError
from ..measure.timing import DEFAULT_REPETITIONS, DEFAULT_RUNS, split_runs
from ..measure.warmup import WarmupPolicy
from ..orchestration.runplan import (
    Mitigations,
    PlannedStep,
    Step,
    check_ane_reachable,
    concurrency_hint,
    describe_plan,
    is_default_run,
    mac_campaign_plan,
    published_campaign,
)
from ..orchestration.session import RunOptions, measure_workload, preflight_memory
from ..system.host import busy_warning, describe_host
from ..system.power import energy_sources
from ..system.preflight import check_native_host
from .common import (
    check_out_path,
    emit,
    err_console,
    measuring_options,
    out_console,
    progress_bar,
    resolve_targets,
    resolve_workloads,
)
from .params import RUNS, TIME_BUDGET, WARMUP
from .results import finish_run, store_options


def run_options(func):
    func = click.option("--warmup", type=WARMUP, default=None,
                        help="Fixed warmup count (default: warm up until steady, capped).")(func)
    func = click.option("--time-budget", type=TIME_BUDGET, default=None,
                        help="Stop timing after this many seconds of calls (at least one run).")(func)
    func = click.option("--runs", "-n", type=RUNS, default=DEFAULT_RUNS, show_default=True,
                        help="Timed calls per measurement, split over the repetitions.")(func)
    return func


def repetition_options(func):
    """How a measurement repeats: R independent repetitions, optionally each in a fresh process."""
    func = click.option("--fresh-processes", is_flag=True,
                        help="Run each repetition in a new process (re-draws memory placement and process "
                             "state; pyperf's workers).")(func)
    func = click.option("--repetitions", "-r", type=click.IntRange(1, 1000), default=DEFAULT_REPETITIONS,
                        show_default=True,
                        help="Independent repetitions, each with its own warmup; their spread gives the "
                             "headline (between-run) interval. 1: that interval is unknown.")(func)
    return func


def power_option(func):
    return click.option("--power/--no-power", default=None,
                        help="Read energy (NVML, RAPL, IOReport on a Mac) around the timed calls: joules per call, "
                             "GB/s per watt [default: off; on for the Mac campaign].")(func)


def options_from(runs: int, time_budget: float | None, warmup: int | None, suite: str = "run",
                 power: bool | None = False, repetitions: int = 1, fresh_processes: bool = False) -> RunOptions:
    policy = WarmupPolicy(fixed=warmup) if warmup is not None else WarmupPolicy()
    split_runs(runs, repetitions)  # refuse --runs < --repetitions before any work
    if power and fresh_processes:
        raise UserError("--power with --fresh-processes: the energy counter is read in one process; "
                        "drop one of them")
    return RunOptions(runs=runs, time_budget_s=time_budget, warmup=policy, suite=suite, power=bool(power),
                      repetitions=repetitions, fresh_processes=fresh_processes)


def plan_table(plan: list[PlannedStep], title: str) -> Table:
    table = Table(title=title)
    for column in ("engine", "device", "workload", "power", "energy source"):
        table.add_column(column)
    for step in plan:
        table.add_row(step.engine, step.device, step.workload, "on" if step.power else "off", step.energy_source)
    return table


def show_plan(plan: list[PlannedStep], title: str, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(json.dumps({"plan": [asdict(step) for step in plan]}, indent=1) + "\n")
        return
    out_console().print(plan_table(plan, title))


def mitigation_options(func):
    """The idle-state mitigations of a Core ML run; each is recorded in method.mitigations."""
    func = click.option("--repeat", type=click.IntRange(1, 64), default=1, show_default=True,
                        help="Core ML: the bundle reads R distinct weight sets per call (longer ANE tasks).")(func)
    func = click.option("--batch", "deprecated_batch", type=click.IntRange(1, 4096), default=None, hidden=True,
                        help="Deprecated name of --predicts-per-call.")(func)
    func = click.option("--predicts-per-call", "predicts", type=click.IntRange(1, 4096), default=1,
                        show_default=True,
                        help="Core ML: K predicts per call, each re-reading every weight (longer calls; not "
                             "a batch: for several tokens per weight read build with --tokens).")(func)
    func = click.option("--keep-awake", is_flag=True,
                        help="A separate process keeps one CPU core busy during warmup and timing; its CPU share is "
                             "recorded.")(func)
    return func


def plan_steps(engines, device, workloads, mitigations: Mitigations) -> tuple[list[Step], bool]:
    """(steps, is_campaign): the published campaign on a Mac with no options, else engines x workloads."""
    check_native_host()  # Rosetta: stop before any work, whatever the engine
    check_ane_reachable(engines, device)
    campaign = published_campaign() if is_default_run(engines, device, workloads) else None
    if campaign is None:
        targets, specs = resolve_targets(engines, device), resolve_workloads(workloads)
        steps = [Step(t.engine, t.device, w) for t in targets for w in specs]
    else:
        steps = campaign
    mitigations.check(steps, bool(engines))
    return [mitigations.apply(step) for step in steps], campaign is not None


@click.command()
@store_options
@measuring_options
@run_options
@repetition_options
@power_option
@mitigation_options
@click.option("--dry-run", is_flag=True, help="Print the plan (engine, device, workload, power) and measure nothing.")
@click.option("--plan-for", type=click.Choice(["mac"]), default=None,
              help="With --dry-run: the plan `anebench run` with no options follows on that host (mac: the "
                   "campaign with every engine, power on).")
def run(engines, device, workloads, out: Path | None, no_save: bool, as_json: bool, runs: int,
        time_budget: float | None, warmup: int | None, repetitions: int = DEFAULT_REPETITIONS,
        fresh_processes: bool = False, power: bool | None = None, keep_awake: bool = False,
        predicts: int = 1, deprecated_batch: int | None = None, repeat: int = 1, dry_run: bool = False,
        plan_for: str | None = None) -> None:
    """Measure weight-read bandwidth (default: llama_lm_head on the best engine here; on a Mac, the
    published campaign with energy: ANE heads, then the same head on GPU and CPU)."""
    if plan_for is not None:
        if not dry_run:
            raise UserError(f"--plan-for {plan_for}: only with --dry-run (this host cannot measure another)")
        if engines or device or workloads:
            raise UserError(f"--plan-for {plan_for} shows the campaign of `anebench run` with no options; "
                            "drop --engine, --device and --workload")
        show_plan(mac_campaign_plan(power is not False), "anebench run on a Mac (every engine installed)", as_json)
        return
    if deprecated_batch is not None:
        err_console.print("--batch is deprecated: it is --predicts-per-call (K predicts, each re-reading every "
                          "weight)", highlight=False, soft_wrap=True)
        predicts = deprecated_batch if predicts == 1 else predicts
    mitigations = Mitigations(keep_awake, predicts, repeat)
    steps, campaign = plan_steps(engines, device, workloads, mitigations)
    power = campaign if power is None else power  # the Mac campaign reads energy unless --no-power
    if dry_run:
        plan = describe_plan([(s.engine.name, s.device, s.workload.name) for s in steps], power, sys.platform)
        show_plan(plan, "anebench run on this host", as_json)
        return
    check_out_path(out)
    for step in steps:
        preflight_memory(step.engine, step.device, step.workload)
    options = options_from(runs, time_budget, warmup, power=power, repetitions=repetitions,
                           fresh_processes=fresh_processes)
    busy = busy_warning(options.host.state(), options.host.info().cores_logical)
    if busy:  # said before measuring, so the user can stop and retry on a quiet machine
        err_console.print(f"warning: {busy}", highlight=False, soft_wrap=True)
    records = []
    interrupted = False
    with progress_bar() as progress:  # its exit restores the cursor, however the loop ends
        try:
            for step in steps:
                label = f"{step.engine.name}:{step.device} {step.workload.name}"
                task = progress.add_task(f"{label} (loading)", total=options.runs)

                def advance(done: int, total: int, task=task, label=label) -> None:
                    progress.update(task, completed=done, description=label)

                with mitigations.awake() as awake:
                    record = measure_workload(step.engine, step.device, step.workload,
                                              mitigations.options(options, step), advance,
                                              on_prepared=awake.on_prepared, phase=awake.phase)
                    records.append(awake.annotate(record))
        except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (cli.main turns it into the same)
            if not records:
                raise
            interrupted = True
    if interrupted:
        saved = emit(records, "run", out, no_save, as_json)
        where = f"saved to {saved}" if saved else "not saved (--no-save)"
        err_console.print(f"interrupted: the {len(records)} finished step(s) of {len(steps)} are {where}",
                          markup=False, highlight=False, soft_wrap=True)
        raise SystemExit(130)
    emit(records, "run", out, no_save, as_json)
    finish_run(records, as_json)  # --store, and the figure beside the published ones
    hint = concurrency_hint(describe_host().chip) if campaign else None
    if hint:
        err_console.print(hint, highlight=False, soft_wrap=True)


@click.command()
def engines() -> None:
    """List engines, their devices, and why any are unavailable."""
    table = Table(title="anebench engines")
    for column in ("engine", "available", "version", "devices", "why not"):
        table.add_column(column)
    for name, factory in ENGINE_FACTORIES.items():
        engine = factory()
        availability = engine.available()
        table.add_row(
            name,
            "yes" if availability else "no",
            engine.version() if availability else "-",
            ", ".join(engine.devices()) if availability else "-",
            availability.reason or "-",
        )
    out_console().print(table)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the host description as JSON.")
def info(as_json: bool) -> None:
    """Describe this host: OS, CPU, memory, caches, BLAS, power, and the energy sources --power can read."""
    host = describe_host()
    if as_json:
        click.echo(host.model_dump_json(indent=1))
        return
    table = Table(title="this host", show_header=False)
    for key, value in host.model_dump().items():
        table.add_row(key, str(value))
    out_console().print(table)
    sources = Table(title="energy sources (--power)")
    for column in ("source", "measures", "available", "why not"):
        sources.add_column(column)
    for source in energy_sources():
        sources.add_row(source.name, source.covers, "yes" if source.available else "no", source.reason or "-")
    out_console().print(sources)


def register(app: click.Group) -> None:
    for command in (run, engines, info):
        app.add_command(command)


__all__ = ["err_console", "options_from", "power_option", "register", "repetition_options", "run_options"]
