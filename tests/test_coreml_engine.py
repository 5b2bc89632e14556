"""The Core ML engine's plumbing on Linux (a numpy stand-in for MLModel), and its macOS tests.

Only MLModel.predict and MLComputePlan need macOS. Everything around them — the preallocated inputs,
the order the split outputs are joined in, batch predicts, summed weight sets, the reference the
output check uses, the bytes a call reads, the placement arithmetic, the record — is tested here.
"""

from __future__ import annotations

import platform

import numpy as np
import pytest

from anebench.artifacts import BuildSpec, build_or_reuse
from anebench.artifacts.reference import ReferenceProgram
from anebench.engines import coreml_engine, get_engine
from anebench.engines.coreml_engine import CoreMLEngine, CoreMLPrepared, OpPlacement, summarize_placement
from anebench.measure.check import check_output
from anebench.measure.warmup import WarmupPolicy
from anebench.session import RunOptions, measure_workload
from anebench.system import preflight
from anebench.workloads import Workload

HIDDEN, VOCAB, SPLIT = 64, 1024, 128
TINY = Workload("tiny_head", HIDDEN, VOCAB, "fp16", seed=7)


class NumpyCoreML:
    """Stands in for MLModel: runs the bundle's own program in float64 (anebench.artifacts.reference) from
    the weights it stores, and returns fp16 outputs of the declared shapes."""

    def __init__(self, package, swap_outputs: bool = False):
        self.program = ReferenceProgram(package)
        self.swap_outputs = swap_outputs  # a broken model: logits1 and logits2 exchanged
        self.requests: list = []

    def _one(self, feed: dict) -> dict:
        result = self.program.predict(feed)
        if self.swap_outputs:
            result["logits1"], result["logits2"] = result["logits2"], result["logits1"]
        return result

    def predict(self, data):
        self.requests.append(data)
        return [self._one(d) for d in data] if isinstance(data, list) else self._one(data)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("coreml-engine-cache")


def prepared_for(cache, workload=TINY, quant=None, repeat=1, **model_kwargs) -> CoreMLPrepared:
    spec = BuildSpec.for_workload(workload, quant, repeat=repeat, max_split_rows=SPLIT)
    artifact = build_or_reuse(spec, cache)
    return CoreMLPrepared(workload, "ane", artifact, NumpyCoreML(artifact.package, **model_kwargs), repeat)


def test_fp16_output_is_w_at_x_in_split_order(cache):
    prepared = prepared_for(cache)
    prepared.call()
    output = prepared.output()
    assert output.shape == (1, VOCAB) and output.dtype == np.float32
    expected = TINY.inputs() @ TINY.weights.read_rows(0, VOCAB).astype(np.float64).T  # numpy, not the bundle
    assert np.allclose(output, expected, rtol=2e-2, atol=2e-3)
    check = check_output(prepared)
    assert check.passed and check.rows_checked == 768  # first, middle and last 256 rows
    assert prepared.weight_bytes == VOCAB * HIDDEN * 2 and prepared.run_dtype == "fp16"
    assert prepared.artifact_sha256 == prepared.artifact.weight_sha256 and prepared.compute_units == "CPU_AND_NE"


def test_the_output_check_catches_misordered_outputs(cache):
    prepared = prepared_for(cache, swap_outputs=True)
    prepared.call()
    check = check_output(prepared)
    assert not check.passed and check.relative_error > 0.5


def test_input_is_preallocated_once(cache):
    prepared = prepared_for(cache)
    prepared.call()
    prepared.call()
    first, second = prepared.model.requests
    assert first is second  # the same dict and array every call: nothing is built inside timing
    assert np.array_equal(first["hidden_states"].reshape(-1).astype(np.float32), TINY.inputs()[0])


def test_predicts_per_call_is_one_request_of_k_inputs(cache):
    workload = TINY.with_batch(3)
    prepared = prepared_for(cache, workload)
    prepared.call()
    request = prepared.model.requests[-1]
    assert isinstance(request, list) and len(request) == 3
    assert prepared.output().shape == (3, VOCAB)
    assert check_output(prepared).passed
    assert prepared.weight_bytes == 3 * VOCAB * HIDDEN * 2  # each of the K predicts reads every weight
    assert prepared.details["predicts_per_call"] == 3
    # The memory preflight counts the bundle once: a batch predict does not load K copies.
    assert CoreMLEngine().bytes_for(workload, "ane") == VOCAB * HIDDEN * 2
    assert CoreMLEngine(repeat=2).bytes_for(workload, "ane") == 2 * VOCAB * HIDDEN * 2


