"""The coreai engine on the platform facts of a Mac (the host seam) with a stand-in of coreai.runtime that
follows its .pyi and computes with coreai-core's real in-package runtime: availability, the specialisation
record apart from the timed calls, one event loop for every call, errors in one line, and the campaign."""

from __future__ import annotations

import json

import pytest

from anebench.engines import get_engine
from anebench.engines.coreai_engine import PLACEMENT, CoreAIEngine
from anebench.engines.coreml_engine import CoreMLEngine
from anebench.errors import MeasurementError, UserError
from anebench.orchestration import runplan
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.system import preflight
from anebench.workloads import resolve_workload
from clitools import run_cli
from fakehost import FakeHost, pretend_linux_host, pretend_macos
from fakepipeline import state_engines

HEAD = "lm_head:64x1024"


def test_off_macos_27_it_says_what_it_needs(monkeypatch):
    pretend_linux_host(monkeypatch)
    reason = CoreAIEngine().available().reason
    assert reason.startswith("Core AI needs macOS 27 (this host runs Linux)") and "--engine coreai" in reason
    assert CoreAIEngine().devices() == []
    pretend_macos(monkeypatch, (15, 4))
    reason = CoreAIEngine().available().reason
    assert reason == "Core AI needs macOS 27 (this Mac runs macOS 15.4); use -e coreml here"


def test_anebench_engines_lists_coreai_with_its_reason_here(capsys, monkeypatch):
    pretend_linux_host(monkeypatch)
    code, out, _ = run_cli(capsys, "engines")
    (line,) = [row for row in out.splitlines() if row.startswith("coreai")]
    assert code == 0 and " no " in line and "needs macOS 27" in line


def test_run_coreai_here_is_refused_in_one_line_before_building(capsys, monkeypatch, tmp_path):
    pretend_linux_host(monkeypatch)
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path))
    code, out, err = run_cli(capsys, "run", "-e", "coreai", "-w", HEAD)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and "needs macOS 27" in err
    assert not any(tmp_path.iterdir())  # nothing built


def test_dry_run_here_explains_what_it_needs_and_measures_nothing(capsys, monkeypatch, tmp_path):
    pretend_linux_host(monkeypatch)
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path))
    code, out, err = run_cli(capsys, "run", "-e", "coreai", "-w", HEAD, "--dry-run")
    assert code == 0, err
    assert "cannot run on this host: Core AI needs macOS 27" in out and "nothing was built or measured" in out
    assert "coreai-core" in out and PLACEMENT in out
    code, out, _ = run_cli(capsys, "run", "-e", "coreai", "-w", HEAD, "-w", "llama_lm_head_lut6", "--dry-run",
                           "--json")
    document = json.loads(out)
    assert code == 0 and document["plan"] == [] and document["unavailable"][0]["engine"] == "coreai"
    assert any("no 6-bit integer type" in note for note in document["unavailable"][0]["notes"])
    code, out, _ = run_cli(capsys, "run", "-e", "coreai", "-e", "numpy", "-w", HEAD, "--dry-run", "--json")
    document = json.loads(out)  # the engine that can run here is still planned
    assert code == 0 and [(s["engine"], s["device"]) for s in document["plan"]] == [("numpy", "cpu")]
    assert [u["engine"] for u in document["unavailable"]] == ["coreai"]
    assert not any(tmp_path.iterdir())


@pytest.fixture
def fake_runtime():
    pytest.importorskip("coreai", reason="the stand-in computes with coreai-core's in-package runtime")
    from fake_coreai import Behaviour, make_runtime

    def make(**behaviour):
        return make_runtime(Behaviour(**behaviour))

    return make


def mac_engine(monkeypatch, tmp_path, runtime) -> CoreAIEngine:
    pretend_macos(monkeypatch, (27, 0))
    return CoreAIEngine(cache_dir=tmp_path, runtime=runtime)


def test_on_macos_27_it_runs_on_each_unit_with_specialisation_apart(monkeypatch, tmp_path, fake_runtime):
    runtime = fake_runtime(specialize_s=0.2, first_call_s=0.1)
    engine = mac_engine(monkeypatch, tmp_path, runtime)
    assert engine.available() and engine.devices() == ["ane", "gpu", "cpu"]
    record = measure_workload(engine, "ane", resolve_workload(HEAD), RunOptions(runs=5, host=FakeHost()))
    details = record.engine.details
    assert details["placement"] == PLACEMENT and details["preferred_compute_unit"] == "neural_engine"
    assert details["specialization_seconds"] >= 0.2 and details["first_call_seconds"] >= 0.1
    assert max(record.samples_s) < 0.1  # neither the specialisation nor the slow first call is a sample
    assert record.method.output_check.passed  # the real asset, run by coreai-core, equals W @ x
    assert record.engine.compute_units == "preferred neural_engine"
    assert record.workload.fingerprint == resolve_workload(HEAD).fingerprint
    behaviour = runtime.behaviour
    assert [kind for _, kind in behaviour.loads] == ["neural_engine"]
    assert len(behaviour.loops) == 1  # every call on the one loop made at prepare
    assert behaviour.calls == 2 + record.method.warmup_runs + len(record.samples_s)  # first + check + timed
    for device, kind in (("gpu", "gpu"), ("cpu", "cpu")):
        prepared = engine.prepare(resolve_workload(HEAD), device)
        prepared.close()
        assert behaviour.loads[-1][1] == kind


