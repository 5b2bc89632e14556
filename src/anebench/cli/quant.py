"""`anebench quant`: fp16, int8, lut6 and lut4 of one head; what their latencies say is streamed."""

from __future__ import annotations

from pathlib import Path

import click

from ..engines import engines_with
from ..errors import AnalysisFailed
from ..measure.quant import INCONCLUSIVE
from ..report.suite_terminal import capability_table
from .common import check_out_path, measuring_options, resolve_workloads
from .plans import bundle_only_target, dry_run_option, measuring_targets, show_plan
from .results import store_options
from .run import power_option
from .suite_output import finish, output_format, show_tables
from .suites import suite_options, timing_options
from .terminal import progress, say


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
    targets = measuring_targets(engines, device, "quant")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "quant", power)
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
    results = []
    with progress() as factory:
        for target, plan in jobs:
            results.append((target, run_quant(target.engine, target.device, plan, options, factory)))
    finish([r for _, res in results for r in res.records], "quant", out, no_save, fmt)
    for target, result in results:
        say(f"{target.engine.name}:{target.device}: {result.inference.inference}")
    if results:
        say(f"rule: {results[0][1].inference.rule}")
    failed = [f"{t.engine.name}:{t.device}: {res.inference.inference}" for t, res in results
              if INCONCLUSIVE in res.inference.inference]
    if failed:  # the records are saved; the rule could not tell what is streamed
        raise AnalysisFailed("no streaming inference: " + "; ".join(failed))


def register(app: click.Group) -> None:
    app.add_command(quant)
