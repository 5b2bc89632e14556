"""`anebench build WORKLOAD`: write the artifact an engine loads (the default builder's bundle, or with
``--engine`` another builder's asset of the same weights; see anebench.artifacts.builders). Building works
on any OS; running what was built needs a Mac."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click
from rich.table import Table

from ..artifacts import LUT_MODES, MAX_REPEAT, MAX_SPLIT_ROWS, MAX_TOKENS, QUANTS
from ..artifacts.builders import BUILDERS, DEFAULT_BUILDER, LUT_MODES_HELP, BuildRequest
from ..artifacts.export import check_bundle_dir, copy_bundle
from ..workloads import resolve_workload
from .common import err_console, flags, format_option, out_console, output_format, progress_bar

FIRST_KIND, *OTHER_KINDS = (b.file_kind for b in BUILDERS.values())
FILE_KINDS = FIRST_KIND + (f" (or {', '.join(OTHER_KINDS)})" if OTHER_KINDS else "")


def summary_table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False)
    for key, value in rows:
        table.add_row(key, value)
    return table


@click.command()
@click.argument("workload")
@click.option(
    "--engine",
    "-e",
    type=click.Choice(list(BUILDERS)),
    default=DEFAULT_BUILDER,
    show_default=True,
    help="; ".join(f"{name}: {builder.what}" for name, builder in BUILDERS.items()) + ".",
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
    help=LUT_MODES_HELP,
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
    help=f"Also copy the {FILE_KINDS} into this directory.",
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
    """Write WORKLOAD as the artifact --engine loads: a bundle shaped for the Neural Engine by default
    (cached; reused next time)."""
    from ..artifacts.cache import default_cache_dir
    from ..artifacts.resources import check_build_resources

    as_json = output_format(fmt, as_json) == "json"
    builder = BUILDERS[engine]
    resolved = resolve_workload(workload).with_tokens(tokens)
    request = BuildRequest(resolved, quant, lut_mode, repeat, max_split_rows)
    builder.check(request)
    if out is not None:
        with flags(out="--out"):
            check_bundle_dir(out)
    # Memory and disk before anything is hashed or allocated (a checkpoint's hash reads every byte).
    check_build_resources(resolved, quant, repeat, Path(cache_dir) if cache_dir else default_cache_dir(), out)
    label = builder.ready(request)
    with progress_bar() as progress:
        task = progress.add_task(f"building {label}", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        built = builder.build(request, cache_dir, advance)
        progress.update(task, description=f"{label} ready")
    with flags(out="--out"):
        package = copy_bundle(built.package, out) if out is not None else built.package
    table = summary_table(builder.title, builder.summary_rows(built.manifest, package, built.reused))
    if as_json:
        err_console.print(table)
        document = {**built.manifest, builder.kind: str(package), "reused": built.reused}
        sys.stdout.write(json.dumps(document, indent=1, sort_keys=True) + "\n")
        sys.stdout.flush()
    else:
        out_console().print(table)


def register(app: click.Group) -> None:
    app.add_command(build)
