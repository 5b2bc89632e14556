"""The plausibility bound: a figure above the device's physical peak is refused, a normal one passes."""

from __future__ import annotations

import pytest

from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import MeasurementError
from anebench.measure.clock import FakeClock
from anebench.measure.warmup import WarmupPolicy
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.system.bounds import (
    CPU_GBPS,
    SCHEMA_LIMIT_GBPS,
    UNKNOWN_GPU_GBPS,
    check_plausible,
    plausibility_bound,
)
from anebench.workloads import Workload

GB = 10**9


def bound(device, gpu=None, chip=None, weight_bytes=GB, cache=50 * 2**20):
    return plausibility_bound(device, gpu_name=gpu, host_chip=chip, weight_bytes=weight_bytes,
                              cache_bytes=cache)


def test_bounds_come_from_the_catalog_or_a_stated_generous_rule():
    assert bound("cuda:0", "NVIDIA H200").gbps == pytest.approx(4800 * 1.05)
    assert bound("cuda:3", "NVIDIA A100-SXM4-80GB").gbps == pytest.approx(2039 * 1.05)
    assert bound("cuda:0", "NVIDIA H100 80GB HBM3").gbps == pytest.approx(3350 * 1.05)
    assert bound("cuda:0", "NVIDIA H100 PCIe").gbps == pytest.approx(2000 * 1.05)
    unknown = bound("cuda:0", "NVIDIA Future GPU")
    assert unknown.gbps == UNKNOWN_GPU_GBPS and "not in the chip catalog" in unknown.source
    assert bound("ane", chip="Apple M4 Pro").gbps == pytest.approx(273 * 1.05)
    assert bound("gpu", chip="Apple M4 Max").gbps == pytest.approx(546 * 1.05)  # the faster configuration
    assert "not published" in bound("ane", chip="Apple M5 Max").source
    assert bound("cpu").gbps == CPU_GBPS and "generous CPU bound" in bound("cpu").source


def test_weights_that_may_sit_in_a_cache_are_bounded_only_by_the_schema():
    in_l2 = bound("cuda:0", "NVIDIA H200", weight_bytes=100 * 2**20, cache=50 * 2**20)
    assert in_l2.gbps == SCHEMA_LIMIT_GBPS
    assert bound("ane", chip="Apple M4", weight_bytes=64 * 2**20, cache=None).gbps == SCHEMA_LIMIT_GBPS
    assert bound("ane", chip="Apple M4", weight_bytes=2**30, cache=None).gbps == pytest.approx(126)


def test_check_plausible_names_the_figure_and_the_bound_in_one_line():
    h200 = bound("cuda:1", "NVIDIA H200")
    check_plausible({"per-call figure": 4300.0, "device-time figure": None}, h200)
    with pytest.raises(MeasurementError) as caught:
        check_plausible({"per-call figure": 4300.0, "device-time figure": 61_000.0}, h200)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("device-time figure 61000.0 GB/s is above the plausibility bound of 5040 GB/s")
    assert "H200: 4800 GB/s published" in message


class Scaled(NumpyEngine):
    """numpy's call, but each call takes 1 ms of fake time and claims ``weight_bytes``."""

    def __init__(self, clock: FakeClock, weight_bytes: int):
        super().__init__()
        self.fake, self.claimed = clock, weight_bytes

    def prepare(self, workload, device):
        prepared = super().prepare(workload, device)
        inner = prepared.call

        def call():
            inner()
            self.fake.advance(1e-3)

        prepared.call = call
        prepared.weight_bytes = self.claimed
        return prepared


def measure(weight_bytes: int):
    fake = FakeClock()
    options = RunOptions(runs=5, warmup=WarmupPolicy(fixed=2), clock=fake.clock())
    return measure_workload(Scaled(fake, weight_bytes), "cpu", Workload("t", 64, 512, "fp32"), options)


def test_a_measured_figure_above_every_bound_is_refused_and_a_normal_one_recorded():
    refused = r"^per-call figure \(median wall clock\) 5\d{4}\.\d GB/s is above the plausibility bound"
    with pytest.raises(MeasurementError, match=refused):
        measure(50 * GB)  # 50,000 GB/s: above any CPU's (and any Apple chip's) bound
    record = measure(10 * GB // 1000)  # 10 GB/s
    assert record.gbps == pytest.approx(10, rel=0.01)
    assert record.plausibility.gbps >= 10 and record.plausibility.source
