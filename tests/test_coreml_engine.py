"""The Core ML engine's plumbing on Linux (a numpy stand-in for MLModel), and its macOS tests.

Only MLModel.predict and MLComputePlan need macOS. Everything around them — the preallocated inputs,
the order the split outputs are joined in, batch predicts, summed weight sets, the reference the
output check uses, the bytes a call reads, the placement arithmetic, the record — is tested here.
"""

from __future__ import annotations

import platform
import time
import types
import weakref

import numpy as np
import pytest

from anebench.artifacts import BuildSpec, build_or_reuse
from anebench.engines import coreml_engine, coreml_runtime, get_engine
from anebench.engines.coreml_engine import CoreMLEngine, CoreMLPrepared, OpPlacement, summarize_placement
from anebench.engines.coreml_runtime import CoreMLBinding
from anebench.errors import MeasurementError, UserError
from anebench.measure.check import check_output
from anebench.measure.warmup import WarmupPolicy
from anebench.model import RecordWarning
from anebench.orchestration.mitigations import UsedMitigations
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.system import preflight
from anebench.workloads import Workload
from fake_coreml import NN_OUTPUTS_ERROR, FakeMLModel
from fakehost import pretend_mac_host
from fakepipeline import state_coreml

HIDDEN, VOCAB, SPLIT = 64, 1024, 128
TINY = Workload("tiny_head", HIDDEN, VOCAB, "fp16", seed=7)


def NumpyCoreML(package, swap_outputs: bool = False) -> FakeMLModel:  # noqa: N802 - the former class
    """MLModel as the binding behaves (tests/fake_coreml.py), computing the bundle's own program."""
    return FakeMLModel(package, swap_outputs=swap_outputs)


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
    assert (
        prepared.artifact_sha256 == prepared.artifact.weight_sha256 and prepared.compute_units == "CPU_AND_NE"
    )


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
    all_ane = [
        OpPlacement("const", None),
        OpPlacement("conv", "ane", 0.9),
        OpPlacement("transpose", "ane", 0.1),
    ]
    details, warnings = summarize_placement(all_ane, "ane")
    assert details["ane_op_share"] == 1.0 and details["ane_cost_share"] == 1.0 and warnings == []
    assert details["asked_op_share"] == 1.0 and details["placement_asked"] == "ane"
    mixed = [
        OpPlacement("conv", "ane", 0.8),
        OpPlacement("conv", "ane", 0.1),
        OpPlacement("transpose", "cpu", 0.1),
        OpPlacement("squeeze", "gpu", None),
    ]
    details, warnings = summarize_placement(mixed, "ane")
    assert details["ane_op_share"] == 0.5 and details["ane_cost_share"] == pytest.approx(0.9)
    assert details["ops_on_cpu"] == 1 and details["ops_on_gpu"] == 1 and details["ops_on_ane"] == 2
    assert len(warnings) == 1 and "2 of 4 ops fall back" in warnings[0] and "transpose on cpu" in warnings[0]
    assert "did not say" in summarize_placement([OpPlacement("conv", None)], "ane")[1][0]
    assert summarize_placement([OpPlacement("conv", None)], "ane")[0]["ops_unplaced"] == 1


# A LUT bundle's plan: the decompression ops (constexpr_*) are placed on the CPU at load time.
LUT_PLAN = [OpPlacement("const", None), OpPlacement("constexpr_lut_to_dense", "cpu", 0.0),
            OpPlacement("constexpr_lut_to_dense", "cpu", 0.0), OpPlacement("conv", "ane", 0.45),
            OpPlacement("conv", "ane", 0.45), OpPlacement("transpose", "ane", 0.1)]


def test_constexpr_ops_do_not_count_against_the_asked_unit():
    details, warnings = summarize_placement(LUT_PLAN, "ane")
    assert warnings == [] and details["ops_constant"] == 3
    assert details["ops_on_ane"] == 3 and details["ops_on_cpu"] == 0 and details["ane_op_share"] == 1.0


