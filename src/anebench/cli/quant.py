"""`anebench quant`: fp16, int8, lut6 and lut4 of one head; what their latencies say is streamed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ..engines import engines_with
from ..measure.quant import INCONCLUSIVE
from ..report.suite_terminal import capability_table
from .common import measuring_options, resolve_workloads
from .console import rule, say
from .plans import bundle_only_target, dry_run_option, show_plan
from .results import store_options
from .run import power_option
from .suite_output import output_format, show_tables
from .suite_scaffold import fail_unless_analysed, finish_suite, measure_each, suite_setup, timing_options

if TYPE_CHECKING:
    from ..orchestration.campaign import Target
    from ..orchestration.suites.bundle_plan import BundlePlan
    from ..orchestration.suites.common import ProgressFactory
    from ..orchestration.suites.quant import QuantResult


@click.command()
@measuring_options
@timing_options(runs=100, budget=5.0)
@power_option
@store_options
@dry_run_option
def quant(
    engines,
    device,
    workloads,
    out: Path | None,
    no_save,
    as_json,
    fmt,
    plot_stem,
    runs,
    time_budget,
    warmup,
    power,
    dry_run,
):
    """fp16, int8, lut6 and lut4 of the same head: bytes as stored, latency, GB/s, and what is streamed."""
    from ..orchestration.suites.quant import VARIANTS, as_stored, measurable, plan_quant, run_quant

    fmt = output_format(as_json, fmt, out, no_save)
    bases = resolve_workloads(workloads)
    if dry_run:
        engine, device = bundle_only_target(engines, device, "quant")
        for base in bases:
            show_plan(plan_quant(engine, device, base, list(VARIANTS), runs, time_budget), fmt == "json")
        return
    targets, options = suite_setup(engines, device, "quant", out, runs, time_budget, warmup, power)
    found, jobs = [], []
    for target in targets:
        for base in bases:
            stored = as_stored(target.engine, target.device, base)
            found.append((f"{target.engine.name}:{target.device}", stored))
            variants = measurable(stored)
            if variants:
                jobs.append(
                    (target, plan_quant(target.engine, target.device, base, variants, runs, time_budget))
                )
    show_tables([capability_table(found, list(VARIANTS))], "json" if fmt == "json" else fmt)
    if not jobs:
        able = engines_with(lambda e: e.plans_bundles and len(e.quantized_storage) > 0)
        say(
            "nothing measured: no engine here runs fp16 and a quantised variant as stored "
            f"({' or '.join(e.title for e in able)} does, on a Mac: anebench quant -e {able[0].name})"
        )
        return

    def job(target: Target, plan: BundlePlan) -> Callable[[ProgressFactory], tuple[Target, QuantResult]]:
        return lambda factory: (target, run_quant(target.engine, target.device, plan, options, factory))

    results = measure_each([job(target, plan) for target, plan in jobs])
    finish_suite(results, lambda r: r[1].records, "quant", out, no_save, fmt)
    for target, result in results:
        say(f"{target.engine.name}:{target.device}: {result.inference.inference}")
    for _, result in results:
        rule(f"rule: {result.inference.rule}")
    # the records are saved; the rule could not tell what is streamed
    inconclusive = [(t, res) for t, res in results if INCONCLUSIVE in res.inference.inference]
    fail_unless_analysed(
        "no streaming inference",
        [f"{t.engine.name}:{t.device}: {res.inference.inference}" for t, res in inconclusive],
    )


def register(app: click.Group) -> None:
    app.add_command(quant)
