"""`anebench quant`: fp16, int8, lut6 and lut4 of one head; what their latencies say is streamed."""

from __future__ import annotations

import click

from ..engines import engines_with
from ..orchestration.entry import Timing
from ..report.suite_terminal import capability_table
from .common import measuring_options, resolve_workloads
from .console import rule, say
from .params import power_option
from .plans import dry_run_option
from .settings import Settings, store_options
from .suite_output import show_tables
from .suite_scaffold import SuiteDisplay, fail_unless_analysed, finish, show_bundle_plans, timing_options


@click.command()
@measuring_options
@timing_options(runs=100, budget=5.0)
@power_option
@store_options
@dry_run_option
def quant(
    settings: Settings,
    engines,
    device,
    workloads,
    plot_stem,
    runs,
    time_budget,
    warmup,
    power,
    dry_run,
):
    """fp16, int8, lut6 and lut4 of the same head: bytes as stored, latency, GB/s, and what is streamed."""
    from ..orchestration import suite_entry
    from ..orchestration.suites.quant import VARIANTS, plan_quant

    if dry_run:
        bases, settings = resolve_workloads(workloads, settings)
        show_bundle_plans(engines, device, "quant", bases,
                          lambda e, d, b: plan_quant(e, d, b, list(VARIANTS), runs, time_budget), settings)
        return
    request = suite_entry.QuantRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power
    )

    def stored(found: list[tuple[str, dict[str, str | None]]]) -> None:
        """Which variants each engine stores, before anything is measured."""
        show_tables([capability_table(found, list(VARIANTS))], settings.format)

    display = SuiteDisplay(settings)
    outcome = suite_entry.quant(request, display.events(), stored)
    if not outcome.results:
        able = engines_with(lambda e: e.plans_bundles and len(e.quantized_storage) > 0)
        say(
            "nothing measured: no engine here runs fp16 and a quantised variant as stored "
            f"({' or '.join(e.title for e in able)} does, on a Mac: anebench quant -e {able[0].name})"
        )
        return
    finish(outcome.records, "quant", display.settings)
    for target, _, result in outcome.results:
        say(f"{target.engine.name}:{target.device}: {result.inference.inference}")
    for *_, result in outcome.results:
        rule(f"rule: {result.inference.rule}")
    # the records are saved; the rule could not tell what is streamed
    fail_unless_analysed("no streaming inference", outcome.failures)


def register(app: click.Group) -> None:
    app.add_command(quant)