@pytest.mark.parametrize("asked,name", [("gpu", "the GPU"), ("cpu", "the CPU"), ("ane", "the Neural Engine")])
def test_placement_is_judged_against_the_unit_asked_for(asked, name):
    plan = [OpPlacement("constexpr_lut_to_dense", "cpu"), OpPlacement("conv", "gpu", 0.6),
            OpPlacement("conv", "cpu", 0.3), OpPlacement("transpose", "ane", 0.1)]
    details, warnings = summarize_placement(plan, asked)
    assert (details["ops_on_ane"], details["ops_on_gpu"], details["ops_on_cpu"]) == (1, 1, 1)
    assert details["placement_asked"] == asked and details["asked_op_share"] == round(1 / 3, 4)
    (warning,) = warnings
    assert f"2 of 3 ops fall back from {name}" in warning and f"on {asked}" not in warning
    assert "constexpr" not in warning


def test_placement_for_all_keeps_the_counts_without_a_warning():
    plan = [
        OpPlacement("conv", "gpu", 0.6),
        OpPlacement("conv", "cpu", 0.3),
        OpPlacement("transpose", "ane", 0.1),
    ]
    details, warnings = summarize_placement(plan, "all")
    assert warnings == [] and "asked_op_share" not in details
    assert (details["ops_on_ane"], details["ops_on_gpu"], details["ops_on_cpu"]) == (1, 1, 1)
    assert details["ane_cost_share"] == pytest.approx(0.1)
    with pytest.raises(ValueError, match="not a Core ML device"):
        summarize_placement(plan, "npu")


def test_placement_unavailable_names_the_cause():
    error = ImportError("No module named 'coremltools.models.compute_plan'")
    assert coreml_engine.placement_unavailable(error, "8.0").endswith("needs coremltools 8.1+ (this is 8.0)")
    assert coreml_engine.placement_unavailable(error, "7.2b1").endswith(
        "needs coremltools 8.1+ (this is 7.2b1)"
    )
    # anebench needs macOS 15 for Core ML: "needs macOS 14.4+" would send a user on 15+ nowhere.
    for version in ("8.1", "9.0"):
        warning = coreml_engine.placement_unavailable(error, version)
        assert "14.4" not in warning and "MLComputePlan unavailable (No module named" in warning
        assert warning.endswith(f"coremltools {version} on this macOS could not build a compute plan")


# --- a model Core ML did not load ---------------------------------------------------------------------


class UnloadedModel:
    """What coremltools' MLModel returns when loading fails: no proxy; the error kept, a warning given."""

    def __init__(self, error: Exception | None = None):
        self.__proxy__ = None
        self._framework_error = error

    def get_compiled_model_path(self):  # as MLModel: a plain Exception, the first thing prepare asks
        raise Exception("This model was not loaded or compiled with the Core ML Framework.")  # noqa: TRY002


def test_a_loaded_model_passes_the_check(tmp_path):
    loaded = UnloadedModel()
    loaded.__proxy__ = object()
    coreml_runtime.check_loaded(loaded, tmp_path / "head.mlpackage", ["some warning"])


@pytest.mark.parametrize(
    "model,messages,imported,reason",
    [
        (
            UnloadedModel(RuntimeError("Error compiling model: unsupported op 'constexpr_lut_to_dense'")),
            ["You will not be able to run predict() on this Core ML model."],
            [],
            "Error compiling model: unsupported op 'constexpr_lut_to_dense'",
        ),
        (
            UnloadedModel(),
            ["You will not be able to run predict() on this Core ML model. Underlying\nexception: x"],
            [],
            "You will not be able to run predict() on this Core ML model. Underlying\nexception: x",
        ),
        (
            UnloadedModel(),
            [],
            ["Torch version 2.13 has not been tested", "Failed to load _MLModelProxy: no libcoremlpython"],
            "coremltools cannot reach Core ML from this Python "
            "(Failed to load _MLModelProxy: no libcoremlpython)",
        ),
        (UnloadedModel(), [], [], "no reason given"),
    ],
    ids=["framework error", "warning", "no binding", "nothing said"],
)
def test_a_model_that_did_not_load_is_one_line_naming_the_bundle(tmp_path, capsys, model, messages, imported,
                                                                    reason):
    package = tmp_path / "tiny_head-fp16.mlpackage"
    with pytest.raises(UserError) as error:
        coreml_runtime.check_loaded(model, package, [m.replace("\\n", "\n") for m in messages], imported)
    text = str(error.value)
    assert "\n" not in text and text.startswith(f"Core ML could not load the bundle {package}: ")
    assert " ".join(reason.replace("\\n", " ").split()) in text


