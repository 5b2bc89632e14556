"""The CUDA path of the torch engine, on a fake multi-GPU torch: device guard, streams, streaming figures."""

from __future__ import annotations

import sys

import pytest

from anebench.engines.torch_engine import TorchEngine
from anebench.errors import MeasurementError
from anebench.measure.warmup import WarmupPolicy
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.workloads import Workload
from fake_nvml import Board, fake_nvml
from fake_torch import DISPATCH_S, FakeTorch

WORKLOAD = Workload("t", hidden=64, vocab=4096, dtype="fp16", seed=3)  # 524,288 weight bytes


def work_s(fake: FakeTorch) -> float:
    return WORKLOAD.weight_bytes / fake.bandwidth


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1", "cuda:2"])
def test_each_call_and_its_events_run_on_the_weights_device(device):
    fake = FakeTorch(devices=3, bandwidth=5e9)
    prepared = TorchEngine(torch_module=fake).prepare(WORKLOAD, device)
    fake.log.clear()
    prepared.call()
    index = int(device[-1])
    # events stamped by the weights' device's stream, work on that device, issued under its guard
    assert fake.log == [("event", index, index), ("work", index, index), ("event", index, index)]
    assert fake.current == 0  # the guard is restored
    # the events bracket the work (plus its dispatch), not only the queueing on another device
    assert prepared.device_seconds() == pytest.approx(work_s(fake) + DISPATCH_S, rel=0.02)
    assert prepared.details["gpu_uuid"] == fake.uuids[index]


def test_stream_seconds_back_to_back_hides_dispatch_and_a_graph_hides_more():
    fake = FakeTorch(bandwidth=5e9)  # 105 us of work per call, 20 us of dispatch
    prepared = TorchEngine(torch_module=fake).prepare(WORKLOAD, "cuda:1")
    assert prepared.stream_seconds(50) == pytest.approx(work_s(fake), rel=0.01)
    fast = FakeTorch(bandwidth=1e12)  # 0.5 us of work: the host's dispatch is the limit
    quick = TorchEngine(torch_module=fast).prepare(WORKLOAD, "cuda:1")
    back_to_back = quick.stream_seconds(200)
    graph = quick.stream_seconds(200, graph=True)
    assert back_to_back == pytest.approx(DISPATCH_S, rel=0.05)
    assert graph < back_to_back / 5
    assert {entry[1] for entry in fast.log} == {1}  # capture, replays and events all on cuda:1
    assert "captured" in quick.details["cuda_graph"]


def test_stream_seconds_is_none_off_cuda():
    prepared = TorchEngine().prepare(WORKLOAD, "cpu")
    assert prepared.stream_seconds(10) is None and prepared.stream_seconds(10, graph=True) is None


def test_a_gpu_record_has_streaming_figures_state_warmup_floor_and_its_bound(monkeypatch):
    fake = FakeTorch(devices=2, bandwidth=5e9)
    board = Board(uuid=f"GPU-{fake.uuids[1]}")
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml([Board(uuid=f"GPU-{fake.uuids[0]}"), board]))
    record = measure_workload(TorchEngine(torch_module=fake), "cuda:1", WORKLOAD,
                              RunOptions(runs=20, clock=fake.clock))
    gpu = record.gpu
    assert gpu.headline == "per-call" and "decode step" in gpu.headline_reason
    assert [s.method for s in gpu.streaming] == ["back-to-back", "cuda-graph"]
    assert gpu.streaming[0].gbps == pytest.approx(5.0, rel=0.02)  # the fake's bandwidth, no dispatch
    assert record.gbps < gpu.streaming[0].gbps  # per call pays dispatch and the sync
    assert gpu.identity.uuid == fake.uuids[1] and gpu.identity.driver_version == "570.86.15"
    assert gpu.state_before.sm_clock_mhz == 1980 and gpu.state_after.power_limit_w == 700
    assert record.method.warmup_policy.startswith("GPU: at least 2 s")
    assert record.method.warmup_runs * record.summary.median >= 2.0  # the time floor, not 10 calls
    assert record.plausibility.gbps == pytest.approx(4800 * 1.05)
    assert "H200" in record.plausibility.source
    assert not any("throttled" in w.text for w in record.warnings)


def test_a_figure_above_the_gpus_datasheet_is_refused():
    fake = FakeTorch(bandwidth=1e13, name="NVIDIA L4", dispatch_s=1e-7)  # 300 GB/s on its datasheet
    refused = r"device-time figure [0-9.]+ GB/s is above the plausibility bound of 315 GB/s \(L4"
    with pytest.raises(MeasurementError, match=refused):
        measure_workload(TorchEngine(torch_module=fake), "cuda:0", WORKLOAD,
                         RunOptions(runs=20, clock=fake.clock, warmup=WarmupPolicy(fixed=3)))


def test_events_on_the_current_device_instead_of_the_weights_are_caught():
    """The old call(): events recorded without a stream land on cuda:0 while the work runs on cuda:1."""
    fake = FakeTorch(bandwidth=5e9)
    prepared = TorchEngine(torch_module=fake).prepare(WORKLOAD, "cuda:1")
    start, end = fake.cuda.Event(), fake.cuda.Event()
    start.record()
    prepared._matvec(fake)
    end.record()
    end.synchronize()
    assert [e[1] for e in fake.log[-3:]] == [0, 1, 0]
    assert start.elapsed_time(end) / 1e3 < work_s(fake) / 3  # what the old code timed: the queueing only


@pytest.mark.cuda
def test_every_visible_gpu_times_its_own_work():
    """On real GPUs: with events on the wrong device the event time of cuda:1+ collapses to the queueing."""
    engine = TorchEngine()
    workload = Workload("t", hidden=4096, vocab=32768, dtype="fp16", seed=3)  # 268 MB: >> any L2
    for device in [d for d in engine.devices() if d.startswith("cuda")]:
        record = measure_workload(engine, device, workload, RunOptions(runs=30, warmup=WarmupPolicy(fixed=5)))
        assert record.device_summary.median > 0.5 * record.summary.median, device
        assert record.gpu.streaming and record.gpu.streaming[0].gbps <= record.plausibility.gbps
