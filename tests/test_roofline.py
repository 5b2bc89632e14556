import pytest

from anebench.measure.roofline import (
    MeasuredBatch,
    analyse_roofline,
    bytes_per_call,
    clearly_compute_bound,
    doubling_batches,
    flops_per_call,
    ridge_baseline,
)

VOCAB, HIDDEN = 32768, 4096
WEIGHT_BYTES = VOCAB * HIDDEN * 2  # fp16
MEMORY_S = WEIGHT_BYTES / 100e9  # 100 GB/s
PER_VECTOR_S = flops_per_call(VOCAB, HIDDEN, 1) / 10e12  # 10 TFLOP/s


def roof_latency(batch, overhead=5e-6):
    """An ideal roofline: the call takes the longer of the weight read and the FLOPs."""
    return overhead + max(MEMORY_S, batch * PER_VECTOR_S)


def test_flops_and_bytes_per_call():
    assert flops_per_call(VOCAB, HIDDEN, 4) == 2 * VOCAB * HIDDEN * 4
    assert bytes_per_call(100, vocab=10, hidden=5, batch=2, element_bytes=4) == 100 + 2 * 15 * 4
    assert doubling_batches(20) == [1, 2, 4, 8, 16]


def test_ideal_roofline_finds_the_ridge_and_the_peak():
    batches = doubling_batches(1024)
    latencies = [roof_latency(b) for b in batches]
    analysis = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2)
    true_ridge = MEMORY_S / PER_VECTOR_S  # 100 vectors: 10 TFLOP/s / 100 GB/s x 2 bytes / 2 FLOP
    assert true_ridge == pytest.approx(100)
    assert 100 < analysis.ridge_batch <= 256 and analysis.baseline_batch == 1
    assert analysis.compute_bound
    assert analysis.model_ridge_batch == pytest.approx(true_ridge, rel=0.05)
    assert analysis.peak_flop_per_s == pytest.approx(10e12, rel=0.01)
    assert analysis.memory_gbps == pytest.approx(100, rel=0.01)
    first, last = analysis.points[0], analysis.points[-1]
    assert first.bytes_per_flop > 100 * last.bytes_per_flop  # intensity grows with the batch
    data = analysis.as_dict()
    assert data["peak_tflop_per_s"] == pytest.approx(10, rel=0.01) and len(data["points"]) == len(batches)


def test_compute_bound_needs_near_linear_growth_over_two_doublings():
    assert not clearly_compute_bound([1, 2], [1.0, 2.0])
    assert not clearly_compute_bound([1, 2, 4], [1.0, 1.0, 1.0])
    assert not clearly_compute_bound([1, 2, 4], [1.0, 1.0, 2.0])
    assert clearly_compute_bound([1, 2, 4, 8], [1.0, 1.1, 2.0, 3.9])
    assert not clearly_compute_bound([1, 2, 4], [23.9, 92.7, 85.0])  # numpy's gemv -> gemm switch here
    assert not clearly_compute_bound([1, 2, 4, 8], [1.0, 2.0, 3.9, 5.0])
    # one noisy step (x1.56 then x1.95) still counts: the numpy run on this machine, batches 128-512
    assert clearly_compute_bound([128, 256, 512], [0.333, 0.519, 1.015])
    assert not clearly_compute_bound([1, 2, 8], [1.0, 2.0, 8.0])  # not two doublings


def test_a_kernel_switch_at_batch_2_is_not_the_ridge():
    batches = [1, 2, 4, 8, 16, 32, 64]
    latencies = [0.1, 0.6, 0.6, 0.61, 0.62, 1.0, 1.9]  # gemv at 1, gemm from 2: flat until 16
    assert ridge_baseline(batches, latencies) == 1
    analysis = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 4)
    assert analysis.ridge_batch == 32 and analysis.baseline_batch == 2


def test_noise_neither_hides_the_kernel_switch_nor_moves_the_ridge_early():
    # numpy on this shared machine: batch 4 came out 27% slow, batch 16 fast; the ridge is where growth stays
    batches = [1, 2, 4, 8, 16, 32, 64, 128, 256]
    latencies = [21.8, 91.1, 115.6, 99.5, 87.2, 139.1, 159.1, 333.4, 466.8]
    assert batches[ridge_baseline(batches, latencies)] == 2
    analysis = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 4)
    assert analysis.ridge_batch == 32


def test_growth_from_batch_2_on_is_not_a_kernel_switch():
    batches = [1, 2, 4, 8, 16]
    latencies = [1.0, 1.5, 3.0, 6.0, 12.0]  # grows throughout: already compute-bound
    assert ridge_baseline(batches, latencies) == 0
    assert analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2).ridge_batch == 2


