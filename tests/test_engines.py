import importlib.util

import numpy as np
import pytest

from anebench.engines import best_engine, get_engine, resolve_device, usable_engine
from anebench.errors import MeasurementError, UserError
from anebench.measure.check import check_output
from anebench.measure.warmup import WarmupPolicy
from anebench.orchestration.session import RunOptions, measure_workload, verify_output
from anebench.workloads import Workload

ENGINES_HERE = [("numpy", "cpu"), ("torch", "cpu"), ("mlx", "cpu")]


@pytest.mark.parametrize("engine_name, device", ENGINES_HERE)
@pytest.mark.parametrize("dtype", ["fp16", "fp32", "bf16"])
@pytest.mark.parametrize("batch", [1, 3])
def test_each_engine_computes_w_times_x(engine_name, device, dtype, batch):
    workload = Workload("t", hidden=96, vocab=1000, dtype=dtype, seed=3, batch=batch)
    engine = usable_engine(engine_name)
    prepared = engine.prepare(workload, device)
    try:
        prepared.call()
        out = prepared.output()
        assert out.shape == (batch, 1000)
        expected = (
            workload.inputs().astype(np.float64) @ workload.weights.read_rows(0, 1000).astype(np.float64).T
        )
        np.testing.assert_allclose(out, expected, rtol=0, atol=1e-4 * np.abs(expected).max())
        check = check_output(prepared)
        assert check.passed and check.rows_checked == 768  # first, middle and last 256 rows
        assert prepared.weight_bytes == 96 * 1000 * 4  # CPU engines stream fp32
        if dtype != "fp32":
            assert "streamed as fp32" in prepared.dtype_note
        else:
            assert prepared.dtype_note is None
    finally:
        prepared.close()


def test_output_check_catches_an_engine_that_does_not_compute(small_workload):
    prepared = get_engine("numpy").prepare(small_workload, "cpu")
    prepared.call()
    prepared.output()[:] = 0.0  # as if the call had been skipped
    check = check_output(prepared)
    assert not check.passed and check.relative_error == pytest.approx(1.0)

    prepared.call = lambda: None  # a call that does nothing
    with pytest.raises(MeasurementError, match="output check failed"):
        verify_output(prepared)


def test_output_check_catches_wrong_rows(small_workload):
    prepared = get_engine("numpy").prepare(small_workload, "cpu")
    prepared.call()
    prepared.output()[0, :] = np.roll(prepared.output()[0, :], 1)
    assert not check_output(prepared).passed


def test_measure_workload_makes_a_complete_record(small_workload):
    options = RunOptions(runs=20, warmup=WarmupPolicy(fixed=2))
    record = measure_workload(get_engine("numpy"), "cpu", small_workload, options)
    assert record.id == record.content_id()
    assert record.method.runs == 20 and len(record.samples_s) == 20
    assert record.method.warmup_runs == 2 and record.method.warmup_policy == "fixed: 2 calls"
    assert record.method.output_check.passed
    assert record.workload.fingerprint == small_workload.streamed_fingerprint(record.engine.run_dtype)
    assert record.workload.weight_bytes == 64 * 1024 * 4
    assert record.gbps == pytest.approx(record.workload.weight_bytes / record.summary.median / 1e9)
    assert any(w.text.startswith("cache-resident") and w.kind == "cache-resident" for w in record.warnings)
    assert record.device_samples_s is None and "wall clock only" in record.device_time
    assert record.engine.details.get("blas_threads")


def test_registry_errors_name_what_is_valid():
    with pytest.raises(UserError, match="unknown engine 'tensorflow'; valid: .*numpy"):
        get_engine("tensorflow")
    with pytest.raises(
        UserError, match="device 'cuda:7' is not available for engine 'numpy'; valid here: cpu"
    ):
        resolve_device(get_engine("numpy"), "cuda:7")


def test_best_engine_without_an_accelerator_is_numpy_on_the_cpu(monkeypatch):
    """The host's facts are stated, not assumed: a Linux host whose mlx and torch have only a CPU."""
    from anebench.engines import ENGINE_FACTORIES
    from anebench.engines.mlx_engine import MlxEngine
    from anebench.engines.torch_engine import TorchEngine
    from fakehost import pretend_linux_host

    def cpu_only(engine_class):
        class CpuOnly(engine_class):
            def devices(self):
                return ["cpu"]

        return CpuOnly

    pretend_linux_host(monkeypatch)
    registry = {**ENGINE_FACTORIES, "mlx": cpu_only(MlxEngine), "torch": cpu_only(TorchEngine)}
    engine, device = best_engine(registry)
    assert device == "cpu" and engine.name == "numpy"


def test_best_engine_on_an_apple_silicon_mac_is_core_ml_on_the_neural_engine(monkeypatch):
    from fakehost import pretend_mac_host

    if importlib.util.find_spec("coremltools") is None:
        pytest.skip(reason="coremltools (the coreml extra) is not installed")
    pretend_mac_host(monkeypatch)  # native arm64 on macOS 15.5: Core ML reachable
    engine, device = best_engine()
    assert (engine.name, device) == ("coreml", "ane")


@pytest.mark.cuda
def test_torch_cuda_streams_the_workload_dtype_with_device_time():
    workload = Workload("t", hidden=1024, vocab=65536, dtype="fp16", seed=3)
    engine = get_engine("torch")
    device = next(d for d in engine.devices() if d.startswith("cuda"))
    assert engine.free_memory(device) > workload.weight_bytes
    options = RunOptions(runs=20, warmup=WarmupPolicy(fixed=3))
    record = measure_workload(engine, device, workload, options)
    assert record.engine.run_dtype == "fp16" and record.engine.dtype_note is None
    assert record.workload.weight_bytes == workload.weight_bytes
    assert record.method.output_check.passed
    assert len(record.device_samples_s) == 20 and record.device_gbps > 0
    assert record.device_time == "CUDA events around each call"
    assert record.engine.details["gpu"]


def test_memory_preflight_uses_the_devices_own_free_memory():
    from anebench.engines.numpy_engine import NumpyEngine
    from anebench.orchestration.preflight import preflight_memory

    class FullGpu(NumpyEngine):
        def free_memory(self, device):
            return 0  # a device with no memory left: not "unknown", so host memory must not stand in

    workload = Workload("t", hidden=64, vocab=256, dtype="fp32")
    with pytest.raises(UserError, match="only 0.00 GB is free"):
        preflight_memory(FullGpu(), "cpu", workload)
    preflight_memory(NumpyEngine(), "cpu", workload)  # host memory decides where the engine has no answer
