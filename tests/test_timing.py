import numpy as np
import pytest

from anebench.engines.base import Prepared
from anebench.errors import MeasurementError
from anebench.measure.clock import PERF_COUNTER, FakeClock
from anebench.measure.timing import time_calls
from anebench.measure.warmup import WarmupPolicy


class ScriptedCall(Prepared):
    """A call whose duration is scripted on a fake clock: the loop must report exactly those."""

    def __init__(self, clock: FakeClock, durations, device=False):
        super().__init__()
        self.clock, self.durations, self.calls = clock, list(durations), 0
        self.device = device
        self.run_dtype = "fp32"

    def call(self):
        self.clock.advance(self.durations[min(self.calls, len(self.durations) - 1)])
        self.calls += 1

    def device_seconds(self):
        return 0.5 * self.durations[min(self.calls - 1, len(self.durations) - 1)] if self.device else None

    def output(self):
        return np.zeros((1, 1), np.float32)


def test_samples_are_exactly_the_call_durations_after_warmup():
    fake = FakeClock(tick_ns=0)
    warm = [5e-3, 4e-3, 3e-3] + [1e-3] * 8
    timed = [1e-3, 2e-3, 3e-3, 4e-3]
    prepared = ScriptedCall(fake, warm + timed)
    # resolution_s() reads the clock too: give it a tick so it terminates, then freeze time.
    fake.tick_ns = 1
    timing = time_calls(prepared, runs=4, warmup=WarmupPolicy(window=5, min_runs=3), clock=fake.clock())
    # steady at call 11: median of calls 7-11 (1 ms) equals that of calls 2-6 (4,3,1,1,1 -> 1 ms)
    assert timing.warmup_runs == 11
    assert timing.warmup_steady
    np.testing.assert_allclose(timing.samples_s, timed, atol=3e-9)
    assert timing.device_samples_s is None
    assert "until steady" in timing.warmup_policy


def test_warmup_cap_is_reported_when_never_steady():
    fake = FakeClock()
    durations = [1e-3 * (1.5**i) for i in range(30)]  # keeps growing: never steady
    prepared = ScriptedCall(fake, durations + [1e-3] * 10)
    timing = time_calls(prepared, runs=3, warmup=WarmupPolicy(max_runs=12), clock=fake.clock())
    assert timing.warmup_runs == 12
    assert not timing.warmup_steady


def test_fixed_warmup_runs_exactly_that_many_calls():
    fake = FakeClock()
    prepared = ScriptedCall(fake, [1e-3] * 50)
    timing = time_calls(prepared, runs=7, warmup=WarmupPolicy(fixed=4), clock=fake.clock())
    assert timing.warmup_runs == 4
    assert len(timing.samples_s) == 7
    assert prepared.calls == 11


def test_time_budget_stops_early_but_keeps_at_least_one_run():
    fake = FakeClock()
    prepared = ScriptedCall(fake, [0.1] * 100)
    timing = time_calls(
        prepared, runs=50, warmup=WarmupPolicy(fixed=1), clock=fake.clock(), time_budget_s=0.35
    )
    assert len(timing.samples_s) == 4
    timing = time_calls(
        prepared, runs=50, warmup=WarmupPolicy(fixed=1), clock=fake.clock(), time_budget_s=1e-6
    )
    assert len(timing.samples_s) == 1


def test_calls_shorter_than_twenty_ticks_are_refused():
    fake = FakeClock(tick_ns=100)  # each reading advances 100 ns: the timer's tick
    prepared = ScriptedCall(fake, [1e-6] * 40)  # 1 us = 10 ticks
    with pytest.raises(MeasurementError, match="shorter than 20 ticks"):
        time_calls(prepared, runs=5, warmup=WarmupPolicy(fixed=3), clock=fake.clock())


def test_device_time_is_collected_for_every_sample():
    fake = FakeClock()
    prepared = ScriptedCall(fake, [2e-3] * 20, device=True)
    timing = time_calls(prepared, runs=5, warmup=WarmupPolicy(fixed=2), clock=fake.clock())
    assert timing.device_samples_s == [1e-3] * 5


def test_progress_is_reported_up_to_completion():
    fake = FakeClock()
    seen = []
    prepared = ScriptedCall(fake, [1e-3] * 400)
    time_calls(prepared, runs=250, warmup=WarmupPolicy(fixed=1), clock=fake.clock(),
               progress=lambda done, total: seen.append((done, total)))
    assert seen[-1] == (250, 250)
    assert all(total == 250 for _, total in seen) and len(seen) < 260


def test_real_clock_resolution_is_positive_and_sub_millisecond():
    resolution = PERF_COUNTER.resolution_s()
    assert 0 < resolution < 1e-3


def test_a_run_records_the_host_state_and_warns_when_the_machine_is_busy():
    from anebench.engines.numpy_engine import NumpyEngine
    from anebench.measure.warmup import WarmupPolicy
    from anebench.orchestration.session import RunOptions, measure_workload
    from anebench.workloads import Workload
    from fakehost import FakeHost

    workload = Workload("tiny", hidden=64, vocab=4096, dtype="fp32", seed=1)
    quiet = RunOptions(runs=5, warmup=WarmupPolicy(fixed=1), host=FakeHost(load=0.4, cores=2))
    record = measure_workload(NumpyEngine(), "cpu", workload, quiet)
    assert record.host.state.load_average_1m == 0.4 and record.host.state.busy is False
    assert record.host.cpu_model == "Fake CPU" and not any("busy machine" in w.text for w in record.warnings)
    busy = RunOptions(runs=5, warmup=WarmupPolicy(fixed=1), host=FakeHost(load=1.5, cores=2))
    record = measure_workload(NumpyEngine(), "cpu", workload, busy)
    assert record.host.state.busy and any(
        "load average 1.50 is above half the 2" in w.text and w.kind == "busy" for w in record.warnings
    )


def test_the_system_host_reads_its_state_without_privileges():
    from anebench.system.host import SYSTEM_HOST

    state = SYSTEM_HOST.state()
    assert state.load_average_1m is not None and state.load_average_1m >= 0  # Linux always has one
    assert state.busy == (state.load_average_1m > (SYSTEM_HOST.info().cores_logical or 1) / 2)
def test_the_too_short_check_takes_the_one_interpolated_median_of_the_warmup():
    fake = FakeClock(tick_ns=100)  # 20 ticks = 2 us
    # warm calls 0.6, 0.6, 2.6, 2.6 us: the interpolated median 1.6 us is too short
    # (the upper one, 2.6, was not)
    prepared = ScriptedCall(fake, [0.5e-6, 0.5e-6, 2.5e-6, 2.5e-6] + [2.5e-6] * 10)
    with pytest.raises(MeasurementError, match="a call takes 1600 ns"):
        time_calls(prepared, runs=5, warmup=WarmupPolicy(fixed=4), clock=fake.clock())
