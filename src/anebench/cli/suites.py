"""`anebench sweep | roofline | latency | compute | concurrent`: the suites beyond one number.

Each command takes the same --engine/--device/--workload/--out/--no-save/--json as `anebench run`,
saves records in the same schema (the suite's analysis in each record's typed section), prints a table, and
writes its plots beside the results file (or at --plot STEM).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from ..errors import MeasurementError, UserError
from ..measure.sweep import MiB
from ..orchestration.session import RunOptions
from ..orchestration.suites.common import ProgressFactory, with_dtype
from ..results.files import load_records
from ..workloads import resolve_workload
from .common import (
    PIPED_WIDTH,
    add_input,
    check_out_path,
    emit,
    err_console,
    measuring_options,
    out_console,
    progress_bar,
    resolve_targets,
    resolve_workloads,
)
from .params import MEBIBYTES, MEBIBYTES_OR_ZERO, RUNS, TIME_BUDGET, WARMUP
from .plans import coreml_only_target, dry_run_option, measuring_targets, show_plan
from .run import options_from, power_option


def max_tokens_option(func):
    from ..artifacts.coreml import MAX_TOKENS
    from ..orchestration.suites.tokens import DEFAULT_MAX_TOKENS

    return click.option("--max-tokens", type=click.IntRange(2, MAX_TOKENS), default=DEFAULT_MAX_TOKENS,
                        show_default=True,
                        help="Core ML: most tokens per predict (token-batched bundles; fewer when memory is "
                             "short).")(func)


def timing_options(runs: int, budget: float | None):
    """--runs/--time-budget/--warmup as in `run`, with defaults that suit the suite."""
    def decorate(func):
        func = click.option("--warmup", type=WARMUP, default=None,
                            help="Fixed warmup count (default: warm up until steady, capped).")(func)
        func = click.option("--time-budget", type=TIME_BUDGET, default=budget,
                            show_default=True, help="Stop each measurement after this many seconds of calls.")(func)
        func = click.option("--runs", "-n", type=RUNS, default=runs, show_default=True,
                            help="Timed calls per measurement.")(func)
        return click.option("--plot", "plot_stem", type=click.Path(dir_okay=False, path_type=Path), default=None,
                            help="Write the plots to STEM.png and STEM.svg (default: beside the results).")(func)
    return decorate


def show(table: Table, as_json: bool) -> None:
    """The suite's own table: stdout, or stderr under --json (as wide as stdout's when not a terminal)."""
    console = out_console()
    if as_json:
        console = Console(stderr=True, emoji=False, width=None if err_console.is_terminal else PIPED_WIDTH)
    console.print(table)


def say(line: str) -> None:
    err_console.print(escape(line), highlight=False, soft_wrap=True)


def stem_for(plot: Path | None, saved: Path | None, suffix: str, label: str, many: bool) -> Path | None:
    tail = f".{suffix}" + (f".{label}" if many else "")
    if plot is not None:
        return plot.parent / f"{plot.name}{tail if many else ''}"
    return saved.parent / f"{saved.stem}{tail}" if saved else None


def write_plot(stem: Path | None, draw, *args) -> None:
    """draw(*args, stem) -> the paths written; or say why there is no plot."""
    if stem is None:
        say("no plot written: --no-save without --plot")
        return
    say("plots: " + ", ".join(str(p) for p in draw(*args, stem)))


def progress_factory(progress) -> ProgressFactory:
    def factory(label: str, total: int):
        task = progress.add_task(escape(label), total=total)
        return lambda done, total_, task=task: progress.update(task, completed=done)
    return factory


def suite_options(runs, time_budget, warmup, suite, power) -> RunOptions:
    return options_from(runs, time_budget, warmup, suite=suite, power=power)


@click.command()
@measuring_options
@timing_options(runs=50, budget=2.0)
@power_option
@click.option("--min-mb", type=MEBIBYTES, default=None,
              help="Smallest weight size in MiB (default 1).")
@click.option("--max-mb", type=MEBIBYTES, default=None,
              help="Largest weight size in MiB (default 8x the device's cache, 1024 when unknown).")
@click.option("--points", type=click.IntRange(2, 1000), default=None, help="Sizes to measure (default 12).")
@click.option("--cache-mb", type=MEBIBYTES_OR_ZERO, default=None,
              help="The device's last-level cache in MiB for the knee (default: detected; 0: unknown, "
                   "the knee is found from the data).")
@click.option("--quick", is_flag=True, help="7 sizes, 15 runs and 0.5 s each: a first look.")
@dry_run_option
def sweep(engines, device, workloads, out, no_save, as_json, plot_stem, runs, time_budget, warmup, power,
          min_mb, max_mb, points, cache_mb, quick, dry_run):
    """Latency and GB/s over weight sizes; fit latency = overhead + bytes / bandwidth past the cache knee.
    Core ML: heads from 4 MiB to the full head (--max-mb), one bundle per size, built or reused."""
    from ..orchestration.suites.coreml_sweep import (
        ORION_CONTEXT,
        plan_coreml_sweep,
        plan_coreml_sweep_bundles,
    )
    from ..orchestration.suites.sweep import plan_sweep, run_sweep, sweep_workloads
    from ..report.suite_plots import plot_sweep

    bases = resolve_workloads(workloads)
    if quick:
        runs, time_budget, points = min(runs, 15), min(time_budget or 0.5, 0.5), points or 7
    to_bytes = (lambda mb: int(mb * MiB) if mb else None)
    if dry_run:
        engine, device = coreml_only_target(engines, device, "sweep")
        for base in bases:
            plan = plan_coreml_sweep(engine, device, base, to_bytes(min_mb), to_bytes(max_mb), points)
            show_plan(plan_coreml_sweep_bundles(engine, device, base, plan, runs, time_budget), as_json)
        return
    targets = measuring_targets(engines, device, "sweep")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "sweep", power)
    plans = [(target, base, plan_coreml_sweep(target.engine, target.device, base, to_bytes(min_mb),
                                              to_bytes(max_mb), points)
              if target.engine.name == "coreml" else
              plan_sweep(target.engine, target.device, to_bytes(min_mb), to_bytes(max_mb),
                         points or 12, -1 if cache_mb is None else to_bytes(cache_mb)))
             for target in targets for base in bases]
    for target, base, plan in plans:  # every refusal before anything is measured
        sweep_workloads(target.engine, target.device, base, plan)
    results = []
    with progress_bar() as progress:
        for target, base, plan in plans:
            result = run_sweep(target.engine, target.device, base, plan, options, progress_factory(progress))
            results.append((target, base, result))
    saved = emit([r for *_, res in results for r in res.records], "sweep", out, no_save, as_json, "sweep")
    table = Table(title="sweep fit: latency = overhead + bytes / bandwidth")
    for column in ("engine", "device", "workload hidden", "knee MiB", "fit points", "overhead us",
                   "bandwidth GB/s", "R²", "median |resid|", "cache-resident peak GB/s (at MiB)"):
        table.add_column(column)
    for target, base, result in results:
        a, fit = result.analysis, result.analysis.fit
        peak = f"{a.cache_peak_gbps:.2f} ({a.cache_peak_bytes / MiB:.1f})"
        if fit is None:  # no bandwidth, no overhead: the reason instead
            table.add_row(target.engine.name, target.device, f"{base.hidden} ({base.dtype})",
                          f"{a.knee.size_bytes / MiB:.1f}", "-", "-", f"fit failed: {result.error}", "-", "-", peak)
            continue
        table.add_row(target.engine.name, target.device, f"{base.hidden} ({base.dtype})",
                      f"{a.knee.size_bytes / MiB:.1f}", str(fit.points),
                      overhead_text(fit.overhead_s * 1e6, fit.overhead_se_s and fit.overhead_se_s * 1e6),
                      f"{fit.bandwidth_bps / 1e9:.2f}", f"{fit.r_squared:.4f}",
                      f"{fit.median_abs_rel_residual:.2%}", peak)
    show(table, as_json)
    if results:
        say(f"fit gates: {results[0][2].analysis.gates}")
    for i, (target, base, result) in enumerate(results):
        a = result.analysis
        if target.engine.name == "coreml":
            say(f"{target.engine.name}:{target.device}: {ORION_CONTEXT}")
        if a is None:
            continue
        say(f"{target.engine.name}:{target.device}: knee: {a.knee.rule}"
            + (f"; fit: {a.fit.method}" if a.fit else f"; fit failed: {result.error}"))
        for note in a.notes:
            say(f"{target.engine.name}:{target.device}: {note}")
        title = f"sweep {target.engine.name}:{target.device} (hidden {base.hidden}, {base.dtype})"
        label = f"{target.engine.name}-{target.device}"  # one plot per engine:device and base workload
        label = label if len(bases) == 1 else f"{i}-{label}"
        write_plot(stem_for(plot_stem, saved, "sweep", label, len(results) > 1),
                   plot_sweep, [r.workload.weight_bytes for r in result.records],
                   [r.latency_s() for r in result.records], a.as_dict() | {"cache_bytes": result.cache_bytes}, title)
    failed = [f"{t.engine.name}:{t.device}: {res.error}" for t, _, res in results if res.error]
    if failed:  # the records are saved; the fit could not be made from them
        raise MeasurementError("sweep fit failed: " + "; ".join(failed))


@click.command()
@measuring_options
@timing_options(runs=30, budget=5.0)
@power_option
@click.option("--max-batch", type=click.IntRange(2, 1 << 20), default=1024, show_default=True,
              help="Largest batch; the sweep stops earlier once clearly compute-bound.")
@max_tokens_option
@dry_run_option
def roofline(engines, device, workloads, out, no_save, as_json, plot_stem, runs, time_budget, warmup, power,
             max_batch, max_tokens, dry_run):
    """Batch sweep of the same weights: the ridge, achieved FLOP/s and bytes/FLOP, as a roofline.
    Core ML: tokens per predict of token-batched bundles (1, 2, 4, ... --max-tokens)."""
    from ..measure.roofline import RIDGE_GATES, RIDGE_RULE
    from ..orchestration.suites.roofline import run_roofline
    from ..orchestration.suites.tokens import alignment_note, plan_token_roofline, run_token_roofline
    from ..report.suite_plots import plot_roofline

    bases = resolve_workloads(workloads)
    if dry_run:
        engine, device = coreml_only_target(engines, device, "roofline")
        for base in bases:
            show_plan(plan_token_roofline(engine, device, base, max_tokens, runs, time_budget), as_json)
        return
    targets = measuring_targets(engines, device, "roofline")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "roofline", power)
    results = []
    with progress_bar() as progress:
        for target in targets:
            for base in bases:
                if target.engine.name == "coreml":
                    plan = plan_token_roofline(target.engine, target.device, base, max_tokens, runs, time_budget)
                    result = run_token_roofline(target.engine, target.device, plan, options,
                                                progress_factory(progress))
                else:
                    result = run_roofline(target.engine, target.device, base, max_batch, options,
                                          progress_factory(progress))
                results.append((target, base, result))
    saved = emit([r for *_, res in results for r in res.records], "roofline", out, no_save, as_json, "roofline")
    table = Table(title="roofline")
    for column in ("engine", "device", "workload", "batch (Core ML: tokens)", "median ms", "GFLOP/s", "bytes/FLOP",
                   "weight GB/s"):
        table.add_column(column)
    for target, base, result in results:
        for p in result.analysis.points:
            table.add_row(target.engine.name, target.device, base.name, str(p.batch), f"{p.latency_s * 1e3:.3f}",
                          f"{p.flop_per_s / 1e9:.2f}", f"{p.bytes_per_flop:.3f}", f"{p.gbps:.2f}")
    show(table, as_json)
    say(f"rule: {RIDGE_RULE}; {RIDGE_GATES}")
    for i, (target, base, result) in enumerate(results):
        a = result.analysis
        note = alignment_note([(p.batch, p.latency_s) for p in a.points]) if target.engine.name == "coreml" else None
        if note:
            say(f"{target.engine.name}:{target.device} {base.name}: {note}")
        model = (f"; the baseline meets the compute slope at batch {a.model_ridge_batch:.1f}"
                 if a.model_ridge_batch else "")
        ridge = f"ridge at batch {a.ridge_batch}" if a.ridge_batch else f"ridge failed: {a.ridge_error}"
        say(f"{target.engine.name}:{target.device} {base.name}: {ridge}"
            f"{model}; peak {a.peak_flop_per_s / 1e12:.4f} TFLOP/s; batch-1 {a.memory_gbps:.2f} GB/s"
            + ("" if a.compute_bound else "; not clearly compute-bound: raise --max-batch"))
        title = f"roofline {target.engine.name}:{target.device} {base.name}"
        write_plot(stem_for(plot_stem, saved, "roofline", f"{i}-{target.engine.name}-{target.device}",
                            len(results) > 1), plot_roofline, a.as_dict(), title)


@click.command()
@measuring_options
@timing_options(runs=1000, budget=2.0)
@power_option
@click.option("--sweep", "sweep_file", type=click.Path(dir_okay=False, exists=True, path_type=Path),
              default=None, help="Show the fitted overhead of this saved sweep (default: run a quick sweep).")
@click.option("--no-sweep", is_flag=True, help="Do not run a quick sweep for the fitted overhead.")
def latency(engines, device, workloads, out, no_save, as_json, plot_stem, runs, time_budget, warmup, power,
            sweep_file, no_sweep):
    """Dispatch cost: the smallest workload the engine accepts, median and p95, beside the sweep's overhead."""
    from ..orchestration.suites.roofline import run_latency
    from ..orchestration.suites.sweep import plan_sweep, run_sweep, sweep_from_records

    targets = resolve_targets(engines, device)
    specs = resolve_workloads(workloads) if workloads else [None]  # None: the smallest the engine accepts
    options = suite_options(runs, time_budget, warmup, "latency", power)
    if sweep_file:
        add_input(sweep_file)
    check_out_path(out)
    saved_sweep = load_saved_sweep(sweep_file) if sweep_file else []
    records, fits = [], []
    with progress_bar() as progress:
        factory = progress_factory(progress)
        for target in targets:
            fit = sweep_from_records(saved_sweep, target.engine.name, target.device) if sweep_file else None
            if fit is None and not no_sweep and not sweep_file:
                plan = plan_sweep(target.engine, target.device, None, None, 7)
                quick = RunOptions(runs=15, time_budget_s=0.5, warmup=options.warmup, suite="latency-sweep")
                swept = run_sweep(target.engine, target.device, resolve_workload("llama_lm_head"), plan, quick,
                                  factory)
                if swept.analysis.fit is None:  # the dispatch cost still stands; only the column is empty
                    say(f"{target.engine.name}:{target.device}: no sweep-fitted overhead ({swept.error})")
                else:
                    fit = sweep_from_records(swept.records, target.engine.name, target.device)
            for spec in specs:
                record = run_latency(target.engine, target.device, spec, options, factory)
                if fit is not None and record.latency is not None:
                    latency = record.latency.model_copy(update={
                        "sweep_overhead_us": fit.overhead_s * 1e6,
                        "sweep_overhead_se_us": fit.overhead_se_s * 1e6 if fit.overhead_se_s is not None else None,
                        "sweep_overhead_resolved": fit.overhead_resolved,
                        "sweep_bandwidth_gbps": fit.bandwidth_gbps})
                    record = record.model_copy(update={"latency": latency}).with_id()
                records.append(record)
                fits.append(fit)
    emit(records, "latency", out, no_save, as_json, "latency")
    table = Table(title="dispatch cost")
    for column in ("engine", "device", "workload", "KB", "median us", "p95 us", "sweep-fitted overhead us"):
        table.add_column(column)
    for record, fit in zip(records, fits):
        lat = record.latency
        assert lat is not None  # run_latency always fills it
        table.add_row(record.engine.name, record.engine.device, record.workload.name,
                      f"{record.workload.weight_bytes / 1e3:.1f}", f"{lat.median_us:.2f}", f"{lat.p95_us:.2f}",
                      overhead_text(fit.overhead_s * 1e6, fit.overhead_se_s * 1e6 if fit.overhead_se_s else None)
                      if fit else "-")
    show(table, as_json)
    if sweep_file and any(f is None for f in fits):
        say(f"{sweep_file} has no sweep for some engine:device here: its overhead column is '-'")


