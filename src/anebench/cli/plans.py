"""Core ML suites on the command line: --dry-run's listing, and which engines take the Core ML path."""

from __future__ import annotations

import json
import sys

import click

from ..engines.coreml_engine import CoreMLEngine
from ..errors import UserError
from ..orchestration.suites.coreml_plan import CORE_ML, CoreMLPlan, coreml_device, require_measurable
from ..report.suite_terminal import TermTable, sig
from .common import Target, resolve_targets
from .terminal import print_table, say


def dry_run_option(func):
    return click.option(
        "--dry-run",
        is_flag=True,
        help="Core ML: list the bundles (workload, quant, tokens, weight bytes, cached or to "
        "build) and the calls it would make; build and measure nothing (works on any OS).",
    )(func)


def coreml_only_target(engines: tuple[str, ...], device: str | None, suite: str) -> tuple[CoreMLEngine, str]:
    """--dry-run plans Core ML bundles, available here or not."""
    if tuple(engines) != (CORE_ML,):
        raise UserError(f"{suite} --dry-run plans Core ML bundles: give -e coreml alone")
    return CoreMLEngine(), coreml_device(device)


def measuring_targets(engines: tuple[str, ...], device: str | None, suite: str) -> list[Target]:
    """The targets to measure; a Core ML one that cannot predict here is refused first, in one line."""
    if CORE_ML in engines:
        require_measurable(CoreMLEngine(), coreml_device(device), suite)
    return resolve_targets(engines, device)


def show_plan(plan: CoreMLPlan, as_json: bool) -> None:
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
        f"{plan.suite} -e coreml -d {plan.device}: dry run (nothing built or measured)",
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
