"""`anebench build WORKLOAD`: write the Core ML LM-head bundle, or with ``--engine coreai`` the Core AI
.aimodel asset of the same weights (both work on any OS; running them needs a Mac)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from ..artifacts.coreml import LUT_MODES, MAX_REPEAT, MAX_SPLIT_ROWS, MAX_TOKENS, QUANTS
from ..artifacts.export import check_bundle_dir, copy_bundle
from ..errors import UserError
from ..workloads import resolve_workload
from .common import err_console, flags, format_option, out_console, output_format, progress_bar

BUILD_ENGINES = ("coreml", "coreai")


def summary_table(manifest: dict, package: Path, reused: bool) -> Table:
    table = Table(title="anebench build", show_header=False)
    rows = [
        ("workload", manifest["workload"]),
        (
            "quant",
            manifest["quant"]
            + (
                f" ({manifest['lut_mode']}, group {manifest['group_size']})"
                if manifest.get("lut_mode")
                else ""
            ),
        ),
        (
            "splits",
            f"{len(manifest['splits'])} x {manifest['splits'][0]}"
            + ("" if len(set(manifest["splits"])) == 1 else f" .. {manifest['splits'][-1]}"),
        ),
        ("weight sets", str(manifest["repeat"])),
        ("tokens per predict", str(manifest.get("tokens", 1))),
        ("input", ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in manifest["inputs"])),
        ("outputs", f"{manifest['outputs'][0]['name']} .. {manifest['outputs'][-1]['name']}"),
        (
            "weight bytes",
            f"{manifest['weight_bytes']:,} ({manifest['weight_bytes'] / 1e6:.2f} MB, from the program)",
        ),
        ("weight.bin", f"{manifest['weight_file_bytes']:,} bytes, sha256 {manifest['weight_sha256'][:16]}…"),
        ("workload fingerprint", manifest["workload_fingerprint"]),
        ("coremltools", manifest["coremltools"]),
        ("bundle", str(package)),
        ("from cache", "yes" if reused else f"no (built in {manifest['build_seconds']:.1f} s)"),
    ]
    rows += [("note", note) for note in manifest.get("notes", [])]
    for key, value in rows:
        table.add_row(key, value)
    return table


def asset_table(manifest: dict, package: Path, reused: bool) -> Table:
    """The Core AI asset: what coreai-core's own summary says it stores, beside what was encoded."""
    table = Table(title="anebench build --engine coreai", show_header=False)
    function = manifest["summary"]["functions"][manifest["function"]]
    stored = manifest["summary"]["storage_types"]
    storage = ", ".join(f"{dtype} x {count:,}" for dtype, count in stored.items())
    ops = ", ".join(f"{op} x {count}" for op, count in manifest["summary"]["operation_distribution"].items())
    splits, weight_bytes = manifest["splits"], manifest["weight_bytes"]
    rows = [
        ("workload", manifest["workload"]),
        ("quant", manifest["quant"]),
        ("splits", f"{len(splits)} x {splits[0]}" + ("" if len(set(splits)) == 1 else f" .. {splits[-1]}")),
        ("tokens per call", str(manifest["tokens"])),
        ("input", ", ".join(f"{name} {kind}" for name, kind in function["inputs"])),
        ("outputs", f"{function['outputs'][0][0]} .. {function['outputs'][-1][0]}"),
        ("stored (asset summary)", storage),
        ("operations", ops),
        ("weight bytes", f"{weight_bytes:,} ({weight_bytes / 1e6:.2f} MB, each blob found byte for byte in "
                         "the program)"),
        ("weights sha256", f"{manifest['weights_sha256'][:16]}… (the Core ML bundle's for the same bytes)"),
        ("workload fingerprint", manifest["workload_fingerprint"]),
        ("main.mlirb",
         f"{manifest['program_file_bytes']:,} bytes, sha256 {manifest['program_sha256'][:16]}…"),
        ("coreai-core", manifest["coreai_core"]),
        ("asset", str(package)),
        ("from cache", "yes" if reused else f"no (built in {manifest['build_seconds']:.1f} s)"),
    ]
    rows += [("note", note) for note in manifest.get("notes", [])]
    for key, value in rows:
        table.add_row(key, value)
    return table


