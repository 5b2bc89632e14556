"""`anebench run`, `anebench engines`, `anebench info`."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ..engines import ENGINE_FACTORIES
from ..measure.warmup import WarmupPolicy
from ..session import RunOptions, measure_workload
from ..system.host import describe_host
from .common import (
    check_out_path,
    emit,
    err_console,
    measuring_options,
    out_console,
    preflight,
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
    func = click.option("--runs", "-n", type=click.IntRange(min=1), default=300, show_default=True,
                        help="Timed calls per measurement.")(func)
    return func


def power_option(func):
    return click.option("--power", is_flag=True,
                        help="Sample energy (NVML, RAPL) around the calls: joules per call, GB/s per watt.")(func)


def options_from(runs: int, time_budget: float | None, warmup: int | None, suite: str = "run",
                 power: bool = False) -> RunOptions:
    policy = WarmupPolicy(fixed=warmup) if warmup is not None else WarmupPolicy()
    return RunOptions(runs=runs, time_budget_s=time_budget, warmup=policy, suite=suite, power=power)


@click.command()
@store_options
@measuring_options
@run_options
@power_option
def run(engines, device, workloads, out: Path | None, no_save: bool, as_json: bool, runs: int,
        time_budget: float | None, warmup: int | None, power: bool = False) -> None:
    """Measure weight-read bandwidth (default: llama_lm_head on the best engine here)."""
    targets = resolve_targets(engines, device)
    specs = resolve_workloads(workloads)
    check_out_path(out)
    preflight(targets, specs)
    options = options_from(runs, time_budget, warmup, power=power)
    records = []
    with progress_bar() as progress:
        for target in targets:
            for workload in specs:
                label = f"{target.engine.name}:{target.device} {workload.name}"
                task = progress.add_task(f"{label} (loading)", total=options.runs)

                def advance(done: int, total: int, task=task, label=label) -> None:
                    progress.update(task, completed=done, description=label)

                records.append(measure_workload(target.engine, target.device, workload, options, advance))
    emit(records, "run", out, no_save, as_json)
    finish_run(records, as_json)  # --store, and the figure beside the published ones


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


__all__ = ["err_console", "options_from", "power_option", "register", "run_options"]
