"""`anebench decode MODEL`: tokens per second (and joules per token) of a model's decode stream, measured
on each engine beside the tok/s its sweep curve predicts."""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import click

from ..engines import PUBLISHED_ANE_ENGINE
from ..errors import UserError
from ..measure.warmup import WarmupPolicy
from ..workloads.decode_stream import accounting
from ..workloads.model_config import resolve_model
from ..workloads.models import MAX_DEPTH, decode_workload
from .common import measuring_options, resolve_targets
from .latency import stored_sweeps
from .run import power_option
from .suite_output import finish, output_format, show_tables, stem_for, write_plot
from .suite_scaffold import suite_options, timing_options
from .terminal import progress, say

MAX_DEPTHS = 16
DECODE_WARMUP = WarmupPolicy(min_runs=2, window=2, tolerance=0.05, max_runs=20, max_seconds=5.0)


def parse_depths(text: str) -> list[int]:
    """``0,512,2048`` -> [0, 512, 2048]; anything else is one line naming --depth."""
    try:
        depths = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise UserError(
            f"--depth {text[:60]!r}: give context depths in tokens, e.g. 0 or 0,512,2048"
        ) from None
    if not depths or len(depths) > MAX_DEPTHS or any(not 0 <= d <= MAX_DEPTH for d in depths):
        raise UserError(f"--depth {text[:60]!r}: give 1 to {MAX_DEPTHS} depths, each 0 to {MAX_DEPTH:,}")
    return sorted(set(depths))


def decode_engines() -> list[str]:
    """The engines the decode suite runs on, in preference order (ENGINE_FACTORIES's)."""
    from ..engines import engines_with

    return [engine.name for engine in engines_with(lambda e: e.runs_decode)]


def default_decode_engine() -> str:
    """ENGINE:DEVICE of the first decode engine with an accelerator here, else numpy:cpu."""
    from ..engines import available_engine

    for name in decode_engines():
        engine = available_engine(name)
        if engine is not None and engine.devices() and engine.default_device() != "cpu":
            return f"{name}:{engine.default_device()}"
    return "numpy:cpu"


def decode_targets(engines: tuple[str, ...], device: str | None, measure: bool):
    """-e ENGINE (on -d, or its best device) or -e ENGINE:DEVICE, so one command can put the ANE, the GPU
    and the CPU side by side. An engine that builds bundles plans on any OS; measuring it where it cannot
    run is refused here in one line before any build."""
    from ..engines import get_engine
    from ..orchestration.suites.bundle_plan import require_measurable
    from ..orchestration.suites.decode import DecodeTarget

    targets = []
    if not engines:  # the best engine here that runs a decode step (the Neural Engine on a Mac)
        engines = (default_decode_engine(),)
    for spec in engines:
        name, _, own = spec.partition(":")
        where = own or device
        if name not in decode_engines():
            raise UserError(f"decode -e {name}: not built for this engine; decode runs on "
                            f"{', '.join(decode_engines())}")
        engine = get_engine(name)
        if engine.plans_bundles:
            where = engine.planning_device(where)
            if measure:
                require_measurable(engine, where, "decode")
            targets.append(DecodeTarget(engine, where))
        else:
            targets += [DecodeTarget(t.engine, t.device) for t in resolve_targets((name,), where)]
    return targets