@click.command()
@measuring_options
@timing_options(runs=20, budget=3.0)
@power_option
@click.option("--batch", "-b", type=click.IntRange(2, 1 << 20), default=512, show_default=True,
              help="Input vectors per call: large enough to be compute-bound.")
@click.option("--dtype", "dtypes", multiple=True, type=click.Choice(["fp32", "fp16", "bf16"]),
              help="Weight dtype (repeatable; default: the workload's).")
@max_tokens_option
@dry_run_option
def compute(engines, device, workloads, out, no_save, as_json, plot_stem, runs, time_budget, warmup, power,
            batch, dtypes, max_tokens, dry_run):
    """Peak matrix throughput (TFLOP/s) per engine, device and dtype (default workload lm_head:4096x4096).
    Core ML: at the largest tokens per predict that fits (up to --max-tokens), against half of it."""
    from ..orchestration.suites.roofline import run_compute
    from ..orchestration.suites.tokens import plan_token_compute, run_token_compute

    bases = resolve_workloads(workloads, default="lm_head:4096x4096")
    if dry_run:
        engine, device = coreml_only_target(engines, device, "compute")
        for base in bases:
            show_plan(plan_token_compute(engine, device, base, max_tokens, runs, time_budget), as_json)
        return
    targets = measuring_targets(engines, device, "compute")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "compute", power)
    records = []
    with progress_bar() as progress:
        for target in targets:
            for base in bases:
                if target.engine.name == "coreml":
                    plan = plan_token_compute(target.engine, target.device, base, max_tokens, runs, time_budget)
                    records.append(run_token_compute(target.engine, target.device, plan, options,
                                                     progress_factory(progress)))
                    continue
                for dtype in dtypes or (base.dtype,):
                    workload = with_dtype(base, dtype).with_batch(batch)
                    records.append(run_compute(target.engine, target.device, workload, options,
                                               progress_factory(progress)))
    emit(records, "compute", out, no_save, as_json, "compute")
    table = Table(title="peak matrix throughput")
    for column in ("engine", "device", "workload", "dtype (run)", "batch", "median ms", "TFLOP/s",
                   "TFLOP/s at half batch", "compute-bound"):
        table.add_column(column)
    for record in records:
        c = record.compute
        assert c is not None  # run_compute always fills it
        table.add_row(record.engine.name, record.engine.device, record.workload.name,
                      f"{record.workload.dtype} ({record.engine.run_dtype})",
                      str(record.workload.batch) if record.workload.tokens == 1 else f"{record.workload.tokens} tokens",
                      f"{(record.summary.median or 0) * 1e3:.3f}", f"{c.tflop_per_s:.4f}",
                      f"{c.half_batch_tflop_per_s:.4f}", "yes" if c.compute_bound else "NO")
    show(table, as_json)
    if records and records[0].compute:
        say(f"rule: {records[0].compute.rule}")


