"""The sweep measured in interleaved rounds: a host phase change no longer bends the fit, a genuinely
non-linear device still fails it, the points are saved as they are timed, and where the sizes cannot be
held at once (or with --power) they are measured one after the other, as the notes say.

The engine is numpy's (its output check is real) with every call taking fake time: overhead + bytes /
the host phase's bandwidth, the phase following the fake clock as a host's phases follow time."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from anebench.engines.numpy_engine import NumpyEngine
from anebench.measure.clock import FakeClock
from anebench.measure.warmup import WarmupPolicy
from anebench.model import GB
from anebench.orchestration.session import RunOptions
from anebench.orchestration.suites.common import no_progress
from anebench.orchestration.suites.sweep import SweepPlan, run_sweep
from anebench.orchestration.suites.sweep_rounds import sequential_reason
from anebench.workloads import Workload
from fakehost import FakeHost

KiB, MiB = 1024, 1024**2
CACHE = 64 * KiB  # the knee at 4x: 256 KiB; five sizes past it, spanning 16x
SIZES = [64 * KiB, 128 * KiB, 256 * KiB, 512 * KiB, 1 * MiB, 2 * MiB, 4 * MiB]
OVERHEAD_S = 20e-6
FAST, SLOW = 20e9, 15e9  # bytes per second: a read kernel moved 21.9 -> 16.4 GB/s within one real sweep
BASE = Workload("lm_head:64x1024:fp32", 64, 1024, "fp32")
ALL_AT_ONCE = 16 * 1024**3
ONE_AT_A_TIME = 6 * MiB  # each size (4 MiB x 1.15 headroom) fits, all seven together do not


class Phased(NumpyEngine):
    def __init__(self, fake: FakeClock, bandwidth_at: Callable[[float], float],
                 read_bytes: Callable[[int], float] = float, stop_after_calls: int | None = None):
        super().__init__()
        self.fake, self.bandwidth_at, self.read_bytes = fake, bandwidth_at, read_bytes
        self.stop_after_calls = stop_after_calls
        self.called: list[int] = []  # the size of every call, in order

    def prepare(self, workload, device):
        prepared = super().prepare(workload, device)
        inner, size = prepared.call, self.bytes_for(workload, device)

        def call():
            if self.stop_after_calls is not None and len(self.called) >= self.stop_after_calls:
                raise KeyboardInterrupt
            inner()
            self.called.append(size)
            self.fake.advance(OVERHEAD_S + self.read_bytes(size) / self.bandwidth_at(self.fake.t / 1e9))

        prepared.call = call
        return prepared


def sweep(bandwidth_at=lambda _t: FAST, read_bytes=float, memory=ALL_AT_ONCE, finished=None,
          stop_after_calls=None, power=False, progress=no_progress):
    fake = FakeClock()
    engine = Phased(fake, bandwidth_at, read_bytes, stop_after_calls)
    options = RunOptions(runs=30, warmup=WarmupPolicy(fixed=2), clock=fake.clock(), suite="sweep",
                         host=FakeHost(available_bytes=memory), power=power)
    result = run_sweep(engine, "cpu", BASE, SweepPlan(list(SIZES), CACHE), options, progress, finished)
    return result, engine, fake.t / 1e9


def switching_at(fraction: float, duration_s: float) -> Callable[[float], float]:
    """The host's phase changes once, ``fraction`` of the way through a sweep of ``duration_s``."""
    return lambda t: FAST if t < fraction * duration_s else SLOW


@pytest.fixture(scope="module")
def steady_duration_s():
    _, _, duration = sweep()
    return duration


def test_a_steady_host_fits_its_bandwidth_in_every_round():
    result, _, _ = sweep()
    assert result.error is None, result.error
    assert result.analysis.fit.bandwidth_bps == pytest.approx(FAST, rel=0.01)
    assert "interleaved rounds" in result.analysis.fit.method
    assert any("fitted bandwidth per interleaved round: 20.0 GB/s, 20.0 GB/s, 20.0 GB/s" in n
               for n in result.analysis.notes)
    places = [r.repetitions.interleave for r in result.records]
    assert [p.position for p in places] == list(range(len(SIZES)))
    assert len({p.group for p in places}) == 1 and all(p.configurations == len(SIZES) for p in places)
    assert all(r.repetitions.count == 3 for r in result.records)


def test_the_rounds_alternate_ascending_and_descending_after_every_size_is_checked():
    _, engine, _ = sweep()
    visits = [size for i, size in enumerate(engine.called) if i == 0 or engine.called[i - 1] != size]
    checks, rounds = visits[:len(SIZES)], visits[len(SIZES):]
    assert checks == SIZES  # each prepared and output-checked once, before the first round
    # each repetition warms up and times its calls together: one visit per size and round
    assert rounds == SIZES + SIZES[::-1][1:] + SIZES[1:]  # the turn's size runs on: 4 MiB, then 64 KiB


@pytest.mark.parametrize("fraction", [0.1, 0.3, 0.5, 0.6, 0.9])
def test_a_host_phase_change_mid_sweep_no_longer_breaks_the_fit(fraction, steady_duration_s):
    in_rounds, *_ = sweep(switching_at(fraction, steady_duration_s))
    assert in_rounds.error is None, in_rounds.error
    assert SLOW * 0.99 <= in_rounds.analysis.fit.bandwidth_bps <= FAST * 1.01
    assert in_rounds.analysis.fit.overhead_s >= 0