def test_repeat_sums_distinct_weight_sets_and_counts_them(cache):
    prepared = prepared_for(cache, repeat=3)
    prepared.call()
    assert check_output(prepared).passed
    assert prepared.weight_bytes == 3 * VOCAB * HIDDEN * 2 and prepared.details["weight_sets"] == 3
    summed = prepared.reference_rows(120, 140)  # spans two splits
    single = TINY.weights.read_rows(120, 140).astype(np.float64)
    assert summed.shape == single.shape and not np.allclose(summed, single)


@pytest.mark.parametrize("quant", ["lut6", "int8"])
def test_quantized_bundles_check_against_decoded_weights(cache, quant):
    prepared = prepared_for(cache, quant=quant)
    prepared.call()
    assert prepared.run_dtype == quant and "stored by Core ML as" in prepared.dtype_note
    assert check_output(prepared).passed
    decoded, source = prepared.reference_rows(0, 64), TINY.weights.read_rows(0, 64).astype(np.float64)
    assert not np.array_equal(decoded, source) and np.allclose(decoded, source, atol=0.02)


def test_lut6_catalog_workload_uses_its_own_quant(cache):
    lut_tiny = Workload("tiny_lut6", HIDDEN, VOCAB, "fp16", seed=7, quant="lut6")
    prepared = prepared_for(cache, lut_tiny)
    assert prepared.weight_bytes == VOCAB * HIDDEN * 6 // 8 + VOCAB // 8 * 64 * 2 == lut_tiny.stored_bytes


def test_placement_summary():
    all_ane = [OpPlacement("const", None), OpPlacement("conv", "ane", 0.9), OpPlacement("transpose", "ane", 0.1)]
    details, warnings = summarize_placement(all_ane)
    assert details["ane_op_share"] == 1.0 and details["ane_cost_share"] == 1.0 and warnings == []
    mixed = [OpPlacement("conv", "ane", 0.8), OpPlacement("conv", "ane", 0.1), OpPlacement("transpose", "cpu", 0.1),
             OpPlacement("squeeze", "gpu", None)]
    details, warnings = summarize_placement(mixed)
    assert details["ane_op_share"] == 0.5 and details["ane_cost_share"] == pytest.approx(0.9)
    assert details["ops_on_cpu"] == 1 and details["ops_on_gpu"] == 1
    assert len(warnings) == 1 and "2 of 4 ops fall back" in warnings[0] and "transpose on cpu" in warnings[0]
    assert "did not say" in summarize_placement([OpPlacement("conv", None)])[1][0]


def test_engine_on_linux_says_why_and_exits_2(capsys):
    if preflight.on_macos():
        pytest.skip(reason="this checks the non-macOS path")
    engine = get_engine("coreml")
    assert not engine.available() and "Core ML prediction needs macOS" in engine.available().reason
    assert engine.devices() == []
    from anebench.cli import main

    for args in (["run", "--engine", "coreml", "--no-save"], ["run", "-e", "coreml", "-d", "ane", "--no-save"]):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        assert exit_info.value.code == 2
        assert "Core ML prediction needs macOS" in capsys.readouterr().err


def test_coreml_is_first_in_preference_order():
    from anebench.engines import ENGINE_FACTORIES

    assert next(iter(ENGINE_FACTORIES)) == "coreml"