@click.command()
@click.argument("model", required=False)
@measuring_options
@timing_options(runs=10, budget=10.0)
@power_option
@click.option(
    "--depth",
    "depth_text",
    default="0",
    show_default=True,
    help="Context depth D in tokens (the KV cache read), or several: 0,512,2048.",
)
@click.option(
    "--predict",
    "predict_only",
    is_flag=True,
    help="Print the predicted tok/s from the sweep curve and measure nothing.",
)
@click.option(
    "--dry-run",
    is_flag=True,
    help="List each engine's dispatches per token (an engine that chains bundles: the chunks and their "
    "bytes) and the "
    "prediction from a stored sweep; build, sweep and measure nothing (any OS).",
)
@click.option(
    "--chunk-mb",
    type=click.FloatRange(1, 1e6),
    default=1000.0,
    show_default=True,
    help="Engines that chain bundles: the most weight bytes per chunk (MB).",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Results store to take the newest sweep of each engine and device on this host from "
    "(default: the default store, where one exists).",
)
@click.option(
    "--no-sweep", is_flag=True, help="Do not run a small sweep where none is stored: no prediction."
)
@click.option(
    "--campaign",
    is_flag=True,
    help=f"The Mac campaign's decode step: qwen3-0.6b at depths 0 and 2048 on {PUBLISHED_ANE_ENGINE}:ane, "
    "mlx:gpu and mlx:cpu (those this host has), power on.",
)
def decode(
    model,
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
    plot_stem,
    power,
    depth_text,
    predict_only,
    dry_run,
    chunk_mb,
    db,
    no_sweep,
    campaign,
):
    """Decode: a model's per-token weight + KV stream, measured on each engine (tok/s, GB/s, J/token with
    --power) beside the tok/s predicted from a sweep. MODEL: a folder with a Hugging Face config.json
    (weights from its safetensors, else synthetic of the real shapes) or a known config name."""
    from ..orchestration.suites.decode import run_decode, run_dtype_of
    from ..report.decode_tables import accounting_table, prediction_table

    fmt = output_format(as_json, fmt, out, no_save)
    if workloads:
        raise UserError(
            "decode takes MODEL (a config folder or a known name), not -w; the stream is the model's"
        )
    if campaign:
        from ..orchestration.suites.decode import CAMPAIGN_DEPTHS, CAMPAIGN_MODEL, campaign_targets

        if model or engines or device:
            raise UserError("--campaign chooses the model, engines and devices: give none of them")
        model, depth_text = CAMPAIGN_MODEL, ",".join(map(str, CAMPAIGN_DEPTHS))
        power = True if power is None else power
        targets, missing = campaign_targets()
        for line in missing:
            say(line)
        if not targets:
            raise UserError("decode --campaign: none of its engines and devices is available here")
    elif not model:
        raise UserError(
            "decode: give MODEL (a folder with a config.json, or a known config name) or --campaign"
        )
    depths = parse_depths(depth_text)
    facts, folder = resolve_model(model)
    decode_workloads = [decode_workload(facts, d, folder) for d in depths]
    if not campaign:
        targets = decode_targets(engines, device, measure=not (predict_only or dry_run))
    deepest = decode_workloads[-1]
    for run_dtype in dict.fromkeys(run_dtype_of(t, deepest) for t in targets):
        title = (
            f"decode {facts.name} ({facts.family}, {facts.layers} layers): bytes per token at depth "
            f"{deepest.depth}"
        )
        show_tables(
            [accounting_table(title, accounting(facts, deepest.depth, run_dtype), facts.dtype, run_dtype)],
            "json" if fmt != "table" else "table",
        )
    say(f"config: {facts.source}; weights: {'checkpoint' if deepest.checkpoint is not None else 'synthetic'}")
    saved, saved_from = stored_sweeps(db)
    options = suite_options(runs, time_budget, warmup, "decode", power)
    if warmup is None:  # a token takes 0.1-1 s: steady after a few, never 15 s of warmup per depth
        options = replace(options, warmup=DECODE_WARMUP)
    chunk_bytes = int(chunk_mb * 1e6)
    if dry_run:
        show_dry_run(targets, decode_workloads, saved, saved_from, options, chunk_bytes, fmt)
        return
    with progress() as factory:
        suite = run_decode(
            targets,
            decode_workloads,
            options,
            saved,
            saved_from,
            options.host.info().fingerprint,
            predict_only,
            not no_sweep,
            chunk_bytes,
            factory,
        )
    for line in suite.notes:
        say(line)
    if predict_only:
        rows = [
            (
                f"{p.engine}:{p.device}",
                facts.name,
                p.workload.depth,
                p.workload.bytes_as(p.run_dtype),
                p.prediction,
                p.error,
            )
            for p in suite.predicted
        ]
        show_tables([prediction_table(rows)], fmt)
        return
    saved_path = finish(suite.records, "decode", out, no_save, fmt)
    stem = stem_for(plot_stem, saved_path, "decode", "", False)
    from ..report.decode_plots import plot_decode

    write_plot(stem, plot_decode, suite.records)


def show_dry_run(targets, decode_workloads, saved, saved_from, options, chunk_bytes, fmt) -> None:
    """Each target's dispatches per token and, from a stored sweep only, the prediction."""
    from ..orchestration.suites.decode import curve_for, predict, run_dtype_of
    from ..orchestration.suites.decode_plan import token_dispatches
    from ..report.decode_tables import chunks_table, prediction_table

    rows, document = [], []
    for target in targets:
        curve, source = curve_for(
            target,
            saved,
            saved_from,
            options.host.info().fingerprint,
            options,
            False,
            lambda *_: lambda *_: None,
            say,
        )
        for workload in decode_workloads:
            run_dtype = run_dtype_of(target, workload)
            label = f"{target.engine.name}:{target.device}"
            planned = target.engine.decode_chunks(workload, chunk_bytes)
            if planned is not None:
                chunks = [c.as_dict() for c in planned]
                document.append({"target": label, "depth": workload.depth, "chunks": chunks})
                show_tables(
                    [
                        chunks_table(
                            f"decode -e {target.engine.name} -d {target.device} at depth "
                            f"{workload.depth}: dry "
                            "run (nothing built or measured)",
                            chunks,
                        )
                    ],
                    "json" if fmt != "table" else "table",
                )
            else:
                sent = token_dispatches(workload, target.engine, run_dtype)
                say(
                    f"{label} depth {workload.depth}: {len(sent)} dispatches per token (one per matvec"
                    f"{' and attention read' if workload.depth else ''}), "
                    f"{sum(d.bytes for d in sent) / 1e6:.1f} MB of weights and KV"
                )
                document.append({"target": label, "depth": workload.depth, "dispatches": len(sent),
                                 "bytes": sum(d.bytes for d in sent)})
            prediction = (
                predict(workload, target.engine, run_dtype, curve, source, chunk_bytes)
                if curve is not None
                else None
            )
            rows.append(
                (
                    label,
                    workload.facts.name,
                    workload.depth,
                    workload.bytes_as(run_dtype),
                    prediction,
                    None if curve is not None else f"{source} (a dry run sweeps nothing)",
                )
            )
    show_tables([prediction_table(rows)], "json" if fmt != "table" else "table")
    if fmt == "json":
        predictions = [{"target": label, "depth": depth, "bytes_per_token": stream,
                        "prediction": p.model_dump(mode="json") if p else None, "why_none": why}
                       for label, _model, depth, stream, p, why in rows]
        sys.stdout.write(json.dumps({"suite": "decode", "dry_run": document, "predictions": predictions},
                                    indent=1) + "\n")


def register(app: click.Group) -> None:
    app.add_command(decode)