def test_the_same_phase_change_breaks_a_sweep_measured_one_size_after_the_other(steady_duration_s):
    in_turn, *_ = sweep(switching_at(0.5, steady_duration_s), memory=ONE_AT_A_TIME)
    assert in_turn.analysis.fit is None and "disagrees with its own largest sizes" in in_turn.error
    assert any("one after the other" in n for n in in_turn.analysis.notes)


def test_a_change_within_the_middle_round_bends_the_pooled_line_but_not_the_per_round_fit(steady_duration_s):
    """Why the rounds are fitted one by one: pooled, the sizes timed before the change in the middle
    round lean to one phase and those after it to the other."""
    from anebench.measure.sweep import analyse_sweep

    result, *_ = sweep(switching_at(0.5, steady_duration_s))
    assert result.error is None
    records = result.records
    pooled = analyse_sweep([r.workload.weight_bytes for r in records], [r.latency_s() for r in records],
                           CACHE, None, [r.between_run() for r in records])
    assert pooled.fit is None and "R²" in pooled.fit_error


def test_a_genuinely_non_linear_device_still_fails_in_every_round_with_the_reason():
    # past 256 KiB each byte costs more the more there are (latency grows as bytes^1.5): no line
    result, _, _ = sweep(read_bytes=lambda size: size * max(1.0, size / (256 * KiB)) ** 0.5)
    assert result.analysis.fit is None
    assert result.error.startswith("3 of 3 interleaved rounds failed the gates")
    assert "round 1: " in result.error and "round 3: " in result.error
    assert "disagrees with its own largest sizes" in result.error
    assert all(r.sweep.fit is None and r.sweep.fit_error == result.error for r in result.records)


def test_progress_shows_the_preparation_then_each_round_as_a_point_of_three():
    bars: dict[str, list[tuple[int, int]]] = {}

    def factory(label, total):
        bars[label] = []
        return lambda done, of: bars[label].append((done, of))

    sweep(progress=factory)
    labels = list(bars)
    assert labels == ["sweep numpy:cpu preparing and checking 7 sizes"] + [
        f"sweep numpy:cpu 7 sizes, round ({i}/3)" for i in (1, 2, 3)]
    assert bars[labels[0]][-1] == (7, 7)
    assert all(bars[label][-1] == (70, 70) for label in labels[1:])  # 10 timed calls of each size a round


def test_every_timed_repetition_is_saved_with_one_record_per_size():
    saved: list[list] = []
    result, _, _ = sweep(finished=saved.append)
    assert len(saved) == 3 * len(SIZES)  # after every repetition of every size
    assert [len(points) for points in saved[:len(SIZES)]] == list(range(1, len(SIZES) + 1))
    for points in saved:
        sizes = [r.workload.weight_bytes for r in points]
        assert len(sizes) == len(set(sizes))  # never two points for one size
    assert [r.repetitions.count for r in saved[-1]] == [3] * len(SIZES)
    assert {r.workload.weight_bytes for r in saved[-1]} == {r.workload.weight_bytes for r in result.records}


def test_an_interrupted_sweep_keeps_the_repetitions_it_timed():
    saved: list[list] = []
    # each repetition: 2 warmup + 10 timed calls; the output checks take 7 calls first
    with pytest.raises(KeyboardInterrupt):
        sweep(finished=saved.append, stop_after_calls=len(SIZES) + 12 * (len(SIZES) + 2) + 5)
    last = saved[-1]
    assert len(last) == len(SIZES)
    counts = {r.workload.weight_bytes: r.repetitions.count for r in last}
    assert counts == {size: 2 if size in (SIZES[-1], SIZES[-2]) else 1 for size in SIZES}


def test_sizes_that_do_not_fit_at_once_are_measured_one_after_the_other_and_say_so():
    result, engine, _ = sweep(memory=ONE_AT_A_TIME)
    visits = [size for i, size in enumerate(engine.called) if i == 0 or engine.called[i - 1] != size]
    assert visits == SIZES  # each size checked, warmed up and timed in turn
    assert result.error is None and result.analysis.fit.bandwidth_bps == pytest.approx(FAST, rel=0.01)
    note = next(n for n in result.analysis.notes if "one after the other" in n)
    assert "holding all 7 at once needs" in note and "GB is free" in note
    assert all(r.repetitions.interleave is None for r in result.records)
    assert all(note in r.sweep.notes for r in result.records)


def test_power_and_cuda_measure_one_size_after_the_other():
    engine, workloads = NumpyEngine(), [BASE, BASE]
    host = FakeHost()
    reason = sequential_reason(engine, "cpu", workloads, RunOptions(repetitions=3, power=True, host=host))
    assert reason is not None and "--power" in reason and "energy window" in reason
    reason = sequential_reason(engine, "cuda:0", workloads, RunOptions(repetitions=3, host=host))
    assert reason is not None and "CUDA" in reason
    assert sequential_reason(engine, "cpu", workloads, RunOptions(repetitions=3, host=host)) is None
    once = sequential_reason(engine, "cpu", workloads, RunOptions(repetitions=1, host=host))
    assert once is not None and "two repetitions" in once


def test_the_fit_gates_say_how_rounds_are_fitted():
    from anebench.measure.line_fit import FIT_GATES

    assert "round by round" in FIT_GATES and "a majority of them needed" in FIT_GATES
    assert GB == 1e9
