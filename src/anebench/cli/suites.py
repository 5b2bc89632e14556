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
from typing import TYPE_CHECKING

import click

from ..measure.sweep import MiB
from ..orchestration.entry import Timing
from .common import StepSaver, measuring_options, resolve_targets, resolve_workloads
from .console import result_line, rule, say
from .params import MEBIBYTES, MEBIBYTES_OR_ZERO, power_option
from .plans import bundle_engine, dry_run_option
from .settings import Settings, store_options
from .suite_scaffold import (
    SuiteDisplay,
    fail_unless_analysed,
    finish,
    max_tokens_option,
    show_bundle_plans,
    stem_for,
    timing_options,
    write_plot,
)

if TYPE_CHECKING:  # the suites' modules are imported when a command runs (start-up time)
    from ..engines.base import Engine
    from ..orchestration.suites.bundle_plan import BundlePlan
    from ..orchestration.suites.roofline import FirstLook
    from ..workloads import Workload


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
    settings: Settings,
    engines,
    device,
    workloads,
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
    from ..orchestration import suite_entry
    from ..report.suite_plots import plot_sweep

    if quick:
        runs, time_budget, points = min(runs, 15), min(time_budget or 0.5, 0.5), points or 7
    def to_bytes(mb: float | None) -> int | None:
        return int(mb * MiB) if mb else None
    if dry_run:
        sweep_dry_run(engines, device, workloads, settings, to_bytes(min_mb), to_bytes(max_mb), points,
                      -1 if cache_mb is None else to_bytes(cache_mb), runs, time_budget)
        return
    request = suite_entry.SweepRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power,
        min_bytes=to_bytes(min_mb), max_bytes=to_bytes(max_mb), points=points,
        cache_bytes=-1 if cache_mb is None else to_bytes(cache_mb),
    )
    display = SuiteDisplay(settings)
    checkpoint: list[StepSaver] = []  # made once --out is checked: every finished point, saved as it finishes

    def ready() -> None:
        display.ready()
        checkpoint.append(StepSaver("sweep", display.settings, steps=2))

    events = dc_replace(display.events(), ready=ready, finished=lambda records: checkpoint[0](records))
    outcome = suite_entry.sweep(request, events)
    results = outcome.results
    saved = finish(outcome.records, "sweep", display.settings, checkpoint[0].final_out())
    for *_, result in results:
        if result.analysis is not None:
            rule(f"fit gates: {result.analysis.gates}")
    many_bases = len(workloads) > 1  # one plot per engine:device and base workload
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
        label = f"{target.engine.name}-{target.device}"
        label = f"{i}-{label}" if many_bases else label
        write_plot(
            stem_for(plot_stem, saved, "sweep", label, len(results) > 1),
            functools.partial(plot_sweep, records=result.records),  # the title says what was read
            [r.workload.weight_bytes for r in result.records],
            [r.latency_s() for r in result.records],
            a.as_dict() | {"cache_bytes": result.cache_bytes},
            title,
        )
    # the records are saved; the fit could not be made from them
    fail_unless_analysed("sweep fit failed", outcome.failures)