def test_a_specification_newer_than_core_ml_is_named_in_the_reason(tmp_path):
    model = UnloadedModel()
    model._spec = types.SimpleNamespace(specificationVersion=9)
    with pytest.raises(UserError, match=r"no reason given\); the bundle is specification version 9"):
        coreml_runtime.check_loaded(model, tmp_path / "head.mlpackage", [])


def test_prepare_of_a_bundle_that_does_not_load_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))

    def load(package, units, warnings_out=None):  # load_model's own check, on what MLModel would return
        model = UnloadedModel(RuntimeError("Error in declaring network."))
        coreml_runtime.check_loaded(model, package, ["You will not be able to run predict()"])
        return model

    state_coreml(monkeypatch, load_model=load)
    from anebench.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "-e", "coreml", "-d", "gpu", "-w", "lm_head:64x1024", "--no-save"])
    assert exit_info.value.code == 2
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error" in line]  # below the progress
    assert line.startswith("error: Core ML could not load the bundle") and ".mlpackage" in line
    assert "Error in declaring network." in line


def test_loading_a_bundle_where_coremltools_has_no_core_ml_is_one_line(cache):
    """The real load_model and coremltools' MLModel, off macOS: MLModel returns a model without a proxy
    (it does not raise), and the error names the bundle and the binding that did not load."""
    if preflight.on_macos():
        pytest.skip(reason="on macOS the bundle loads")
    artifact = build_or_reuse(BuildSpec.for_workload(TINY, max_split_rows=SPLIT), cache)
    with pytest.raises(UserError) as error:
        coreml_runtime.load_model(artifact.package, "CPU_ONLY", [])
    assert str(error.value).startswith(f"Core ML could not load the bundle {artifact.package}: coremltools "
                                       "cannot reach Core ML from this Python (Failed to load _MLModelProxy")


def test_a_bundle_coremltools_cannot_read_is_one_line(tmp_path):
    broken = tmp_path / "broken.mlpackage"
    broken.mkdir()
    (broken / "Manifest.json").write_text("{ not json")
    with pytest.raises(UserError) as error:
        coreml_runtime.load_model(broken, "CPU_ONLY", [])
    assert str(error.value).startswith(f"Core ML could not load the bundle {broken}: ")
    assert "\n" not in str(error.value)


def test_coremltools_import_messages_are_kept_not_printed_and_the_logger_is_not_muted():
    import logging

    from anebench.artifacts import _coremltools

    _coremltools.coremltools()
    assert logging.getLogger("coremltools").level in (logging.NOTSET, logging.WARNING)
    assert logging.getLogger("coremltools").getEffectiveLevel() <= logging.WARNING
    with _coremltools.captured_messages() as messages:
        logging.getLogger("coremltools.models").warning("cannot load %s", "the model")
        import warnings

        warnings.warn("You will not be able to run predict()", RuntimeWarning, stacklevel=1)
        warnings.warn("old API", DeprecationWarning, stacklevel=1)
    assert messages == ["cannot load the model", "You will not be able to run predict()"]
    assert logging.getLogger("coremltools").propagate


# --- Core ML's own duration of each predict, beside wall clock -----------------------------------------


def GilHoldingCoreML(package, hold_us: int = 3000, reported: float = 1.0, proxy: bool = True):  # noqa: N802
    """predict holds the GIL for ``hold_us`` as coremltools' binding does, and the proxy reports the
    duration of the predict body scaled by ``reported`` (1: a truthful clock); ``proxy=False``: an older
    coremltools without the duration getter."""
    return FakeMLModel(package, hold_us=hold_us, reported=reported, duration=proxy)


def stand_in_engine(monkeypatch, make_model):
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    state_coreml(monkeypatch, load_model=lambda package, units, warnings_out=None: make_model(package),
                 query_placement=lambda model, units: [OpPlacement("conv", "ane", 1.0)])