def test_prepare_and_measure_end_to_end_with_a_stand_in_model(tmp_path, monkeypatch):
    """The engine's prepare (cache, load, placement) and a whole record, with only predict faked."""
    monkeypatch.setattr(preflight, "coreml_problem", lambda: None)
    monkeypatch.setattr(preflight, "ane_problem", lambda: None)
    loaded = []

    def load(package, units):
        loaded.append(units)
        return NumpyCoreML(package)

    monkeypatch.setattr(coreml_engine, "load_model", load)
    monkeypatch.setattr(coreml_engine, "query_placement",
                        lambda model, units: [OpPlacement("conv", "ane", 0.95), OpPlacement("transpose", "cpu", 0.05)])
    engine = CoreMLEngine(cache_dir=tmp_path, repeat=2)
    assert engine.devices() == ["ane", "gpu", "cpu", "all"]
    workload = Workload("tiny_e2e", HIDDEN, 4096, "fp16", seed=3)
    options = RunOptions(runs=5, warmup=WarmupPolicy(fixed=1), mitigations=["repeat 2: test"])
    record = measure_workload(engine, "ane", workload, options)
    assert loaded == ["CPU_AND_NE"]
    assert record.engine.name == "coreml" and record.engine.compute_units == "CPU_AND_NE"
    assert record.workload.weight_bytes == 2 * 4096 * HIDDEN * 2
    assert record.workload.artifact_sha256 and len(record.workload.artifact_sha256) == 64
    assert record.engine.details["ane_op_share"] == 0.5 and record.engine.details["weight_sets"] == 2
    assert any("fall back from the Neural Engine" in w for w in record.warnings)
    assert record.method.mitigations == ["repeat 2: test"] and record.method.output_check.passed
    # The cpu device skips the placement query and loads with CPU_ONLY.
    measure_workload(engine, "cpu", workload, options)
    assert loaded[-1] == "CPU_ONLY"


def test_placement_query_missing_before_macos_14_4_is_a_warning_not_a_failure(tmp_path, monkeypatch):
    monkeypatch.setattr(preflight, "coreml_problem", lambda: None)
    monkeypatch.setattr(preflight, "ane_problem", lambda: None)
    monkeypatch.setattr(coreml_engine, "load_model", lambda package, units: NumpyCoreML(package))

    def old_macos(model, units):
        raise ImportError("cannot import name 'MLComputePlan'")

    monkeypatch.setattr(coreml_engine, "query_placement", old_macos)
    prepared = CoreMLEngine(cache_dir=tmp_path).prepare(TINY, "ane")
    assert prepared.warnings == [
        "placement: MLComputePlan unavailable (cannot import name 'MLComputePlan'); needs macOS 14.4+"
    ]
    assert "ane_op_share" not in prepared.details
    prepared.call()
    assert check_output(prepared).passed


# --- macOS (the GitHub Actions Apple-silicon runner) -------------------------------------------------


@pytest.mark.macos
@pytest.mark.parametrize("device", ["cpu", "ane"])
def test_macos_predict_of_a_tiny_bundle_equals_numpy(tmp_path, device):
    engine = CoreMLEngine(cache_dir=tmp_path)
    prepared = engine.prepare(TINY, device)
    try:
        prepared.call()
        expected = TINY.inputs() @ TINY.weights.read_rows(0, VOCAB).astype(np.float64).T
        assert np.allclose(prepared.output(), expected, rtol=2e-2, atol=5e-3)
        assert check_output(prepared).passed
    finally:
        prepared.close()


@pytest.mark.macos
def test_macos_placement_query_names_devices(tmp_path):
    engine = CoreMLEngine(cache_dir=tmp_path)
    artifact = engine.artifact(Workload("tiny_plan", 256, 4096, "fp16", seed=1))
    model = coreml_engine.load_model(artifact.package, "CPU_AND_NE")
    placements = coreml_engine.query_placement(model, "CPU_AND_NE")
    convs = [p for p in placements if p.op_type == "conv"]
    assert len(convs) == 1 and all(p.device in ("ane", "gpu", "cpu") for p in convs)
    details, _ = summarize_placement(placements)
    assert 0.0 <= details["ane_op_share"] <= 1.0


@pytest.mark.macos
def test_macos_runner_is_native_arm64_not_rosetta():
    assert preflight.under_rosetta() is False
    assert platform.machine() == "arm64" and preflight.apple_silicon()
    assert preflight.coreml_problem() is None and "ane" in CoreMLEngine().devices()


def test_bf16_source_is_stored_as_fp16_and_the_record_says_so(cache):
    workload = Workload("tiny_bf16", HIDDEN, VOCAB, "bf16", seed=7)
    prepared = prepared_for(cache, workload)
    prepared.call()
    assert prepared.run_dtype == "fp16" and "bf16 weights converted to fp16" in prepared.dtype_note
    assert check_output(prepared).passed
    assert prepared.weight_bytes == VOCAB * HIDDEN * 2
    assert CoreMLEngine().dtype_for(workload, "ane").note == "bf16 weights stored by Core ML as fp16"