def test_records_of_core_ai_and_core_ml_pair_on_one_fingerprint():
    for spec in (HEAD, "lm_head:64x1024:fp32", "lm_head:64x1024:bf16"):
        workload = resolve_workload(spec)
        coreai = CoreAIEngine().dtype_for(workload, "ane").run_dtype
        coreml = CoreMLEngine().dtype_for(workload, "ane").run_dtype
        assert workload.streamed_fingerprint(coreai) == workload.streamed_fingerprint(coreml)


def test_a_failed_specialisation_is_one_line_naming_the_asset_and_unit(monkeypatch, tmp_path, fake_runtime):
    engine = mac_engine(monkeypatch, tmp_path, fake_runtime(fail_load="The model could not be specialized."))
    with pytest.raises(UserError, match=r"could not load .*\.aimodel for the gpu unit: The model could"):
        engine.prepare(resolve_workload(HEAD), "gpu")


def test_an_inference_error_ends_the_run_cleanly(capsys, monkeypatch, tmp_path, fake_runtime):
    runtime = fake_runtime(fail_call_after=3)
    engine = mac_engine(monkeypatch, tmp_path, runtime)
    with pytest.raises(MeasurementError, match="Core AI inference failed on .*Inference failed"):
        measure_workload(engine, "ane", resolve_workload(HEAD), RunOptions(runs=5, host=FakeHost()))
    state_engines(monkeypatch, coreai=lambda: CoreAIEngine(cache_dir=tmp_path, runtime=runtime))
    runtime.behaviour.calls = 0
    code, out, err = run_cli(capsys, "run", "-e", "coreai", "-w", HEAD, "--runs", "5", "--no-save")
    assert code == 1 and "measurement refused: Core AI inference failed" in err and "Traceback" not in err


def test_what_no_asset_holds_is_refused_before_building(monkeypatch, tmp_path, fake_runtime):
    engine = mac_engine(monkeypatch, tmp_path, fake_runtime())
    with pytest.raises(UserError, match="one input per call"):
        engine.prepare(resolve_workload(HEAD).with_batch(2), "ane")
    with pytest.raises(UserError, match="not a Core AI device"):
        engine.prepare(resolve_workload(HEAD), "all")
    assert not engine.streams_quantized("lut6", "ane") and engine.streams_quantized("int8", "ane")
    assert not any(tmp_path.iterdir())


def test_the_mac_campaign_on_macos_27_runs_core_ai_on_the_ane(monkeypatch, tmp_path, fake_runtime):
    runtime = fake_runtime()
    pretend_macos(monkeypatch, (27, 0))
    assert preflight.prediction_problem("Core ML") is None  # a native Mac on macOS 27 runs Core ML too
    state_engines(monkeypatch, coreai=lambda: CoreAIEngine(cache_dir=tmp_path, runtime=runtime))
    plan = [(s.engine.name, s.device, s.workload.name) for s in runplan.published_campaign()]
    assert plan[:4] == [*(("coreml", "ane", w) for w in runplan.CAMPAIGN_ANE),
                        ("coreai", "ane", "llama_lm_head")]
    pretend_macos(monkeypatch, (26, 1))
    assert all(engine != "coreai" for engine, _, _ in
               [(s.engine.name, s.device, s.workload.name) for s in runplan.published_campaign()])


def test_the_mac_plan_shows_core_ai_on_the_ane(capsys):
    code, out, _ = run_cli(capsys, "run", "--plan-for", "mac", "--dry-run", "--json")
    steps = [(s["engine"], s["device"], s["workload"]) for s in json.loads(out)["plan"]]
    assert code == 0 and ("coreai", "ane", "llama_lm_head") in steps and get_engine("coreai").name == "coreai"


def test_on_macos_27_without_coreai_core_it_says_how_to_install_it(monkeypatch):
    from anebench.artifacts import _coreai

    pretend_macos(monkeypatch, (27, 0))
    monkeypatch.setattr(_coreai, "installed", lambda: False)
    assert "pip install 'anebench[coreai]'" in CoreAIEngine().available().reason


def test_a_development_install_that_cannot_specialise_is_not_available(monkeypatch, fake_runtime):
    pretend_macos(monkeypatch, (27, 1))
    availability = CoreAIEngine(runtime=fake_runtime(supported=False)).available()
    assert not availability and "SpecializationOptions.is_supported() is False" in availability.reason


def test_run_from_the_command_line_with_tokens(capsys, monkeypatch, tmp_path, fake_runtime):
    runtime = fake_runtime()
    pretend_macos(monkeypatch, (27, 0))
    state_engines(monkeypatch, coreai=lambda: CoreAIEngine(cache_dir=tmp_path, runtime=runtime))
    workload = resolve_workload(HEAD).with_tokens(3)
    record = measure_workload(CoreAIEngine(cache_dir=tmp_path, runtime=runtime), "cpu", workload,
                              RunOptions(runs=5, host=FakeHost()))
    assert record.method.output_check.passed and record.engine.details["tokens"] == 3
    code, out, err = run_cli(capsys, "run", "-e", "coreai", "-d", "gpu", "-w", HEAD, "--runs", "5",
                             "--no-save", "--json")
    assert code == 0, err
    (result,) = json.loads(out)["results"]
    assert result["engine"]["name"] == "coreai" and result["engine"]["device"] == "gpu"
    assert result["engine"]["details"]["placement"] == PLACEMENT
    assert result["workload"]["fingerprint"] == resolve_workload(HEAD).fingerprint
