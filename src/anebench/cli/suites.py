"""`anebench sweep | roofline | compute` (and the registration of `latency` and `concurrent`, in their own
modules): the suites beyond one number; cli/suite_scaffold.py holds what every suite command shares.

Each command takes the same --engine/--device/--workload/--out/--no-save as `anebench run`, plus
--format table|json|csv|md (--json: --format json), saves records in the same schema (the suite's analysis
in each record's typed section), prints the suite's own tables (built by anebench.report.suite_terminal from
the records, so the store renders the same ones), and writes its plots beside the results file (or at
--plot STEM). Warnings are printed once per kind, with how many records carry them.
"""

from __future__ import annotations

import functools
from dataclasses import replace as dc_replace

import click

from ..measure.sweep import MiB
from .common import (
    StepSaver,
    measuring_options,
    resolve_targets,
    resolve_workloads,
)
from .console import progress, result_line, rule, say
from .params import MEBIBYTES, MEBIBYTES_OR_ZERO
from .plans import bundle_engine, bundle_only_target, dry_run_option, show_plan
from .results import store_options
from .run import power_option
from .suite_output import finish, output_format, stem_for, write_plot
from .suite_scaffold import (
    fail_unless_analysed,
    max_tokens_option,
    suite_setup,
    timing_options,
)


@click.command()
@measuring_options
@timing_options(runs=50, budget=2.0)
@power_option
@store_options
@click.option(
    "--min-mb",
    type=MEBIBYTES,
    default=None,
    help="Smallest weight size, in MiB (2^20 bytes; tables show MB = 1e6 bytes). Default 1.",
)
@click.option(
    "--max-mb",
    type=MEBIBYTES,
    default=None,
    help="Largest weight size, in MiB (2^20 bytes). Default 32x the device's cache (the fit's sizes span "
    "8x past the knee), 1024 when unknown; at most a quarter of the free memory.",
)
@click.option("--points", type=click.IntRange(2, 1000), default=None, help="Sizes to measure (default 12).")
@click.option(
    "--cache-mb",
    type=MEBIBYTES_OR_ZERO,
    default=None,
    help="The device's last-level cache, in MiB (2^20 bytes), for the knee (default: detected; 0: "
    "unknown, the knee is found from the data).",
)
@click.option("--quick", is_flag=True, help="7 sizes, 15 runs and 0.5 s each: a first look.")
@dry_run_option
def sweep(
    engines,
    device,
    workloads,
    out,
    no_save,
    as_json,
    fmt,
    plot_stem,
    runs,
    time_budget,
    warmup,
    power,
    min_mb,
    max_mb,
    points,
    cache_mb,
    quick,
    dry_run,
):
    """Latency and GB/s over weight sizes; fit latency = overhead + bytes / bandwidth past the cache knee.
    Engines that build bundles: heads from 4 MiB to the full head (--max-mb), one bundle per size, built or
    reused."""
    from ..orchestration.suites.sweep import (
        plan_engine_sweep,
        plan_sweep,
        plan_sweep_bundles,
        run_sweep,
        sweep_workloads,
    )
    from ..report.suite_plots import plot_sweep

    fmt = output_format(as_json, fmt, out, no_save)
    bases = resolve_workloads(workloads)
    if quick:
        runs, time_budget, points = min(runs, 15), min(time_budget or 0.5, 0.5), points or 7
    def to_bytes(mb: float | None) -> int | None:
        return int(mb * MiB) if mb else None
    if dry_run and bundle_engine(engines) is None:
        for target in resolve_targets(engines, device):
            plan = plan_sweep(target.engine, target.device, to_bytes(min_mb), to_bytes(max_mb), points or 12,
                              -1 if cache_mb is None else to_bytes(cache_mb))
            label = f"sweep {target.engine.name}:{target.device}"
            sizes = ", ".join(f"{s / MiB:.3g}" for s in plan.sizes)
            result_line(f"{label}: {len(plan.sizes)} sizes, {sizes} MiB; {runs} runs each over its "
                        f"repetitions, at most {time_budget} s of calls per size (plus warmups)")
            for note in plan.notes:
                result_line(f"{label}: {note}")
        return
    if dry_run:
        engine, device = bundle_only_target(engines, device, "sweep")
        for base in bases:
            plan = plan_engine_sweep(engine, device, base, to_bytes(min_mb), to_bytes(max_mb), points)
            show_plan(plan_sweep_bundles(engine, device, base, plan, runs, time_budget), fmt == "json")
        return
    targets, options = suite_setup(engines, device, "sweep", out, runs, time_budget, warmup, power)
    plans = [
        (
            target,
            base,
            plan_engine_sweep(
                target.engine,
                target.device,
                base,
                to_bytes(min_mb),
                to_bytes(max_mb),
                points,
                -1 if cache_mb is None else to_bytes(cache_mb),
            ),
        )
        for target in targets
        for base in bases
    ]
    for target, base, plan in plans:  # every refusal before anything is measured
        sweep_workloads(target.engine, target.device, base, plan)
    results = []
    checkpoint = StepSaver("sweep", out, no_save, steps=2)  # every finished point, saved as it finishes
    finished: list = []
    with progress() as factory:
        for target, base, plan in plans:
            before = list(finished)
            result = run_sweep(target.engine, target.device, base, plan, options, factory,
                               finished=lambda points, before=before: checkpoint(before + points))
            results.append((target, base, result))
            finished += result.records
    saved = finish([r for *_, res in results for r in res.records], "sweep", checkpoint.final_out(), no_save,
                   fmt)
    for *_, result in results:
        if result.analysis is not None:
            rule(f"fit gates: {result.analysis.gates}")
    for i, (target, base, result) in enumerate(results):
        a = result.analysis
        if target.engine.sweep_context:
            rule(f"{target.engine.name}:{target.device}: {target.engine.sweep_context}")
        if a is None:
            continue
        say(
            f"{target.engine.name}:{target.device}: knee: {a.knee.rule}"
            + (f"; fit: {a.fit.method}" if a.fit else f"; fit failed: {result.error}")
        )
        for note in a.notes:
            say(f"{target.engine.name}:{target.device}: {note}")
        title = f"sweep {target.engine.name}:{target.device} (hidden {base.hidden}, {base.dtype})"
        label = f"{target.engine.name}-{target.device}"  # one plot per engine:device and base workload
        label = label if len(bases) == 1 else f"{i}-{label}"
        write_plot(
            stem_for(plot_stem, saved, "sweep", label, len(results) > 1),
            functools.partial(plot_sweep, records=result.records),  # the title says what was read
            [r.workload.weight_bytes for r in result.records],
            [r.latency_s() for r in result.records],
            a.as_dict() | {"cache_bytes": result.cache_bytes},
            title,
        )
    # the records are saved; the fit could not be made from them
    fail_unless_analysed("sweep fit failed", [f"{t.engine.name}:{t.device}: {res.error}"
                                              for t, _, res in results if res.error])