def test_core_ml_duration_is_recorded_beside_wall_clock_for_every_sample(tmp_path, monkeypatch):
    stand_in_engine(monkeypatch, lambda package: GilHoldingCoreML(package))
    options = RunOptions(runs=12, warmup=WarmupPolicy(fixed=2))
    record = measure_workload(CoreMLEngine(cache_dir=tmp_path), "ane", TINY, options)
    assert len(record.device_samples_s) == len(record.samples_s) == 12
    assert all(0.003 <= d <= w for d, w in zip(record.device_samples_s, record.samples_s, strict=True))
    assert record.device_time.startswith("Core ML prediction duration (mach_absolute_time around "
                                         "predictionFromFeatures")
    assert "headline (summary, gbps) is wall clock" in record.device_time
    assert record.engine.details["headline_clock"] == "wall clock of predict()"
    assert record.engine.details["device_clock"] == "Core ML prediction duration"
    assert record.method.timing == "wall clock per call"
    assert record.gbps == pytest.approx(record.workload.weight_bytes / record.summary.median / 1e9)
    assert record.device_gbps >= record.gbps
    assert not any("above device time" in w.text for w in record.warnings)  # the clocks agree within 10%


def test_a_wall_clock_over_10_percent_above_core_ml_time_is_a_warning(tmp_path, monkeypatch):
    stand_in_engine(monkeypatch, lambda package: GilHoldingCoreML(package, reported=0.5))
    record = measure_workload(CoreMLEngine(cache_dir=tmp_path), "ane", TINY,
                              RunOptions(runs=8, warmup=WarmupPolicy(fixed=1)))
    (gap,) = [w.text for w in record.warnings if "above device time" in w.text]
    assert gap.startswith("wall clock is ") and "host-side overhead in each call" in gap


def test_no_duration_from_an_older_coremltools_is_wall_clock_only(tmp_path, monkeypatch):
    stand_in_engine(monkeypatch, lambda package: GilHoldingCoreML(package, proxy=False))
    record = measure_workload(CoreMLEngine(cache_dir=tmp_path), "ane", TINY,
                              RunOptions(runs=4, warmup=WarmupPolicy(fixed=1)))
    assert record.device_samples_s is None and record.device_gbps is None
    assert "no device timestamps" in record.device_time and "8.2+" in record.device_time
    assert record.engine.details["device_clock"] is None


# --- what the binding does that the engine must survive ------------------------------------------------


def test_the_binding_returns_fp16_outputs_as_float32_and_the_check_still_passes(cache):
    prepared = prepared_for(cache)
    prepared.call()
    assert {v.dtype for v in prepared._last.values()} == {np.dtype(np.float32)}
    assert check_output(prepared).passed


def test_the_duration_is_none_before_the_first_predict(cache):
    prepared = prepared_for(cache)
    assert prepared.device_seconds() is None  # the getter answers None until a predict succeeded
    prepared.call()
    assert prepared.device_seconds() > 0


def test_a_prediction_error_is_one_line_naming_the_bundle_and_the_ns_error(cache):
    """coremltools raises every NSError as RuntimeError with its userInfo printed over several lines."""
    prepared = prepared_for(cache)
    prepared.call()
    last = prepared.device_seconds()
    prepared.model.fail_next_predicts()
    with pytest.raises(MeasurementError) as error:
        prepared.call()
    text = str(error.value)
    assert "\n" not in text and str(prepared.artifact.package) in text
    assert text.startswith("Core ML prediction failed on the Neural Engine (CPU_AND_NE) for the bundle ")
    assert text.endswith(f'{{ NSLocalizedDescription = "{NN_OUTPUTS_ERROR}"; }}')
    assert isinstance(error.value.__cause__, RuntimeError)
    assert prepared.device_seconds() == last  # the failed predict recorded no duration