@click.command()
@click.argument("workload")
@click.option(
    "--engine",
    "-e",
    type=click.Choice(BUILD_ENGINES),
    default="coreml",
    show_default=True,
    help="coreml: an .mlpackage for Core ML; coreai: an .aimodel for Core AI (macOS 27+ to run) with the "
    "same weights, fp16 or int8.",
)
@click.option(
    "--quant",
    type=click.Choice(QUANTS),
    default=None,
    help="Weight storage (default: the workload's own, e.g. lut6 for llama_lm_head_lut6, else fp16).",
)
@click.option(
    "--lut-mode",
    type=click.Choice(LUT_MODES),
    default="auto",
    show_default=True,
    help="LUT tables: uniform (fast, for synthetic weights), kmeans (optimal 1-D k-means per "
    "group with kmeans1d, as coremltools' palettizer; for real weights); auto picks by the "
    "weights' source.",
)
@click.option(
    "--repeat",
    type=click.IntRange(1, MAX_REPEAT),
    default=1,
    show_default=True,
    help="Distinct weight sets one prediction reads (longer Neural Engine tasks).",
)
@click.option(
    "--tokens",
    "-t",
    type=click.IntRange(1, MAX_TOKENS),
    default=1,
    show_default=True,
    help="Hidden states one prediction takes (input [1, hidden, 1, T], logits for all T); "
    "1 is the published [1, 1, hidden] layout. The weights are the same bytes for every T.",
)
@click.option(
    "--max-split-rows",
    type=click.IntRange(min=1),
    default=MAX_SPLIT_ROWS,
    show_default=True,
    help="Largest 1x1 convolution (output channels) per split.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Also copy the .mlpackage (or .aimodel) into this directory.",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Bundle cache (default: the platform cache dir, or $ANEBENCH_CACHE_DIR).",
)
@click.option("--json", "as_json", is_flag=True, help="Same as --format json.")
@format_option("table", "json")
def build(
    workload: str,
    engine: str,
    quant: str | None,
    lut_mode: str,
    repeat: int,
    tokens: int,
    max_split_rows: int,
    out: Path | None,
    cache_dir: Path | None,
    as_json: bool,
    fmt: str | None = None,
) -> None:
    """Write WORKLOAD as a Core ML .mlpackage shaped for the Neural Engine, or (--engine coreai) as a Core AI
    .aimodel of the same weights (cached; reused next time)."""
    from ..artifacts import BuildSpec, build_or_reuse
    from ..artifacts._coremltools import coremltools as require_coremltools
    from ..artifacts.cache import default_cache_dir
    from ..artifacts.resources import check_build_resources

    as_json = output_format(fmt, as_json) == "json"
    resolved = resolve_workload(workload).with_tokens(tokens)
    if engine == "coreai" and repeat != 1:
        raise UserError(f"--repeat {repeat}: weight sets per predict are a Core ML bundle option; a Core AI "
                        "asset holds one")
    if out is not None:
        with flags(out="--out"):
            check_bundle_dir(out)
    # Memory and disk before anything is hashed or allocated (a checkpoint's hash reads every byte).
    check_build_resources(resolved, quant, repeat, Path(cache_dir) if cache_dir else default_cache_dir(), out)
    if engine == "coreai":
        build_asset(resolved, quant, max_split_rows, out, cache_dir, as_json)
        return
    spec = BuildSpec.for_workload(
        resolved, quant, lut_mode=lut_mode, repeat=repeat, max_split_rows=max_split_rows
    )
    require_coremltools()  # a missing install is refused before the progress bar is drawn
    with progress_bar() as progress:
        label = f"{spec.workload.name} ({spec.quant}" + (f", {tokens} tokens)" if tokens > 1 else ")")
        task = progress.add_task(f"building {label}", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            artifact = build_or_reuse(spec, cache_dir, advance)
        except (ValueError, RuntimeError, ImportError) as exc:  # from coremltools: the cache is left clean
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise UserError(
                f"build {spec.workload.name} ({spec.quant}): coremltools failed: "
                f"{type(exc).__name__}: {first}"
            ) from None
        progress.update(task, description=f"{spec.workload.name} ({spec.quant}) ready")
    with flags(out="--out"):
        package = copy_bundle(artifact.package, out) if out is not None else artifact.package
    table = summary_table(artifact.manifest, package, artifact.reused)
    if as_json:
        err_console.print(table)
        document = {**artifact.manifest, "bundle": str(package), "reused": artifact.reused}
        sys.stdout.write(json.dumps(document, indent=1, sort_keys=True) + "\n")
        sys.stdout.flush()
    else:
        out_console().print(table)


def build_asset(resolved, quant: str | None, max_split_rows: int, out: Path | None, cache_dir: Path | None,
                as_json: bool) -> None:
    """`build --engine coreai`: the .aimodel, checked byte for byte against what was encoded."""
    from ..artifacts._coreai import authoring as require_coreai
    from ..artifacts.coreai import AssetSpec
    from ..artifacts.coreai_cache import build_or_reuse_asset

    require_coreai()  # a missing install is refused before anything is hashed or drawn
    spec = AssetSpec.for_workload(resolved, quant, max_split_rows=max_split_rows)
    with progress_bar() as progress:
        label = f"{spec.workload.name} ({spec.quant}, Core AI" + (
            f", {spec.tokens} tokens)" if spec.tokens > 1 else ")")
        task = progress.add_task(f"building {label}", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        try:
            artifact = build_or_reuse_asset(spec, cache_dir, advance)
        except (ValueError, RuntimeError, TypeError) as exc:  # from coreai-core: the cache is left clean
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise UserError(
                f"build {spec.workload.name} ({spec.quant}, Core AI): failed: {type(exc).__name__}: {first}"
            ) from None
        progress.update(task, description=f"{spec.workload.name} ({spec.quant}, Core AI) ready")
    with flags(out="--out"):
        package = copy_bundle(artifact.package, out) if out is not None else artifact.package
    table = asset_table(artifact.manifest, package, artifact.reused)
    if as_json:
        err_console.print(table)
        document = {**artifact.manifest, "asset": str(package), "reused": artifact.reused}
        sys.stdout.write(json.dumps(document, indent=1, sort_keys=True) + "\n")
        sys.stdout.flush()
    else:
        out_console().print(table)


def register(app: click.Group) -> None:
    app.add_command(build)