@click.command()
@measuring_options
@timing_options(runs=30, budget=5.0)
@power_option
@store_options
@click.option(
    "--max-batch",
    type=click.IntRange(2, 1 << 20),
    default=1024,
    show_default=True,
    help="Largest batch; the sweep stops earlier once clearly compute-bound.",
)
@max_tokens_option
@dry_run_option
def roofline(
    engines,
    device,
    workloads,
    out,
    no_save,
    as_json,
    fmt,
    plot_stem,
    runs,
    time_budget,
    warmup,
    power,
    max_batch,
    max_tokens,
    dry_run,
):
    """Batch sweep of the same weights: the ridge, achieved FLOP/s and bytes/FLOP, as a roofline.
    Engines that build token-batched bundles: tokens per call (1, 2, 4, ... --max-tokens)."""
    from ..measure.roofline import RIDGE_GATES, RIDGE_RULE
    from ..orchestration.suites.roofline import (
        FirstLook,
        alignment_note,
        plan_token_roofline,
        run_roofline_suite,
    )
    from ..report.suite_plots import plot_roofline

    fmt = output_format(as_json, fmt, out, no_save)
    ctx = click.get_current_context()
    given = {name for name in ("max_batch", "time_budget")
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
    cpu = bundle_engine(engines) is None and all(t.device == "cpu" for t in resolve_targets(engines, device))
    first_look = FirstLook() if cpu and not workloads else None
    if first_look is not None:  # the CPU default: under a minute (the full head took 5.5 min, 4 GB)
        workloads = (first_look.workload,)
        max_batch = max_batch if "max_batch" in given else first_look.max_batch
        time_budget = time_budget if "time_budget" in given else first_look.budget_s
    bases = resolve_workloads(workloads)
    if dry_run and bundle_engine(engines) is None:
        for target in resolve_targets(engines, device):
            label = f"roofline {target.engine.name}:{target.device}"
            result_line(f"{label}: " + (first_look.describe() if first_look else
                                       f"{', '.join(b.name for b in bases)}, batches 1-{max_batch} doubling "
                                       f"(stopping once clearly compute-bound), at most {time_budget:g} s of "
                                       "calls per batch"))
        return
    if dry_run:
        engine, device = bundle_only_target(engines, device, "roofline")
        for base in bases:
            show_plan(plan_token_roofline(engine, device, base, max_tokens, runs, time_budget), fmt == "json")
        return
    targets, options = suite_setup(engines, device, "roofline", out, runs, time_budget, warmup, power)
    if first_look is not None and warmup is None:
        options = dc_replace(options, warmup=dc_replace(options.warmup, max_seconds=first_look.warmup_s))
    results = []
    with progress() as factory:
        for target in targets:
            for base in bases:
                result = run_roofline_suite(target.engine, target.device, base, max_batch, max_tokens,
                                            options, factory)
                results.append((target, base, result))
    saved = finish([r for *_, res in results for r in res.records], "roofline", out, no_save, fmt)
    rule(f"rule: {RIDGE_RULE}; {RIDGE_GATES}")
    for i, (target, base, result) in enumerate(results):
        a = result.analysis
        note = alignment_note(target.engine, [(p.batch, p.latency_s) for p in a.points])
        if note:
            say(f"{target.engine.name}:{target.device} {base.name}: {note}")
        model = (
            f"; the baseline meets the compute slope at batch {a.model_ridge_batch:.1f}"
            if a.model_ridge_batch
            else ""
        )
        ridge = f"ridge at batch {a.ridge_batch}" if a.ridge_batch else f"ridge not found: {a.ridge_error}"
        say(
            f"{target.engine.name}:{target.device} {base.name}: {ridge}"
            f"{model}; peak {a.peak_flop_per_s / 1e12:.4g} TFLOP/s; batch-1 {a.memory_gbps:.3g} GB/s"
            + ("" if a.compute_bound else "; not clearly compute-bound: raise --max-batch")
        )
        title = f"roofline {target.engine.name}:{target.device} {base.name}"
        write_plot(
            stem_for(
                plot_stem, saved, "roofline", f"{i}-{target.engine.name}-{target.device}", len(results) > 1
            ),
            functools.partial(plot_roofline, records=result.records),
            a.as_dict(),
            title,
        )
    # the records and plots are saved; no ridge could be placed from them
    fail_unless_analysed("ridge not found", [
        f"{t.engine.name}:{t.device} {b.name}: {res.analysis.ridge_error}"
        for t, b, res in results if res.analysis.ridge_error])


@click.command()
@measuring_options
@timing_options(runs=20, budget=3.0, plot=False)
@power_option
@store_options
@click.option(
    "--batch",
    "-b",
    type=click.IntRange(2, 1 << 20),
    default=512,
    show_default=True,
    help="Input vectors per call (a matmul batch): large enough to be compute-bound.",
)
@click.option(
    "--dtype",
    "dtypes",
    multiple=True,
    type=click.Choice(["fp32", "fp16", "bf16"]),
    help="Weight dtype (repeatable; default: the workload's).",
)
@max_tokens_option
@dry_run_option
def compute(
    engines,
    device,
    workloads,
    out,
    no_save,
    as_json,
    fmt,
    runs,
    time_budget,
    warmup,
    power,
    batch,
    dtypes,
    max_tokens,
    dry_run,
):
    """Peak matrix throughput (TFLOP/s) per engine, device and dtype (default workload lm_head:4096x4096).
    Engines that build token-batched bundles: at the most tokens per call that fit (up to --max-tokens),
    against half of it."""
    from ..orchestration.suites.compute import plan_token_compute, run_compute_suite

    fmt = output_format(as_json, fmt, out, no_save)
    bases = resolve_workloads(workloads, default="lm_head:4096x4096")
    if dry_run:
        engine, device = bundle_only_target(engines, device, "compute")
        for base in bases:
            show_plan(plan_token_compute(engine, device, base, max_tokens, runs, time_budget), fmt == "json")
        return
    targets, options = suite_setup(engines, device, "compute", out, runs, time_budget, warmup, power)
    records = []
    with progress() as factory:
        for target in targets:
            for base in bases:
                records += run_compute_suite(target.engine, target.device, base, batch, dtypes, max_tokens,
                                             options, factory)
    finish(records, "compute", out, no_save, fmt)
    # the records are saved; their FLOP/s is not a peak
    fail_unless_analysed("no compute peak", [
        f"{r.engine.name}:{r.engine.device} {r.workload.name}: not compute-bound ({r.compute.rule}, "
        f"grew {r.compute.growth_from_half:.2f}x)"
        for r in records if r.compute and not r.compute.compute_bound], "raise --batch")


def register(app: click.Group) -> None:
    from .concurrency import concurrent
    from .latency import latency

    for command in (sweep, roofline, latency, compute, concurrent):
        app.add_command(command)
