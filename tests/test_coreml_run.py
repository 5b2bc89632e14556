"""`anebench run` for Core ML: the Mac campaign, the idle-state mitigations and the keep-awake thread."""

from __future__ import annotations

import json
import threading
import time

import pytest

from anebench import runplan
from anebench.cli import main
from anebench.engines import get_engine
from anebench.engines.coreml_engine import CoreMLEngine
from anebench.errors import UserError
from anebench.measure.keepawake import KeepAwake
from anebench.runplan import Mitigations, Step
from anebench.session import RunOptions
from anebench.system import preflight
from anebench.workloads import resolve_workload


def apple_silicon_mac(monkeypatch):
    monkeypatch.setattr(preflight, "_system", lambda: "darwin")
    monkeypatch.setattr(preflight, "coreml_problem", lambda: None)
    monkeypatch.setattr(preflight, "ane_problem", lambda: None)


def test_published_campaign_order(monkeypatch):
    apple_silicon_mac(monkeypatch)
    steps = runplan.published_campaign()
    plan = [(s.engine.name, s.device, s.workload.name) for s in steps]
    assert plan[:5] == [
        ("coreml", "ane", "llama_lm_head"),
        ("coreml", "ane", "llama_lm_head_lut6"),
        ("coreml", "ane", "DeepHermes_lm_head"),
        ("coreml", "gpu", "llama_lm_head"),
        ("coreml", "cpu", "llama_lm_head"),
    ]
    mlx_devices = [device for engine, device, workload in plan[5:] if engine == "mlx"]
    assert mlx_devices == [d for d in get_engine("mlx").devices() if d in ("gpu", "cpu")]
    assert all(workload == "llama_lm_head" for _, _, workload in plan[3:])


def test_campaign_only_without_options_and_only_on_macos(monkeypatch):
    monkeypatch.setattr(preflight, "_system", lambda: "linux")
    assert not runplan.is_default_run((), None, ())
    monkeypatch.setattr(preflight, "_system", lambda: "darwin")
    assert runplan.is_default_run((), None, ())
    assert not runplan.is_default_run(("mlx",), None, ())
    assert not runplan.is_default_run((), None, ("llama_lm_head",))
    monkeypatch.setattr(preflight, "coreml_problem", lambda: "no coremltools here")
    assert runplan.published_campaign() is None  # then `run` keeps its usual default


def test_default_run_on_a_mac_measures_the_campaign(monkeypatch, capsys):
    apple_silicon_mac(monkeypatch)
    measured = []

    def fake_measure(engine, device, workload, options, progress=None, on_prepared=None):
        measured.append((engine.name, device, workload.name, list(options.mitigations)))
        raise SystemExit(0)  # the plan is what is under test, not the measurement

    monkeypatch.setattr("anebench.cli.run.measure_workload", fake_measure)
    monkeypatch.setattr("anebench.cli.run.preflight_memory", lambda *a: None)
    with pytest.raises(SystemExit):
        main(["run", "--no-save", "--keep-awake"])
    assert measured == [("coreml", "ane", "llama_lm_head", [runplan.KEEP_AWAKE])]


def test_explicit_ane_on_linux_says_macos(monkeypatch):
    monkeypatch.setattr(preflight, "_system", lambda: "linux")
    with pytest.raises(UserError, match="Core ML prediction needs macOS"):
        runplan.check_ane_reachable(("coreml",), "ane")
    runplan.check_ane_reachable(("numpy",), "cpu")


def test_concurrency_hint_only_for_several_neural_engines():
    assert "anebench concurrent" in runplan.concurrency_hint("Apple M2 Ultra")
    assert "--copies 2" in runplan.concurrency_hint("Apple M2 Ultra")
    assert runplan.concurrency_hint("Apple M4 Max") is None and runplan.concurrency_hint(None) is None


def steps():
    workload = resolve_workload("lm_head:64x1024")
    return Step(CoreMLEngine(), "ane", workload), Step(get_engine("numpy"), "cpu", workload)


def test_mitigations_change_only_core_ml_steps_and_say_so():
    coreml, numpy_step = steps()
    mitigations = Mitigations(keep_awake=True, predicts=4, repeat=3)
    applied = mitigations.apply(coreml)
    assert applied.engine.repeat == 3 and applied.workload.batch == 4 and applied.engine.name == "coreml"
    assert coreml.engine.repeat == 1  # the original engine is untouched
    assert mitigations.apply(numpy_step) is numpy_step
    used = mitigations.describe(applied)
    assert used[0] == runplan.KEEP_AWAKE and used[1].startswith("predicts-per-call 4:") and used[2].startswith("repeat 3:")
    assert mitigations.describe(numpy_step) == [runplan.KEEP_AWAKE]
    options = mitigations.options(RunOptions(), applied)
    assert options.mitigations == used and options.timing == "wall clock per call of 4 predicts"
    assert Mitigations().options(RunOptions(), applied).mitigations == []


def test_batch_or_repeat_without_core_ml_is_refused():
    _, numpy_step = steps()
    with pytest.raises(UserError, match="--predicts-per-call is a Core ML mitigation"):
        Mitigations(predicts=2).check([numpy_step], explicit_engines=True)
    with pytest.raises(UserError, match="--repeat is a Core ML mitigation"):
        Mitigations(repeat=2).check([numpy_step], explicit_engines=True)
    Mitigations(keep_awake=True).check([numpy_step], explicit_engines=True)


def test_keep_awake_is_recorded_on_any_engine(capsys):
    main(["run", "-e", "numpy", "-w", "lm_head:256x2048", "--runs", "5", "--warmup", "1", "--no-save",
          "--keep-awake", "--json"])
    record = json.loads(capsys.readouterr().out)["results"][0]
    assert record["method"]["mitigations"] == [runplan.KEEP_AWAKE]
    assert not any(t.name == "anebench-keep-awake" for t in threading.enumerate())  # stopped afterwards


def test_keep_awake_thread_spins_while_the_main_thread_waits_and_stops_promptly():
    helper = KeepAwake(chunk_bytes=1 << 20)
    with helper:
        assert helper.running
        time.sleep(0.3)
    assert not helper.running
    assert helper.rounds > 0 and helper.elapsed_s >= 0.3
    assert helper.busy_fraction > 0.5  # it ran while this thread slept: it does not hold the GIL idle


def test_keep_awake_hook_starts_only_once_prepared():
    mitigations = Mitigations(keep_awake=True)
    with mitigations.awake() as on_prepared:
        assert not any(t.name == "anebench-keep-awake" for t in threading.enumerate())
        on_prepared(None)
        assert any(t.name == "anebench-keep-awake" for t in threading.enumerate())
    assert not any(t.name == "anebench-keep-awake" for t in threading.enumerate())


def test_predicts_per_call_flag_and_its_hidden_deprecated_alias(capsys):
    for flag in ("--predicts-per-call", "--batch"):
        with pytest.raises(SystemExit) as exited:
            main(["run", "-e", "numpy", "-w", "lm_head:64x1024", "--no-save", flag, "2"])
        assert exited.value.code == 2
        err = capsys.readouterr().err
        assert "--predicts-per-call is a Core ML mitigation" in err
        assert ("--batch is deprecated" in err) == (flag == "--batch")
    try:
        main(["run", "--help"])
    except SystemExit:
        pass
    shown = capsys.readouterr().out
    assert "--predicts-per-call" in shown and "--batch" not in shown
