"""`anebench sweep | roofline | latency | compute | concurrent`: the suites beyond one number.

Each command takes the same --engine/--device/--workload/--out/--no-save as `anebench run`, plus
--format table|json|csv|md (--json: --format json), saves records in the same schema (the suite's analysis
in each record's typed section), prints the suite's own tables (built by anebench.report.suite_terminal from
the records, so the store renders the same ones), and writes its plots beside the results file (or at
--plot STEM). Warnings are printed once per kind, with how many records carry them.
"""

from __future__ import annotations

import functools
from dataclasses import replace as dc_replace
from pathlib import Path

import click

from ..errors import AnalysisFailed, UserError
from ..measure.sweep import MiB
from ..model import ResultRecord
from ..orchestration.session import RunOptions
from ..results.files import load_result_file
from .common import (
    StepSaver,
    add_input,
    check_out_path,
    measuring_options,
    resolve_targets,
    resolve_workloads,
    warn,
)
from .params import MEBIBYTES, MEBIBYTES_OR_ZERO, timing_flags
from .plans import bundle_engine, bundle_only_target, dry_run_option, measuring_targets, show_plan
from .results import store_options
from .run import options_from, power_option
from .suite_output import finish, output_format, stem_for, write_plot
from .terminal import console, progress, say


def max_tokens_option(func):
    from ..artifacts import MAX_TOKENS
    from ..orchestration.suites.roofline import DEFAULT_MAX_TOKENS

    return click.option(
        "--max-tokens",
        type=click.IntRange(2, MAX_TOKENS),
        default=DEFAULT_MAX_TOKENS,
        show_default=True,
        help="Engines that build token-batched bundles: most tokens per call (fewer when memory is short).",
    )(func)


def timing_options(runs: int, budget: float | None, plot: bool = True, threads: bool = True):
    """--runs/--time-budget/--warmup as in `run`, with defaults that suit the suite; --format; --plot where
    the suite draws one."""

    flags = timing_flags(
        runs,
        budget,
        runs_help="Timed calls per measurement.",
        budget_help="Stop each measurement after this many seconds of calls.",
        threads=threads,
    )

    def decorate(func):
        func = flags(func)
        if not plot:
            return func
        return click.option(
            "--plot",
            "plot_stem",
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            help="Write the plots to STEM.png and STEM.svg (default: beside the results).",
        )(func)

    return decorate


def suite_options(runs, time_budget, warmup, suite, power) -> RunOptions:
    return options_from(runs, time_budget, warmup, suite=suite, power=power)


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
            click.echo(f"{label}: {len(plan.sizes)} sizes, " + ", ".join(f"{s / MiB:.3g}" for s in plan.sizes)
                       + f" MiB; {runs} runs each over its repetitions, at most {time_budget} s of calls per "
                       "size (plus warmups)")
            for note in plan.notes:
                click.echo(f"{label}: {note}")
        return
    if dry_run:
        engine, device = bundle_only_target(engines, device, "sweep")
        for base in bases:
            plan = plan_engine_sweep(engine, device, base, to_bytes(min_mb), to_bytes(max_mb), points)
            show_plan(plan_sweep_bundles(engine, device, base, plan, runs, time_budget), fmt == "json")
        return
    targets = measuring_targets(engines, device, "sweep")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "sweep", power)
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
    if results:
        say(f"fit gates: {results[0][2].analysis.gates}")
    for i, (target, base, result) in enumerate(results):
        a = result.analysis
        if target.engine.sweep_context:
            say(f"{target.engine.name}:{target.device}: {target.engine.sweep_context}")
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
    failed = [f"{t.engine.name}:{t.device}: {res.error}" for t, _, res in results if res.error]
    if failed:  # the records are saved; the fit could not be made from them
        raise AnalysisFailed("sweep fit failed: " + "; ".join(failed))


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
            click.echo(f"{label}: " + (first_look.describe() if first_look else
                                       f"{', '.join(b.name for b in bases)}, batches 1-{max_batch} doubling "
                                       f"(stopping once clearly compute-bound), at most {time_budget:g} s of "
                                       "calls per batch"))
        return
    if dry_run:
        engine, device = bundle_only_target(engines, device, "roofline")
        for base in bases:
            show_plan(plan_token_roofline(engine, device, base, max_tokens, runs, time_budget), fmt == "json")
        return
    targets = measuring_targets(engines, device, "roofline")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "roofline", power)
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
    say(f"rule: {RIDGE_RULE}; {RIDGE_GATES}")
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
    failed = [f"{t.engine.name}:{t.device} {b.name}: {res.analysis.ridge_error}" for t, b, res in results
              if res.analysis.ridge_error]
    if failed:  # the records and plots are saved; no ridge could be placed from them
        raise AnalysisFailed("ridge not found: " + "; ".join(failed))


