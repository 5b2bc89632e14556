"""GPU warmup: a time floor (clocks and heat take seconds), and the SM clock no longer rising."""

from __future__ import annotations

from anebench.measure.clock import FakeClock
from anebench.measure.timing import warm_up
from anebench.measure.warmup import GpuWarmupPolicy, WarmupPolicy, warmup_for


class SteadyCall:
    """A call that always takes ``seconds`` of fake time: steady from the first call."""

    def __init__(self, fake: FakeClock, seconds: float):
        self.fake, self.seconds, self.calls = fake, seconds, 0

    def call(self) -> None:
        self.calls += 1
        self.fake.advance(self.seconds)

    def device_seconds(self) -> None:
        return None


def test_gpu_warmup_lasts_at_least_two_seconds_where_the_default_stops_after_ten_calls():
    fake = FakeClock()
    samples, steady = warm_up(SteadyCall(fake, 3e-4), WarmupPolicy(), fake.clock())
    assert len(samples) == 10 and steady  # 3 ms: what a GPU got before
    fake = FakeClock()
    samples, steady = warm_up(SteadyCall(fake, 3e-4), GpuWarmupPolicy(), fake.clock())
    assert steady and 2.0 <= sum(samples) < 2.01


def test_gpu_warmup_waits_until_the_sm_clock_stops_rising():
    fake = FakeClock()

    def sm_clock():  # boosts by 100 MHz every 0.5 s until 3.5 s, then holds
        return 1200 + 100 * min(int(fake.t / 5e8), 7)

    policy = GpuWarmupPolicy(clock_mhz=sm_clock)
    samples, steady = warm_up(SteadyCall(fake, 1e-3), policy, fake.clock())
    assert steady and 4.2 <= sum(samples) <= 4.8  # flat over the last second of readings
    assert "SM clock no longer rising" in policy.describe()
    fake.t = 0  # the same policy object warms up again from scratch: it does not reuse old readings
    samples, steady = warm_up(SteadyCall(fake, 1e-3), policy, fake.clock())
    assert steady and 4.2 <= sum(samples) <= 4.8


def test_gpu_warmup_is_capped_and_an_unreadable_clock_leaves_the_floor_and_latency_rule():
    fake = FakeClock()
    samples, steady = warm_up(SteadyCall(fake, 1e-3), GpuWarmupPolicy(clock_mhz=lambda: None), fake.clock())
    assert steady and 2.0 <= sum(samples) < 2.01
    fake = FakeClock()
    rising = iter(range(1000, 10**9, 100))
    capped = GpuWarmupPolicy(clock_mhz=lambda: next(rising), max_seconds=5.0)
    samples, steady = warm_up(SteadyCall(fake, 1e-3), capped, fake.clock())
    assert not steady and 4.99 <= sum(samples) <= 5.01


def test_the_gpu_policy_is_chosen_for_cuda_devices_unless_a_count_was_asked_for():
    assert isinstance(warmup_for("cuda:1", WarmupPolicy()), GpuWarmupPolicy)
    assert warmup_for("cuda:0", WarmupPolicy(fixed=5)) == WarmupPolicy(fixed=5)
    assert warmup_for("cpu", WarmupPolicy()) == WarmupPolicy()
    assert warmup_for("mps", WarmupPolicy()) == WarmupPolicy()
