"""Suites on engines that build bundles, on the command line: --dry-run's listing, and which engines
take that path (the engine says, by ``plans_bundles``)."""

from __future__ import annotations

import json
import sys

import click

from ..engines import engines_with, get_engine
from ..engines.base import Engine
from ..errors import UserError
from ..orchestration.suites.bundle_plan import BundlePlan
from ..report.suite_terminal import TermTable, sig
from .terminal import print_table, say


def dry_run_option(func):
    return click.option(
        "--dry-run",
        is_flag=True,
        help="Engines that build bundles: list the bundles (workload, quant, tokens, weight bytes, cached "
        "or to build) and the calls it would make; build and measure nothing (works on any OS).",
    )(func)


def bundle_engine(engines: tuple[str, ...]) -> Engine | None:
    """The one engine given, where it builds the bundles a dry run lists; None otherwise."""
    if len(engines) != 1:
        return None
    engine = get_engine(engines[0])
    return engine if engine.plans_bundles else None


def bundle_only_target(engines: tuple[str, ...], device: str | None, suite: str) -> tuple[Engine, str]:
    """--dry-run plans an engine's bundles, available here or not."""
    engine = bundle_engine(engines)
    if engine is None:
        names = " or ".join(f"-e {e.name}" for e in engines_with(lambda e: e.plans_bundles))
        raise UserError(f"{suite} --dry-run plans the bundles of an engine that builds them: "
                        f"give {names} alone")
    return engine, engine.planning_device(device)


def show_plan(plan: BundlePlan, as_json: bool) -> None:
    if as_json:
        document = {
            "suite": plan.suite,
            "device": plan.device,
            "notes": plan.notes,
            "bundles": [b.as_dict() for b in plan.bundles],
        }
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
        sys.stdout.flush()
    table = TermTable(
        f"{plan.suite} -e {plan.engine} -d {plan.device}: dry run (nothing built or measured)",
        ["workload", "quant", "tokens", "weight MB", "bundle", "calls"],
        [False, False, True, True, False, False],
    )
    for b in plan.bundles:
        table.rows.append(
            [
                b.workload.name,
                b.quant,
                str(b.tokens),
                sig(b.weight_bytes / 1e6),
                "cached" if b.cached else "to build",
                b.calls,
            ]
        )
    to_build = plan.to_build
    total = sum(b.weight_bytes for b in to_build) / 1e9
    print_table(table, stderr=as_json)
    summary = f"{len(plan.bundles)} bundle(s), {len(to_build)} to build ({total:.2f} GB of weights to write)"
    for line in [*plan.notes, summary]:
        say(line)
