"""`anebench concurrent`: N copies of a workload solo, then together from a common start; combined GB/s,
scaling and the verdict by its stated rule."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

import click

from ..errors import UserError
from ..model import ResultRecord
from ..orchestration.entry import Timing
from .common import measuring_options
from .console import console, rule, say, wraps
from .options import dry_run_option as described_dry_run_option
from .params import power_option
from .settings import Settings, store_options
from .suite_scaffold import SuiteDisplay, fail_unless_analysed, finish, stem_for, timing_options, write_plot

if TYPE_CHECKING:
    from ..orchestration.campaign import Target
    from ..orchestration.concurrency_plan import ConcurrencyPlan
    from ..workloads import Workload


@click.command()
@measuring_options
@timing_options(runs=50, budget=10.0, threads=False)  # its --threads runs copies as threads
@power_option
@store_options
@click.option(
    "--copies",
    type=click.IntRange(2, 256),
    default=None,
    help="Copies to run at once (default 2, or one per device with --devices).",
)
@click.option(
    "--processes",
    "mode",
    flag_value="processes",
    default=None,
    help="Run the copies as spawned processes (the default where threads cannot overlap).",
)
@click.option(
    "--threads",
    "mode",
    flag_value="threads",
    help="Run the copies as threads of one process (only for engines whose call releases the GIL).",
)
@click.option(
    "--threads-per-copy",
    type=click.IntRange(min=1),
    default=None,
    help="CPU threads each copy's calls use (default for CPU copies: cores / copies, at least 1).",
)
@click.option(
    "--devices",
    default=None,
    help="Place copy i on device i, each in its own process: cuda:0,cuda:1,... or all.",
)
@described_dry_run_option("Show the plan (placement, mode, threads, memory) and stop.")
def concurrent(
    settings: Settings,
    engines,
    device,
    workloads,
    plot_stem,
    runs,
    time_budget,
    warmup,
    power,
    copies,
    mode,
    threads_per_copy,
    devices,
    dry_run,
):
    """N copies solo, then together from a common start: combined GB/s, scaling and the verdict."""
    from ..measure.concurrency import COMBINED_DEFINITION, TOGETHER_DEFINITION
    from ..orchestration import suite_entry
    from ..orchestration.concurrency_plan import describe_plan
    from ..report.suite_plots import plot_concurrency

    if devices is not None and device is not None:
        raise UserError("--device and --devices: give one (--devices places one copy on each device)")
    request = suite_entry.ConcurrentRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power, copies=copies,
        mode=mode, devices=devices, threads_per_copy=threads_per_copy, dry_run=dry_run,
    )

    def starting(target: Target, base: Workload, plan: ConcurrencyPlan) -> None:
        """One progress display per plan: this line says which plan it measures."""
        say(
            f"concurrent {target.engine.name} {base.name}: {plan.copies} copies on {', '.join(plan.devices)} "
            f"({plan.mode}: {plan.why}), each solo then together"
        )

    display = SuiteDisplay(settings)
    outcome = suite_entry.concurrent(request, display.events(), starting)
    if dry_run:
        out_console = console()
        for plan in outcome.plans:
            for line in describe_plan(plan):
                out_console.print(line, markup=False, soft_wrap=not wraps(out_console))
        return
    results = outcome.results
    saved = finish(outcome.records, "concurrency", display.settings, file_label="concurrent")
    for *_, result in results:
        rule(f"verdict rule: {result.analysis.verdict.rule}")
    if results:
        rule(COMBINED_DEFINITION)
        rule(TOGETHER_DEFINITION)
    for note in dict.fromkeys(copies_note(r) for *_, res in results for r in res.records):
        if note:  # the note each record stores: the seed rule, or a checkpoint's copies
            rule(f"copies: {note}")
    for i, (target, base, result) in enumerate(results):
        title = f"concurrent {target.engine.name} {base.name} x{result.plan.copies} ({result.plan.mode})"
        write_plot(
            stem_for(
                plot_stem, saved, "concurrent", f"{i}-{target.engine.name}-{target.device}", len(results) > 1
            ),
            functools.partial(plot_concurrency, records=result.records),
            result.analysis.as_dict(),
            title,
        )
    # the records and plots are saved; the rule could not decide
    fail_unless_analysed("no concurrency verdict", outcome.failures)


def copies_note(record: ResultRecord) -> str | None:
    """What a concurrency record says its copies hold (seeded weights, or a checkpoint's own)."""
    return record.concurrency.copies_note if record.concurrency is not None else None


