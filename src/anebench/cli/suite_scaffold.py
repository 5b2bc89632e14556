"""The scaffold every suite command shares (sweep, roofline, compute, latency, concurrent, quant, decode):
its timing options; the dry run of an engine that builds bundles; the display of its library entry
(orchestration/suite_entry.py: the workloads announced, --out checked once the targets are accepted, one
progress display); the finish (tables, warnings, save, exports, --store, the document); the plots
beside the results; and the analysis failure, said after the records are saved."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

from ..engines.base import Engine
from ..errors import AnalysisFailed
from ..orchestration.suite_entry import SuiteEvents
from ..orchestration.suites.bundle_plan import BundlePlan
from ..workloads import Workload
from .common import announce_workloads, workload_inputs
from .console import progress
from .params import timing_flags
from .plans import bundle_only_target, show_plan
from .settings import Settings
from .suite_output import finish, stem_for, write_plot


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


class SuiteDisplay:
    """The CLI's side of a suite run through its library entry (orchestration/suite_entry.py): the
    workloads announced (a checkpoint's files become inputs of the command), --out checked once the
    targets are accepted, and the progress display (none under -q). ``settings``: with the inputs."""

    def __init__(self, settings: Settings):
        self.settings = settings

    def planned(self, workloads: list[Workload]) -> None:
        announce_workloads(workloads)
        self.settings = self.settings.reading(*workload_inputs(workloads))

    def ready(self) -> None:
        self.settings.check_out_path()

    def events(self) -> SuiteEvents:
        return SuiteEvents(self.planned, self.ready, progress)


def show_bundle_plans(engines: tuple[str, ...], device: str | None, suite: str, bases: list[Workload],
                      plan: Callable[[Engine, str, Workload], BundlePlan], settings: Settings) -> None:
    """--dry-run of an engine that builds bundles: each base workload's bundles and calls, built and
    measured nothing (on any OS)."""
    engine, where = bundle_only_target(engines, device, suite)
    for base in bases:
        show_plan(plan(engine, where, base), settings.format == "json")


def fail_unless_analysed(what: str, failures: list[str], advice: str = "") -> None:
    """The records are saved; the suite's analysis could not be made from them: say so, no number."""
    if failures:
        raise AnalysisFailed(f"{what}: " + "; ".join(failures) + (f"; {advice}" if advice else ""))


__all__ = [
    "SuiteDisplay",
    "fail_unless_analysed",
    "finish",
    "max_tokens_option",
    "progress",
    "show_bundle_plans",
    "stem_for",
    "timing_options",
    "write_plot",
]