@click.command()
@measuring_options
@timing_options(runs=50, budget=10.0)
@power_option
@click.option("--copies", type=click.IntRange(2, 256), default=None,
              help="Copies to run at once (default 2, or one per device with --devices).")
@click.option("--processes", "mode", flag_value="processes", default=None,
              help="Run the copies as spawned processes (the default where threads cannot overlap).")
@click.option("--threads", "mode", flag_value="threads",
              help="Run the copies as threads of one process (only for engines whose call releases the GIL).")
@click.option("--threads-per-copy", type=click.IntRange(min=1), default=None,
              help="CPU threads each copy's calls use (default for CPU copies: cores / copies, at least 1).")
@click.option("--devices", default=None,
              help="Place copy i on device i, each in its own process: cuda:0,cuda:1,... or all.")
@click.option("--dry-run", is_flag=True, help="Show the plan (placement, mode, threads, memory) and stop.")
def concurrent(engines, device, workloads, out, no_save, as_json, plot_stem, runs, time_budget, warmup, power,
               copies, mode, threads_per_copy, devices, dry_run):
    """N copies solo, then together from a common start: combined GB/s, scaling and the verdict."""
    from ..measure.concurrency import COMBINED_DEFINITION, TOGETHER_DEFINITION
    from ..orchestration.concurrency_plan import describe_plan, plan_concurrent
    from ..orchestration.suites.concurrent import SEED_NOTE, run_plan
    from ..report.suite_plots import plot_concurrency

    if devices is not None and device is not None:
        raise UserError("--device and --devices: give one (--devices places one copy on each device)")
    targets, bases = resolve_targets(engines, device), resolve_workloads(workloads)
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "concurrency", power)
    plans = [(target, base, plan_concurrent(target.engine, target.device, base, copies, mode, devices,
                                            threads_per_copy))
             for target in targets for base in bases]  # every refusal before anything is loaded
    if dry_run:
        for _, _, plan in plans:
            for line in describe_plan(plan):
                out_console().print(escape(line), highlight=False, soft_wrap=True)
        return
    results = []
    for target, base, plan in plans:
        say(f"concurrent {target.engine.name} {base.name}: {plan.copies} copies on {', '.join(plan.devices)} "
            f"({plan.mode}: {plan.why}), each solo then together ...")
        results.append((target, base, run_plan(plan, options)))
    saved = emit([r for *_, res in results for r in res.records], "concurrent", out, no_save, as_json,
                 "concurrent")
    table = Table(title="concurrency: each copy solo and together; all copies combined over the common window")
    for column in ("engine", "workload", "copy", "device", "mode", "threads/copy", "solo GB/s", "together GB/s",
                   "combined GB/s", "scaling", "verdict"):
        table.add_column(column)
    for target, base, result in results:
        a, plan = result.analysis, result.plan
        threads = str(plan.threads_per_copy or "default")
        for i, copy_device in enumerate(plan.devices):
            table.add_row(target.engine.name, base.name, str(i), copy_device, plan.mode, threads,
                          f"{a.solo_gbps[i]:.2f}", f"{a.together_gbps[i]:.2f}", "", "", "")
        table.add_row(target.engine.name, base.name, "all", ", ".join(dict.fromkeys(plan.devices)), plan.mode,
                      threads, f"{sum(a.solo_gbps) / len(a.solo_gbps):.2f} (mean)",
                      f"{sum(a.together_gbps):.2f} (sum)", f"{a.combined_gbps:.2f}", f"{a.verdict.scaling:.3f}",
                      a.verdict.verdict)
    show(table, as_json)
    if results:
        say(f"verdict rule: {results[0][2].analysis.verdict.rule}")
        say(COMBINED_DEFINITION)
        say(TOGETHER_DEFINITION)
        say(f"copies: {SEED_NOTE}")
    for i, (target, base, result) in enumerate(results):
        title = f"concurrent {target.engine.name} {base.name} x{result.plan.copies} ({result.plan.mode})"
        write_plot(stem_for(plot_stem, saved, "concurrent", f"{i}-{target.engine.name}-{target.device}",
                            len(results) > 1), plot_concurrency, result.analysis.as_dict(), title)


def load_saved_sweep(path: Path) -> list:
    """A saved sweep's records; a crafted or damaged file is one line naming the flag, not a traceback."""
    try:
        return load_records(path)
    except UserError as exc:
        raise UserError(f"--sweep {path}: malformed sweep file; give one saved by `anebench sweep` ({exc})") from None


def overhead_text(overhead_us: float, se_us: float | None) -> str:
    """The fitted overhead with its two-standard-error band, or why it is not a figure."""
    if se_us is None:
        return f"{overhead_us:.1f}"
    if overhead_us <= 2 * se_us:
        return f"not resolved ({overhead_us:.0f} ± {2 * se_us:.0f})"
    return f"{overhead_us:.1f} ± {2 * se_us:.1f}"


def register(app: click.Group) -> None:
    for command in (sweep, roofline, latency, compute, concurrent):
        app.add_command(command)
