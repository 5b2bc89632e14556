"""The scaffold every suite command shares (sweep, roofline, latency, compute, concurrent, quant): its
timing options, the targets and --out check before anything runs, the measuring loop under one progress
display, the finish (tables, warnings, save, exports) and the analysis failure after the records are
saved."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TypeVar

import click

from ..errors import AnalysisFailed
from ..model import ResultRecord
from ..orchestration.campaign import Target
from ..orchestration.session import RunOptions
from ..orchestration.suites.common import ProgressFactory
from .common import check_out_path
from .console import progress
from .params import timing_flags
from .plans import measuring_targets
from .run import options_from
from .suite_output import finish

Result = TypeVar("Result")


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



def suite_setup(
    engines: tuple[str, ...], device: str | None, suite: str, out: Path | None, runs: int,
    time_budget: float | None, warmup: int | None, power: bool,
) -> tuple[list[Target], RunOptions]:
    """The targets that can measure ``suite`` here, and its options; an --out the output policy would
    refuse is refused now, before anything is measured."""
    targets = measuring_targets(engines, device, suite)
    check_out_path(out)
    return targets, suite_options(runs, time_budget, warmup, suite, power)


def measure_each(jobs: Iterable[Callable[[ProgressFactory], Result]]) -> list[Result]:
    """Each job under one progress display (none under -q), in order."""
    with progress() as factory:
        return [job(factory) for job in jobs]


def finish_suite(results: list[Result], records_of: Callable[[Result], list[ResultRecord]], suite: str,
                 out: Path | None, no_save: bool, fmt: str, file_label: str | None = None) -> Path | None:
    """Every result's records through the one finish: tables, warnings, save, exports, the document."""
    records = [record for result in results for record in records_of(result)]
    return finish(records, suite, out, no_save, fmt, file_label=file_label)


def fail_unless_analysed(what: str, failures: list[str], advice: str = "") -> None:
    """The records are saved; the suite's analysis could not be made from them: say so, no number."""
    if failures:
        raise AnalysisFailed(f"{what}: " + "; ".join(failures) + (f"; {advice}" if advice else ""))
