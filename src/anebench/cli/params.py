"""Option types that check every limit when the command line is parsed, before anything is measured.

click's FloatRange lets ``nan`` and ``inf`` through (every comparison with NaN is false), and an
unbounded count lets a run measure for an hour and then fail the record's schema; these types refuse
both at once, as a usage error (one line, exit 2).
"""

from __future__ import annotations

import math

import click

from ..model import ResultRecord


def _max_samples() -> int:
    """The record's own limit on raw samples, so the option and the schema cannot drift apart."""
    for item in ResultRecord.model_fields["samples_s"].metadata:
        limit = getattr(item, "max_length", None)
        if limit is not None:
            return int(limit)
    return 1_000_000


MAX_RUNS = _max_samples()
MAX_WARMUP = 1_000_000
MAX_TIME_BUDGET_S = 86_400.0  # one day of calls per measurement
MAX_MIB = 16 * 1024 * 1024.0  # 16 TiB of weights: beyond any machine this runs on


class FiniteFloat(click.ParamType):
    """A float in [low, high] (``low_open``: excluding low) that is neither NaN nor infinite."""

    name = "float"

    def __init__(self, low: float | None = None, high: float | None = None, low_open: bool = False,
                 name: str = "float"):
        self.low, self.high, self.low_open = low, high, low_open
        self.name = name  # shown in --help as the metavar: "MIB" says the unit where a flag is in MiB

    def convert(self, value, param, ctx):
        if isinstance(value, float) and math.isfinite(value):
            number = value
        else:
            try:
                number = float(value)
            except (TypeError, ValueError):
                self.fail(f"{value!r} is not a number", param, ctx)
            if not math.isfinite(number):
                self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.low is not None and (number < self.low or (self.low_open and number == self.low)):
            self.fail(f"{value!r} must be {'>' if self.low_open else '>='} {self.low:g}", param, ctx)
        if self.high is not None and number > self.high:
            self.fail(f"{value!r} must be <= {self.high:g}", param, ctx)
        return number

    def __repr__(self) -> str:
        return f"FiniteFloat({self.low}, {self.high})"


RUNS = click.IntRange(1, MAX_RUNS)
WARMUP = click.IntRange(0, MAX_WARMUP)
TIME_BUDGET = FiniteFloat(0, MAX_TIME_BUDGET_S, low_open=True)
MEBIBYTES = FiniteFloat(0, MAX_MIB, low_open=True, name="mib")  # MiB = 2**20 bytes, the only sizes not in MB
MEBIBYTES_OR_ZERO = FiniteFloat(0, MAX_MIB, name="mib")

__all__ = ["MAX_RUNS", "MEBIBYTES", "MEBIBYTES_OR_ZERO", "RUNS", "TIME_BUDGET", "WARMUP", "FiniteFloat"]


def threads_option(func):
    """--threads N: the CPU threads one call may use (numpy's BLAS via threadpoolctl, torch's threads);
    measuring_options parses it into ``Settings.threads``."""
    return click.option(
        "--threads",
        "-t",
        type=click.IntRange(1, 4096),
        default=None,
        help="CPU threads per call (numpy: BLAS via threadpoolctl; torch: set_num_threads); recorded "
        "and shown as `thr` [default: the engine's own].",
    )(func)


def timing_flags(runs: int, budget: float | None, runs_help: str, budget_help: str, threads: bool = True):
    """--runs/--time-budget/--warmup, one definition for `run` and every suite (defaults and help differ);
    --threads too, except where a suite's own --threads means something else (`concurrent`)."""

    def decorate(func):
        if threads:
            func = threads_option(func)
        func = click.option(
            "--warmup",
            type=WARMUP,
            default=None,
            help="Fixed warmup count (default: warm up until steady, capped).",
        )(func)
        func = click.option(
            "--time-budget", type=TIME_BUDGET, default=budget, show_default=budget is not None,
            help=budget_help,
        )(func)
        return click.option("--runs", "-n", type=RUNS, default=runs, show_default=True, help=runs_help)(func)

    return decorate


def power_option(func):
    return click.option(
        "--power/--no-power",
        default=None,
        help="Read energy (NVML, RAPL, IOReport on a Mac) around the timed calls: joules per call, "
        "GB/s per watt [default: off; on for the Mac campaign].",
    )(func)
