"""`anebench run`, `anebench engines`, `anebench info`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ..engines import ENGINE_FACTORIES
from ..errors import UserError
from ..measure.timing import DEFAULT_REPETITIONS, DEFAULT_RUNS, split_runs
from ..measure.warmup import WarmupPolicy
from ..runplan import (
    Mitigations,
    Step,
    check_ane_reachable,
    concurrency_hint,
    is_default_run,
    published_campaign,
)
from ..session import RunOptions, measure_workload, preflight_memory
from ..system.host import describe_host
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
from .results import finish_run, store_options


def run_options(func):
    func = click.option("--warmup", type=click.IntRange(min=0), default=None,
                        help="Fixed warmup count (default: warm up until steady, capped).")(func)
    func = click.option("--time-budget", type=click.FloatRange(min=0, min_open=True), default=None,
                        help="Stop timing after this many seconds of calls (at least one run).")(func)
    func = click.option("--runs", "-n", type=click.IntRange(min=1), default=DEFAULT_RUNS, show_default=True,
                        help="Timed calls per measurement, split over the repetitions.")(func)
    return func


def repetition_options(func):
    """How a measurement repeats: R independent repetitions, optionally each in a fresh process."""
    func = click.option("--fresh-processes", is_flag=True,
                        help="Run each repetition in a new process (re-draws memory placement and process "
                             "state; pyperf's workers).")(func)
    func = click.option("--repetitions", "-r", type=click.IntRange(min=1), default=DEFAULT_REPETITIONS,
                        show_default=True,
                        help="Independent repetitions, each with its own warmup; their spread gives the "
                             "headline (between-run) interval. 1: that interval is unknown.")(func)
    return func


def power_option(func):
    return click.option("--power", is_flag=True,
                        help="Sample energy (NVML, RAPL) around the calls: joules per call, GB/s per watt.")(func)


def options_from(runs: int, time_budget: float | None, warmup: int | None, suite: str = "run",
                 power: bool = False, repetitions: int = 1, fresh_processes: bool = False) -> RunOptions:
    policy = WarmupPolicy(fixed=warmup) if warmup is not None else WarmupPolicy()
    split_runs(runs, repetitions)  # refuse --runs < --repetitions before any work
    if power and fresh_processes:
        raise UserError("--power with --fresh-processes: the energy counter is read in one process; "
                        "drop one of them")
    return RunOptions(runs=runs, time_budget_s=time_budget, warmup=policy, suite=suite, power=power,
                      repetitions=repetitions, fresh_processes=fresh_processes)


def mitigation_options(func):
    """The idle-state mitigations of a Core ML run; each is recorded in method.mitigations."""
    func = click.option("--repeat", type=click.IntRange(1, 64), default=1, show_default=True,
                        help="Core ML: the bundle reads R distinct weight sets per call (longer ANE tasks).")(func)
    func = click.option("--batch", type=click.IntRange(min=1), default=1, show_default=True,
                        help="Core ML: one batch predict of K inputs per call (each reads every weight).")(func)
    func = click.option("--keep-awake", is_flag=True,
                        help="A helper thread keeps one CPU core busy while calls are timed.")(func)
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
def run(engines, device, workloads, out: Path | None, no_save: bool, as_json: bool, runs: int,
        time_budget: float | None, warmup: int | None, repetitions: int = DEFAULT_REPETITIONS,
        fresh_processes: bool = False, power: bool = False, keep_awake: bool = False,
        batch: int = 1, repeat: int = 1) -> None:
    """Measure weight-read bandwidth (default: llama_lm_head on the best engine here; on a Mac, the
    published campaign: ANE heads, then the same head on GPU and CPU)."""
    mitigations = Mitigations(keep_awake, batch, repeat)
    steps, campaign = plan_steps(engines, device, workloads, mitigations)
    check_out_path(out)
    for step in steps:
        preflight_memory(step.engine, step.device, step.workload)
    options = options_from(runs, time_budget, warmup, power=power, repetitions=repetitions,
                           fresh_processes=fresh_processes)
    records = []
    with progress_bar() as progress:
        for step in steps:
            label = f"{step.engine.name}:{step.device} {step.workload.name}"
            task = progress.add_task(f"{label} (loading)", total=options.runs)

            def advance(done: int, total: int, task=task, label=label) -> None:
                progress.update(task, completed=done, description=label)

            with mitigations.awake() as on_prepared:
                records.append(measure_workload(step.engine, step.device, step.workload,
                                                mitigations.options(options, step), advance,
                                                on_prepared=on_prepared))
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
    """Describe this host: OS, CPU, memory, caches, BLAS, power."""
    host = describe_host()
    if as_json:
        click.echo(host.model_dump_json(indent=1))
        return
    table = Table(title="this host", show_header=False)
    for key, value in host.model_dump().items():
        table.add_row(key, str(value))
    out_console().print(table)


def register(app: click.Group) -> None:
    for command in (run, engines, info):
        app.add_command(command)


__all__ = ["err_console", "options_from", "power_option", "register", "repetition_options", "run_options"]