@click.command()
@measuring_options
@timing_options(runs=1000, budget=2.0, plot=False)
@power_option
@functools.partial(store_options, db=False)  # its own --db, below, serves --store too
@click.option(
    "--sweep",
    "sweep_file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    default=None,
    help="Show the fitted overhead of this saved sweep.",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Results store to take the newest sweep of the same engine and device on this host from, and "
    "to store into with --store (default: the default store, where one exists).",
)
@click.option(
    "--no-sweep", is_flag=True, help="Do not look for a sweep or run a small one: no overhead column."
)
def latency(
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
    sweep_file,
    db,
    no_sweep,
):
    """Dispatch cost: the smallest workload the engine accepts, median and p95, beside a sweep's fitted
    overhead (from --sweep, else the results store, else a small sweep of a few seconds, said so)."""
    from ..orchestration.suites.latency import LatencyTarget, run_latency_suite

    fmt = output_format(as_json, fmt, out, no_save)
    meta = click.get_current_context().meta
    meta["anebench.db"] = db  # --store stores where the sweep came from
    # --db names the store for --store too, so with --store it goes with --sweep or --no-sweep
    if sum(bool(x) for x in (sweep_file, db and not meta.get("anebench.store"), no_sweep)) > 1:
        raise UserError(
            "--sweep, --db and --no-sweep: give at most one (each says where the overhead comes from)"
        )
    targets = [LatencyTarget(t.engine, t.device) for t in resolve_targets(engines, device)]
    specs = resolve_workloads(workloads) if workloads else [None]  # None: the smallest the engine accepts
    options = suite_options(runs, time_budget, warmup, "latency", power)
    if sweep_file:
        add_input(sweep_file)
    check_out_path(out)
    saved_from, host_fingerprint, saved = None, None, []
    if sweep_file:
        saved, saved_from = load_saved_sweep(sweep_file), str(sweep_file)
    elif not no_sweep:
        saved, saved_from = stored_sweeps(db)
        host_fingerprint = options.host.info().fingerprint
    with progress() as factory:
        suite = run_latency_suite(
            targets,
            specs,
            options,
            saved,
            saved_from,
            host_fingerprint,
            sweep_if_missing=not (no_sweep or sweep_file),
            progress=factory,
        )
    for note in suite.notes:  # after the progress bars: none of them is left on screen
        say(note)
    finish(suite.records, "latency", out, no_save, fmt)
    if sweep_file and any(r.latency is None or r.latency.sweep_overhead_us is None for r in suite.records):
        say(f"{sweep_file} has no sweep for some engine:device here: its overhead column is '-'")


