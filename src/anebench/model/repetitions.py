"""Independent repetitions of one measurement, and the between-run interval derived from them.

A measured record's samples are R repetitions laid end to end (``samples_s[0:runs_1]`` is the first, and
so on), each after its own warmup, optionally each in a fresh process. The headline figure is the median
of all samples; its between-run 95% interval comes from the spread of the repetitions' medians. The
within-run CI (``summary.ci95_low/high``) describes only these samples, so it stays a secondary figure.
Every figure here is derived from the samples whenever the record is built or loaded, never trusted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import Field

from .base import LongStr, PositiveFloat, Seconds, ShortStr, StrictModel
from .statistics import BETWEEN_RUN_METHOD, between_run_interval, gbps, median

# Stored derived figures must match the samples to this relative tolerance (as the summary's do).
TOLERANCE = 1e-6
ONE_REPETITION = ("unknown: one repetition; the spread between runs was not measured, and the within-run "
                  "CI (summary.ci95_*) describes only this run's samples")


class Repetition(StrictModel):
    runs: Annotated[int, Field(ge=1)]  # this repetition's timed calls: the next ``runs`` samples
    warmup_runs: Annotated[int, Field(ge=0)]  # its own warmup, before its timed calls
    warmup_steady: bool | None = None
    median_s: Seconds | None = None  # derived from its samples


class BetweenRunInterval(StrictModel):
    """The headline interval; ``unknown`` says why there is none (one repetition). Its ends are not
    bounded like a measured figure: with few, scattered repetitions an honest interval can be huge."""

    level: Annotated[float, Field(ge=0.95, le=0.95)] = 0.95
    low_s: PositiveFloat | None = None
    high_s: PositiveFloat | None = None
    gbps_low: PositiveFloat | None = None
    gbps_high: PositiveFloat | None = None
    method: LongStr = BETWEEN_RUN_METHOD
    unknown: LongStr | None = None


class Interleave(StrictModel):
    """This record's place in an interleaved run (`run --interleave`): the repetitions of several
    configurations alternated A B A B ..., so repetition i of every configuration saw the same host
    phase, and two of them compare by their paired per-repetition ratios."""

    group: ShortStr  # shared by every record of one interleaved run
    position: Annotated[int, Field(ge=0, le=4096)]  # this configuration's place in each round
    configurations: Annotated[int, Field(ge=2, le=4096)]
    label: ShortStr  # the configuration in words: engine:device workload (threads)
    threads: Annotated[int, Field(ge=1, le=4096)] | None = None  # the engine's thread limit; None: its own


class Repetitions(StrictModel):
    fresh_processes: bool = False  # each repetition loaded the workload in its own new process
    interleave: Interleave | None = None  # measured in rounds with other configurations
    runs: list[Repetition] = Field(min_length=1, max_length=10_000)
    between_run: BetweenRunInterval | None = None  # derived

    @property
    def count(self) -> int:
        return len(self.runs)

    def slices(self, samples: Sequence[float]) -> list[Sequence[float]]:
        bounds, start = [], 0
        for repetition in self.runs:
            bounds.append(samples[start:start + repetition.runs])
            start += repetition.runs
        return bounds

    def derived(self, samples: Sequence[float], centre_s: float, weight_bytes: int,
                within: tuple[float, float] | None = None) -> Repetitions:
        """This section with every figure recomputed from ``samples``; a stored figure that contradicts
        them is refused, as is a split that does not cover the samples exactly."""
        total = sum(r.runs for r in self.runs)
        if total != len(samples):
            raise ValueError(f"repetitions: their runs add up to {total}, but the record has {len(samples)} "
                             "samples")
        runs = []
        for i, (repetition, part) in enumerate(zip(self.runs, self.slices(samples))):
            truth = median(part)
            _agree(f"repetitions.runs[{i}].median_s", repetition.median_s, truth)
            runs.append(Repetition.model_validate({**repetition.model_dump(), "median_s": truth}))
        interval = between_run_interval([r.median_s for r in runs if r.median_s is not None], centre_s)
        if interval is not None and within is not None:
            # Three medians can agree by chance more closely than their own samples allow: the
            # within-run CI is a floor under the uncertainty of the pooled median.
            interval = min(interval[0], within[0]), max(interval[1], within[1])
        if interval is None:
            between = BetweenRunInterval(unknown=ONE_REPETITION)
        else:
            low, high = interval
            between = BetweenRunInterval(low_s=low, high_s=high, gbps_low=gbps(weight_bytes, high),
                                         gbps_high=gbps(weight_bytes, low))
        if self.between_run is not None:
            for name in ("low_s", "high_s", "gbps_low", "gbps_high"):
                _agree(f"repetitions.between_run.{name}", getattr(self.between_run, name),
                       getattr(between, name), missing_ok=False)
        return Repetitions.model_validate({**self.model_dump(exclude={"runs", "between_run"}), "runs": runs,
                                           "between_run": between})


def _agree(name: str, stored: float | None, truth: float | None, missing_ok: bool = True) -> None:
    if stored is None and (missing_ok or truth is None):
        return
    if stored is None or truth is None or abs(stored - truth) > TOLERANCE * max(abs(truth), 1e-12):
        raise ValueError(f"{name} = {stored!r} contradicts the samples, which give {truth!r}")
