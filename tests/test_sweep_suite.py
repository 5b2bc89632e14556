from dataclasses import replace

import pytest

from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import UserError
from anebench.measure.sweep import MiB
from anebench.orchestration.session import RunOptions, measure
from anebench.orchestration.suites import sweep as sweep_suite
from anebench.orchestration.suites.common import resized
from anebench.orchestration.suites.sweep import finish_sweep, plan_sweep, sweep_from_records
from anebench.workloads import Workload
from fakehost import FakeHost


def test_default_plan_spans_1_mib_to_32x_the_cache_so_the_fit_spans_8x():
    plan = plan_sweep(NumpyEngine(), "cpu", None, None, 12, cache_bytes=100 * MiB,
                      host=FakeHost(available_bytes=64 * 1024 * MiB))
    assert plan.sizes[0] == MiB and plan.sizes[-1] == 3200 * MiB
    past = [s for s in plan.sizes if s >= 400 * MiB]
    assert len(past) >= 6 and past[-1] / past[0] >= 8
    ratios = [b / a for a, b in zip(past, past[1:])]
    assert max(ratios) / min(ratios) < 1.01  # evenly log-spaced: none crowded
    assert any("spanning 8.0x" in note for note in plan.notes)
    short = plan_sweep(NumpyEngine(), "cpu", None, None, 12, cache_bytes=100 * MiB,
                       host=FakeHost(available_bytes=8 * 1024 * MiB))  # memory allows 2 GiB only
    assert short.sizes[-1] == 2048 * MiB and any("a quarter of the free memory" in n for n in short.notes)
    assert any("less than 8x" in note for note in short.notes)


def test_default_plan_never_takes_more_than_a_quarter_of_free_memory():
    host = FakeHost(available_bytes=4 * 1024 * MiB)
    plan = plan_sweep(NumpyEngine(), "cpu", None, None, 12, cache_bytes=None, host=host)
    assert plan.sizes[-1] == 1024 * MiB and plan.cache_bytes is None
    with pytest.raises(UserError, match="raise max_mb"):
        plan_sweep(NumpyEngine(), "cpu", None, None, 12, cache_bytes=1024 * MiB, host=host)


def test_resized_keeps_hidden_and_dtype_and_counts_run_bytes():
    base = Workload("llama_lm_head", 4096, 128256, "fp16")
    small = resized(base, 8 * MiB, "fp32")  # numpy streams fp32: 16 KiB per row
    assert small.hidden == 4096 and small.dtype == "fp16" and small.vocab == 512
    assert small.name == "lm_head:4096x512:fp16"


@pytest.fixture(scope="module")
def tiny_measurements():
    options = RunOptions(runs=3, suite="sweep")
    return [measure(NumpyEngine(), "cpu", Workload(f"w{v}", 64, v, "fp32"), options)
            for v in (1024, 2048, 4096)]


def timed_as(measurements, latencies, host=None):
    """The measurements with every call of a size taking ``latencies[vocab]``: the line the fit sees."""
    timed = []
    for m in measurements:
        samples = [latencies[m.workload.vocab]] * len(m.timing.samples_s)
        options = replace(m.options, host=host) if host is not None else m.options
        timed.append(replace(m, timing=replace(m.timing, samples_s=samples), options=options))
    return timed


def test_a_failed_fit_keeps_the_records_and_says_why(tiny_measurements):
    flat = timed_as(tiny_measurements, {1024: 1e-3, 2048: 1e-3, 4096: 1e-3})
    result = finish_sweep(flat, cache_bytes=None)
    assert result.analysis.fit is None and "does not grow" in result.error
    assert all(r.sweep.fit_error == result.error for r in result.records)
    assert sweep_from_records(result.records, "numpy", "cpu") is None


def test_a_good_fit_is_in_every_record_and_found_again(tiny_measurements):
    timed = timed_as(tiny_measurements, {1024: 1e-4, 2048: 2e-4, 4096: 4e-4})
    result = finish_sweep(timed, cache_bytes=None)
    assert result.error is None and len({r.id for r in result.records}) == 3
    assert [r.sweep.point for r in result.records] == [0, 1, 2]
    fit = sweep_from_records(result.records, "numpy", "cpu")
    assert fit.bandwidth_gbps == pytest.approx(
        64 * 1024 * 4 / 1e-4 / 1e9
    ) and fit.overhead_s * 1e6 == pytest.approx(0)


def test_a_quantized_head_is_refused_in_one_line_not_a_key_error():
    from anebench.engines.coreml_engine import CoreMLEngine
    from anebench.workloads import resolve_workload

    plan = sweep_suite.SweepPlan([MiB, 2 * MiB], None)
    with pytest.raises(UserError, match="'llama_lm_head_lut6' is quantized"):
        sweep_suite.sweep_workloads(CoreMLEngine(), "ane", resolve_workload("llama_lm_head_lut6"), plan)


def test_a_sweep_on_a_known_chip_fails_above_its_catalog_bandwidth_and_records_no_figures(tiny_measurements):
    # a clean line at 2.6 GB/s is fine on this host; on an "M1" host with a 1 GB/s catalog figure it is not
    from anebench.system import chips

    timed = timed_as(tiny_measurements, {1024: 1e-4, 2048: 2e-4, 4096: 4e-4}, FakeHost(chip="Apple M1"))
    original = chips.lookup_chip("M1")
    slow = chips.Chip(**{**original.__dict__, "bandwidth_gbps_min": 1.0, "bandwidth_gbps_max": 1.0})
    try:
        chips._index()[chips.normalize("Apple M1")] = slow
        result = finish_sweep(timed, cache_bytes=None)
    finally:
        chips._index()[chips.normalize("Apple M1")] = original
    assert result.analysis.fit is None and "physical bound of 1.0 GB/s (M1 memory bandwidth" in result.error
    assert all(r.sweep.fit is None and r.sweep.fit_error == result.error for r in result.records)