def sweep_dry_run(engines: tuple[str, ...], device: str | None, workloads: tuple[str, ...],
                  settings: Settings, min_bytes: int | None, max_bytes: int | None, points: int | None,
                  cache_bytes: int | None, runs: int, time_budget: float | None) -> None:
    """The sizes a sweep would measure; an engine that builds bundles lists them."""
    from ..orchestration.suites.sweep import plan_engine_sweep, plan_sweep, plan_sweep_bundles

    bases, settings = resolve_workloads(workloads, settings)
    if bundle_engine(engines) is None:
        for target in resolve_targets(engines, device):
            plan = plan_sweep(target.engine, target.device, min_bytes, max_bytes, points or 12, cache_bytes)
            label = f"sweep {target.engine.name}:{target.device}"
            sizes = ", ".join(f"{s / MiB:.3g}" for s in plan.sizes)
            result_line(f"{label}: {len(plan.sizes)} sizes, {sizes} MiB; {runs} runs each over its "
                        f"repetitions, at most {time_budget} s of calls per size (plus warmups)")
            for note in plan.notes:
                result_line(f"{label}: {note}")
        return

    def bundles(engine: Engine, where: str, base: Workload) -> BundlePlan:
        plan = plan_engine_sweep(engine, where, base, min_bytes, max_bytes, points)
        return plan_sweep_bundles(engine, where, base, plan, runs, time_budget)

    show_bundle_plans(engines, device, "sweep", bases, bundles, settings)


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
    settings: Settings,
    engines,
    device,
    workloads,
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
    from ..orchestration import suite_entry
    from ..orchestration.suites.roofline import FirstLook, alignment_note
    from ..report.suite_plots import plot_roofline

    ctx = click.get_current_context()
    given = {name for name in ("max_batch", "time_budget")
             if ctx.get_parameter_source(name) is not click.core.ParameterSource.DEFAULT}
    cpu = bundle_engine(engines) is None and all(t.device == "cpu" for t in resolve_targets(engines, device))
    first_look = FirstLook() if cpu and not workloads else None
    if first_look is not None:  # the CPU default: under a minute (the full head took 5.5 min, 4 GB)
        workloads = (first_look.workload,)
        max_batch = max_batch if "max_batch" in given else first_look.max_batch
        time_budget = time_budget if "time_budget" in given else first_look.budget_s
    if dry_run:
        roofline_dry_run(engines, device, workloads, settings, first_look, max_batch, max_tokens, runs,
                         time_budget)
        return
    request = suite_entry.RooflineRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power,
        max_batch=max_batch, max_tokens=max_tokens,
        first_look_warmup_s=first_look.warmup_s if first_look is not None else None,
    )
    display = SuiteDisplay(settings)
    outcome = suite_entry.roofline(request, display.events())
    results = outcome.results
    saved = finish(outcome.records, "roofline", display.settings)
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
    fail_unless_analysed("ridge not found", outcome.failures)


def roofline_dry_run(engines: tuple[str, ...], device: str | None, workloads: tuple[str, ...],
                     settings: Settings, first_look: FirstLook | None, max_batch: int, max_tokens: int,
                     runs: int, time_budget: float | None) -> None:
    """What the roofline would measure: an engine that builds bundles lists them; others say the batches."""
    from ..orchestration.suites.roofline import plan_token_roofline

    bases, settings = resolve_workloads(workloads, settings)
    if bundle_engine(engines) is None:
        for target in resolve_targets(engines, device):
            label = f"roofline {target.engine.name}:{target.device}"
            result_line(f"{label}: " + (first_look.describe() if first_look else
                                       f"{', '.join(b.name for b in bases)}, batches 1-{max_batch} doubling "
                                       f"(stopping once clearly compute-bound), at most {time_budget:g} s of "
                                       "calls per batch"))
        return
    show_bundle_plans(engines, device, "roofline", bases, functools.partial(
        plan_token_roofline, max_tokens=max_tokens, runs=runs, budget_s=time_budget), settings)


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
    settings: Settings,
    engines,
    device,
    workloads,
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
    from ..orchestration import suite_entry
    from ..orchestration.suites.compute import plan_token_compute

    if dry_run:
        bases, settings = resolve_workloads(workloads, settings, default="lm_head:4096x4096")
        show_bundle_plans(engines, device, "compute", bases, functools.partial(
            plan_token_compute, max_tokens=max_tokens, runs=runs, budget_s=time_budget), settings)
        return
    request = suite_entry.ComputeRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power, batch=batch,
        dtypes=dtypes, max_tokens=max_tokens,
    )
    display = SuiteDisplay(settings)
    outcome = suite_entry.compute(request, display.events())
    finish(outcome.records, "compute", display.settings)
    # the records are saved; their FLOP/s is not a peak
    fail_unless_analysed("no compute peak", outcome.failures, "raise --batch")


def register(app: click.Group) -> None:
    from .concurrency import concurrent
    from .latency import latency

    for command in (sweep, roofline, latency, compute, concurrent):
        app.add_command(command)