def stored_sweeps(db: Path | None) -> tuple[list[ResultRecord], str | None]:
    """The store's sweep records: from --db (which must exist), or the default store where there is one."""
    from ..results.store import default_db_path, open_store

    path = db or default_db_path()
    if db is None and not path.is_file():
        return [], None
    add_input(path)
    with open_store(path, create=False, readonly=True) as store:
        sweeps = [r for r in store.records(provenance="measured") if r.suite == "sweep"]
        for record_id, why in store.skipped:
            warn(f"record {record_id[:16]} skipped: this version cannot load it ({why}); "
                 f"`anebench store remove {record_id[:16]} --db {path}` deletes it")
        return sweeps, str(path)


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
    from ..orchestration.suites.roofline import plan_token_compute, run_compute_suite

    fmt = output_format(as_json, fmt, out, no_save)
    bases = resolve_workloads(workloads, default="lm_head:4096x4096")
    if dry_run:
        engine, device = bundle_only_target(engines, device, "compute")
        for base in bases:
            show_plan(plan_token_compute(engine, device, base, max_tokens, runs, time_budget), fmt == "json")
        return
    targets = measuring_targets(engines, device, "compute")
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "compute", power)
    records = []
    with progress() as factory:
        for target in targets:
            for base in bases:
                records += run_compute_suite(target.engine, target.device, base, batch, dtypes, max_tokens,
                                             options, factory)
    finish(records, "compute", out, no_save, fmt)
    failed = [f"{r.engine.name}:{r.engine.device} {r.workload.name}: not compute-bound ({r.compute.rule}, "
              f"grew {r.compute.growth_from_half:.2f}x)"
              for r in records if r.compute and not r.compute.compute_bound]
    if failed:  # the records are saved; their FLOP/s is not a peak
        raise AnalysisFailed("no compute peak: " + "; ".join(failed) + "; raise --batch")


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
@click.option("--dry-run", is_flag=True, help="Show the plan (placement, mode, threads, memory) and stop.")
def concurrent(
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
    copies,
    mode,
    threads_per_copy,
    devices,
    dry_run,
):
    """N copies solo, then together from a common start: combined GB/s, scaling and the verdict."""
    from ..measure.concurrency import COMBINED_DEFINITION, TOGETHER_DEFINITION
    from ..orchestration.concurrency_plan import describe_plan, plan_concurrent
    from ..orchestration.suites.concurrent import SEED_NOTE, run_plan
    from ..report.suite_plots import plot_concurrency

    if devices is not None and device is not None:
        raise UserError("--device and --devices: give one (--devices places one copy on each device)")
    fmt = output_format(as_json, fmt, out, no_save)
    targets, bases = resolve_targets(engines, device), resolve_workloads(workloads)
    check_out_path(out)
    options = suite_options(runs, time_budget, warmup, "concurrency", power)
    plans = [
        (
            target,
            base,
            plan_concurrent(target.engine, target.device, base, copies, mode, devices, threads_per_copy),
        )
        for target in targets
        for base in bases
    ]  # every refusal before anything is loaded
    if dry_run:
        out_console = console()
        for _, _, plan in plans:
            for line in describe_plan(plan):
                out_console.print(line, markup=False, soft_wrap=True)
        return
    results = []
    for target, base, plan in plans:
        say(
            f"concurrent {target.engine.name} {base.name}: {plan.copies} copies on {', '.join(plan.devices)} "
            f"({plan.mode}: {plan.why}), each solo then together"
        )
        with progress() as factory:
            results.append((target, base, run_plan(plan, options, factory)))
    saved = finish(
        [r for *_, res in results for r in res.records],
        "concurrency",
        out,
        no_save,
        fmt,
        file_label="concurrent",
    )
    if results:
        say(f"verdict rule: {results[0][2].analysis.verdict.rule}")
        say(COMBINED_DEFINITION)
        say(TOGETHER_DEFINITION)
        say(f"copies: {SEED_NOTE}")
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
    failed = [f"{t.engine.name}:{t.device} {b.name}: verdict inconclusive (scaling "
              f"{res.analysis.verdict.scaling:.2f}; {res.analysis.verdict.rule})"
              for t, b, res in results if res.analysis.verdict.verdict == "inconclusive"]
    if failed:  # the records and plots are saved; the rule could not decide
        raise AnalysisFailed("no concurrency verdict: " + "; ".join(failed))


def load_saved_sweep(path: Path) -> list[ResultRecord]:
    """A saved sweep's records; a crafted or damaged file is one line naming the flag, not a traceback."""
    try:
        return load_result_file(path)
    except UserError as exc:
        raise UserError(
            f"--sweep {path}: malformed sweep file; give one saved by `anebench sweep` ({exc})"
        ) from None


def register(app: click.Group) -> None:
    for command in (sweep, roofline, latency, compute, concurrent):
        app.add_command(command)
