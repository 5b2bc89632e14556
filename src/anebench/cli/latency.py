"""`anebench latency`: dispatch cost, the smallest workload an engine accepts, beside a sweep's fitted
overhead (from a saved sweep, the results store, or a small sweep run for it)."""

from __future__ import annotations

import functools
from pathlib import Path

import click

from ..errors import UserError
from ..model import ResultRecord
from ..orchestration.entry import Timing
from ..results.files import load_result_file
from .common import measuring_options, warn
from .console import say
from .options import db_option
from .params import power_option
from .settings import Settings, store_options
from .suite_scaffold import SuiteDisplay, finish, timing_options


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
@db_option(
    "Results store to take the newest sweep of the same engine and device on this host from, and "
    "to store into with --store (default: the default store, where one exists)."
)
@click.option(
    "--no-sweep", is_flag=True, help="Do not look for a sweep or run a small one: no overhead column."
)
def latency(
    settings: Settings,
    engines,
    device,
    workloads,
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
    from ..orchestration import suite_entry

    # --db names the store for --store too (settings.db), so with --store it goes with --sweep or --no-sweep
    if sum(bool(x) for x in (sweep_file, db and not settings.store, no_sweep)) > 1:
        raise UserError(
            "--sweep, --db and --no-sweep: give at most one (each says where the overhead comes from)"
        )
    saved_from, saved = None, []
    if sweep_file:
        settings = settings.reading(sweep_file)
        saved, saved_from = load_saved_sweep(sweep_file), str(sweep_file)
    elif not no_sweep:
        saved, saved_from, settings = stored_sweeps(db, settings)
    request = suite_entry.LatencyRequest(
        engines, device, workloads, Timing(runs, time_budget, warmup, settings.threads), power,
        sweeps=tuple(saved), sweeps_from=saved_from, this_host_only=not (sweep_file or no_sweep),
        sweep_if_missing=not (no_sweep or sweep_file),
    )
    display = SuiteDisplay(settings)
    outcome = suite_entry.latency(request, display.events())
    for note in outcome.notes:  # after the progress bars: none of them is left on screen
        say(note)
    finish(outcome.records, "latency", display.settings)
    if sweep_file and any(r.latency is None or r.latency.sweep_overhead_us is None for r in outcome.records):
        say(f"{sweep_file} has no sweep for some engine:device here: its overhead column is '-'")


def stored_sweeps(db: Path | None, settings: Settings) -> tuple[list[ResultRecord], str | None, Settings]:
    """The store's sweep records: from --db (which must exist), or the default store where there is one;
    and the settings with that store as an input of the command."""
    from ..results.store import default_db_path, open_store

    path = db or default_db_path()
    if db is None and not path.is_file():
        return [], None, settings
    settings = settings.reading(path)
    with open_store(path, create=False, readonly=True) as store:
        sweeps = [r for r in store.records(provenance="measured") if r.suite == "sweep"]
        for record_id, why in store.skipped:
            warn(f"record {record_id[:16]} skipped: this version cannot load it ({why}); "
                 f"`anebench store remove {record_id[:16]} --db {path}` deletes it")
        return sweeps, str(path), settings


def load_saved_sweep(path: Path) -> list[ResultRecord]:
    """A saved sweep's records; a crafted or damaged file is one line naming the flag, not a traceback."""
    try:
        return load_result_file(path)
    except UserError as exc:
        raise UserError(
            f"--sweep {path}: malformed sweep file; give one saved by `anebench sweep` ({exc})"
        ) from None