def test_never_growing_latency_has_no_ridge():
    batches = [1, 2, 4]
    analysis = analyse_roofline(batches, [1e-3] * 3, VOCAB, HIDDEN, WEIGHT_BYTES, 2)
    assert analysis.ridge_batch is None and not analysis.compute_bound and analysis.model_ridge_batch is None


def test_a_roofline_must_start_at_batch_1():
    with pytest.raises(ValueError):
        analyse_roofline([2, 4], [1.0, 2.0], VOCAB, HIDDEN, WEIGHT_BYTES, 2)


def test_a_lut6_head_moves_fp16_activations():
    from anebench.engines.coreml_engine import CoreMLEngine
    from anebench.orchestration.suites.roofline import (
        activation_bytes,
        activation_element_bytes,
        check_activations_fit,
    )
    from anebench.workloads import resolve_workload

    lut6 = resolve_workload("llama_lm_head_lut6").with_batch(2)
    run_dtype = CoreMLEngine().dtype_for(lut6, "ane").run_dtype
    assert run_dtype == "lut6" and activation_element_bytes(lut6, run_dtype) == 2
    assert activation_element_bytes(lut6, "fp32") == 4
    assert activation_bytes(lut6, run_dtype) == 2 * (4096 + 128256) * 4  # counted as fp32 at least
    check_activations_fit(CoreMLEngine(), "ane", lut6)  # a KeyError on 'lut6' before


def test_a_ridge_that_fails_its_gates_is_reported_as_failed_with_no_ridge():
    # latency stepped up at the last batch only: nothing confirms it, and compute-bound was not reached
    batches = [1, 2, 4, 8]
    analysis = analyse_roofline(batches, [1.0, 1.0, 1.05, 1.4], VOCAB, HIDDEN, WEIGHT_BYTES, 2)
    assert analysis.ridge_batch is None and analysis.model_ridge_batch is None
    assert "batch 8 is the last measured" in analysis.ridge_error
    assert "compute-bound growth" in analysis.ridge_error
    assert analysis.as_dict()["ridge_error"] == analysis.ridge_error


def test_a_ridge_over_an_impossible_batch_1_bandwidth_fails_on_the_physical_bound():
    batches = doubling_batches(1024)
    latencies = [roof_latency(b) for b in batches]  # batch 1 at 100 GB/s
    ok = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2, (120.0, "M4 memory bandwidth"))
    assert ok.ridge_batch is not None and ok.ridge_error is None
    bad = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2, (68.25, "M1 memory bandwidth"))
    assert bad.ridge_batch is None and "physical bound of 68.2 GB/s (M1 memory bandwidth)" in bad.ridge_error


def _measured(batches, latencies, spread=0.01, steady=True, samples=30):
    return [MeasuredBatch(b, t, t * (1 - spread), t * (1 + spread), steady, samples)
            for b, t in zip(batches, latencies)]


def test_the_ridge_is_refused_on_points_that_fall_unsteady_or_are_too_few():
    """The issue's roofline: latencies 0.112, 0.670, 1.12, 0.590, 0.712 s, warmup unsteady in 6 of 11
    points, and still 'ridge at batch 16'. Each data gate now refuses it, naming why."""
    batches = doubling_batches(1024)
    latencies = [roof_latency(b) for b in batches]
    clean = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2,
                             measured=_measured(batches, latencies))
    assert clean.ridge_batch is not None and clean.ridge_error is None
    bumpy = list(latencies)
    bumpy[3] = latencies[3] * 1.6  # batch 8 slow, batch 16 back down: far beyond +-1%
    falls = analyse_roofline(batches, bumpy, VOCAB, HIDDEN, WEIGHT_BYTES, 2,
                             measured=_measured(batches, bumpy))
    assert falls.ridge_batch is None and "latency falls from batch 8" in falls.ridge_error
    wide = analyse_roofline(batches, bumpy, VOCAB, HIDDEN, WEIGHT_BYTES, 2,
                            measured=_measured(batches, bumpy, spread=0.5))  # within the intervals
    assert "latency falls" not in (wide.ridge_error or "")
    unsteady = _measured(batches, latencies)
    unsteady[2] = MeasuredBatch(4, latencies[2], None, None, False, 30)
    refused = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2, measured=unsteady)
    assert refused.ridge_batch is None and "warmup never became steady at batch 4" in refused.ridge_error
    few = analyse_roofline(batches, latencies, VOCAB, HIDDEN, WEIGHT_BYTES, 2,
                           measured=_measured(batches, latencies, samples=4))
    assert few.ridge_batch is None and "fewer than 10 timed calls" in few.ridge_error