def test_a_prediction_error_in_a_run_exits_1_without_a_traceback(tmp_path, monkeypatch, capsys):
    def failing(package):
        model = FakeMLModel(package)
        model.fail_next_predicts()
        return model

    stand_in_engine(monkeypatch, failing)
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    from anebench.cli import main

    with pytest.raises(SystemExit) as exit_info:
        main(["run", "-e", "coreml", "-d", "ane", "-w", "lm_head:64x1024", "--no-save"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1 and "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "Core ML prediction failed" in line]
    assert "Error computing NN outputs." in line and ".mlpackage" in line


# --- releasing a prepared model: the model first, then its inputs ----------------------------------


def test_close_releases_the_model_before_the_inputs(cache):
    prepared = prepared_for(cache, TINY.with_batch(2))
    prepared.model = GilHoldingCoreML(prepared.artifact.package, hold_us=1)
    prepared._predict, prepared._duration = (
        prepared.model.predict,
        coreml_engine.predict_duration(prepared.model),
    )
    prepared.call()
    assert prepared.device_seconds() is not None
    released = []
    weakref.finalize(prepared.model, released.append, "model")
    for index, feed in enumerate(prepared._feeds):
        weakref.finalize(feed["hidden_states"], released.append, f"input {index}")
    del feed
    prepared.close()
    assert released[0] == "model" and sorted(released[1:]) == ["input 0", "input 1"]
    assert prepared.model is None and prepared.device_seconds() is None


def test_engine_on_linux_says_why_and_exits_2(capsys):
    if preflight.on_macos():
        pytest.skip(reason="this checks the non-macOS path")
    engine = get_engine("coreml")
    assert not engine.available() and "Core ML prediction needs macOS" in engine.available().reason
    assert engine.devices() == []
    from anebench.cli import main

    for args in (
        ["run", "--engine", "coreml", "--no-save"],
        ["run", "-e", "coreml", "-d", "ane", "--no-save"],
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(args)
        assert exit_info.value.code == 2
        assert "Core ML prediction needs macOS" in capsys.readouterr().err


def test_coreml_is_first_in_preference_order():
    from anebench.engines import ENGINE_FACTORIES

    assert next(iter(ENGINE_FACTORIES)) == "coreml"


def test_prepare_and_measure_end_to_end_with_a_stand_in_model(tmp_path, monkeypatch):
    """The engine's prepare (cache, load, placement) and a whole record, with only predict faked."""
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    loaded = []

    asked = []

    def load(package, units, warnings_out=None):
        loaded.append(units)
        warnings_out.append("coremltools, loading the bundle: a load-time warning")
        return NumpyCoreML(package)

    def placement(model, units):
        asked.append(units)
        return [OpPlacement("conv", "ane", 0.95), OpPlacement("transpose", "cpu", 0.05)]

    binding = CoreMLBinding(load_model=load, query_placement=placement)
    engine = CoreMLEngine(cache_dir=tmp_path, repeat=2, binding=binding)
    assert engine.devices() == ["ane", "gpu", "cpu", "all"]
    workload = Workload("tiny_e2e", HIDDEN, 4096, "fp16", seed=3)
    options = RunOptions(runs=5, warmup=WarmupPolicy(fixed=1), mitigations=UsedMitigations(repeat=2))
    record = measure_workload(engine, "ane", workload, options)
    assert loaded == ["CPU_AND_NE"]
    assert record.engine.name == "coreml" and record.engine.compute_units == "CPU_AND_NE"
    assert record.workload.weight_bytes == 2 * 4096 * HIDDEN * 2
    assert record.workload.artifact_sha256 and len(record.workload.artifact_sha256) == 64
    assert record.engine.details["ane_op_share"] == 0.5 and record.engine.details["weight_sets"] == 2
    assert any("fall back from the Neural Engine" in w.text for w in record.warnings)
    load_warning = RecordWarning(kind="engine", text="coremltools, loading the bundle: a load-time warning")
    assert load_warning in record.warnings
    assert record.method.mitigations == UsedMitigations(repeat=2).describe()
    assert record.method.output_check.passed
    assert record.method.mitigations[0].startswith("repeat 2: the bundle reads 2 distinct weight sets")
    # Every device asks where its ops run, judged against that device (the CPU here).
    record = measure_workload(engine, "cpu", workload, options)
    assert loaded[-1] == asked[-1] == "CPU_ONLY" and record.engine.details["placement_asked"] == "cpu"
    assert record.engine.details["ops_on_ane"] == 1 and record.engine.details["ops_on_cpu"] == 1
    assert any("1 of 2 ops fall back from the CPU" in w.text for w in record.warnings)
    record = measure_workload(engine, "all", workload, options)
    assert asked[-1] == "ALL" and not any("fall back" in w.text for w in record.warnings)


def test_placement_query_missing_before_macos_14_4_is_a_warning_not_a_failure(tmp_path, monkeypatch):
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    def old_macos(model, units):
        raise ImportError("cannot import name 'MLComputePlan'")

    def binding(version: str) -> CoreMLBinding:
        return CoreMLBinding(load_model=lambda package, units, warnings_out=None: NumpyCoreML(package),
                             query_placement=old_macos, version=lambda: version)

    prepared = CoreMLEngine(cache_dir=tmp_path, binding=binding("8.3")).prepare(TINY, "ane")
    assert prepared.warnings == [
        "placement: MLComputePlan unavailable (cannot import name 'MLComputePlan'); coremltools 8.3 on this "
        "macOS could not build a compute plan"
    ]
    assert "ane_op_share" not in prepared.details
    prepared.call()
    assert check_output(prepared).passed
    # The same failure with coremltools 8.0 is the version's fault, and the warning says so.
    prepared = CoreMLEngine(cache_dir=tmp_path, binding=binding("8.0")).prepare(TINY, "gpu")
    assert prepared.warnings == [
        (
            "placement: MLComputePlan unavailable (cannot import name 'MLComputePlan'); "
            "needs coremltools 8.1+ (this is 8.0)"
        )
    ]


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
@pytest.mark.parametrize("device", ["ane", "gpu", "cpu", "all"])
def test_macos_placement_query_names_devices(tmp_path, device):
    engine = CoreMLEngine(cache_dir=tmp_path)
    artifact = engine.artifact(Workload("tiny_plan", 256, 4096, "fp16", seed=1))
    units = coreml_engine.COMPUTE_UNITS[device]
    model = coreml_runtime.load_model(artifact.package, units)
    placements = coreml_runtime.query_placement(model, units)
    convs = [p for p in placements if p.op_type == "conv"]
    assert len(convs) == 1 and all(p.device in ("ane", "gpu", "cpu") for p in convs)
    details, warnings = summarize_placement(placements, device)
    assert 0.0 <= details["ane_op_share"] <= 1.0 and details["placement_asked"] == device
    if device == "cpu":  # CPU_ONLY leaves Core ML no other device
        assert details["ops_on_cpu"] >= 1 and details["ops_on_ane"] == details["ops_on_gpu"] == 0
        assert warnings == []


@pytest.mark.macos
def test_macos_core_ml_prediction_duration_is_read_after_each_call(tmp_path):
    prepared = CoreMLEngine(cache_dir=tmp_path).prepare(TINY, "cpu")
    try:
        if coreml_engine.predict_duration(prepared.model) is None:
            version = coreml_engine.CoreMLEngine().version()
            pytest.skip(reason=f"coremltools {version} records no predict duration")
        start = time.perf_counter()
        prepared.call()
        wall = time.perf_counter() - start
        assert 0 < prepared.device_seconds() <= wall
        assert prepared.device_time_note.startswith("Core ML prediction duration")
    finally:
        prepared.close()


@pytest.mark.macos
def test_macos_runner_is_native_arm64_not_rosetta():
    assert preflight.under_rosetta() is False
    assert platform.machine() == "arm64" and preflight.apple_silicon()
    assert preflight.prediction_problem("Core ML") is None and "ane" in CoreMLEngine().devices()


def test_bf16_source_is_stored_as_fp16_and_the_record_says_so(cache):
    workload = Workload("tiny_bf16", HIDDEN, VOCAB, "bf16", seed=7)
    prepared = prepared_for(cache, workload)
    prepared.call()
    assert prepared.run_dtype == "fp16" and "bf16 weights converted to fp16" in prepared.dtype_note
    assert check_output(prepared).passed
    assert prepared.weight_bytes == VOCAB * HIDDEN * 2
    assert CoreMLEngine().dtype_for(workload, "ane").note == "bf16 weights stored by Core ML as fp16"
