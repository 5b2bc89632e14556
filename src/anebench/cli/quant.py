"""`anebench quant`: fp16, int8, lut6 and lut4 of one head; what their latencies say is streamed."""

from __future__ import annotations

from pathlib import Path

import click
from rich.table import Table

from ..orchestration.suites.coreml_plan import CORE_ML
from .common import check_out_path, emit, measuring_options, progress_bar, resolve_workloads
from .plans import coreml_only_target, dry_run_option, measuring_targets, show_plan
from .run import power_option
from .suites import progress_factory, say, show, suite_options, timing_options


@click.command()
@measuring_options
@timing_options(runs=100, budget=5.0)
@power_option
@dry_run_option
def quant(engines, device, workloads, out: Path | None, no_save, as_json, plot_stem, runs, time_budget, warmup,
          power, dry_run):
    """fp16, int8, lut6 and lut4 of the same head: bytes as stored, latency, GB/s, and what is streamed."""
    from ..orchestration.suites.quant import VARIANTS, as_stored, measurable, plan_quant, run_quant

    bases = resolve_workloads(workloads)
    if dry_run:
        engine, device = coreml_only_target(engines, device, "quant")
        for base in bases:
            show_plan(plan_quant(engine, device, base, list(VARIANTS), runs, time_budget), as_json)
        return
    targets = measuring_targets(engines, device, "quant")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "quant", power)
    capability = Table(title="variants each engine runs as stored")
    for column in ("engine", "device", *VARIANTS):
        capability.add_column(column)
    jobs = []
    for target in targets:
        for base in bases:
            found = as_stored(target.engine, target.device, base)
            capability.add_row(target.engine.name, target.device,
                               *("yes" if found[v] is None else f"no: {found[v]}" for v in VARIANTS))
            variants = measurable(found)
            if variants:
                jobs.append((target, plan_quant(target.engine, target.device, base, variants, runs, time_budget)))
    show(capability, as_json)
    if not jobs:
        say("nothing measured: no engine here runs fp16 and a quantised variant as stored (Core ML does, on a "
            f"Mac: anebench quant -e {CORE_ML})")
        return
    results = []
    with progress_bar() as progress:
        for target, plan in jobs:
            results.append((target, run_quant(target.engine, target.device, plan, options,
                                              progress_factory(progress))))
    emit([r for _, res in results for r in res.records], "quant", out, no_save, as_json, "quant")
    table = Table(title="quantised weights: what is streamed")
    for column in ("engine", "device", "variant", "stored MB", "median ms", "GB/s as stored", "GB/s fp16-equiv",
                   "latency / fp16", "bytes / fp16", "verdict"):
        table.add_column(column)
    for target, result in results:
        for v in result.inference.variants:
            table.add_row(target.engine.name, target.device, v.variant, f"{v.stored_bytes / 1e6:.2f}",
                          f"{v.latency_s * 1e3:.3f}", f"{v.gbps_as_stored:.2f}", f"{v.gbps_fp16_equivalent:.2f}",
                          f"{v.latency_ratio:.3f}", f"{v.bytes_ratio:.3f}", v.verdict or "(reference)")
    show(table, as_json)
    for target, result in results:
        say(f"{target.engine.name}:{target.device}: {result.inference.inference}")
    if results:
        say(f"rule: {results[0][1].inference.rule}")


def register(app: click.Group) -> None:
    app.add_command(quant)
