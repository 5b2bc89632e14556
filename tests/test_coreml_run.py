"""`anebench run` for Core ML: the Mac campaign, the idle-state mitigations and the keep-awake process."""

from __future__ import annotations

import json
import multiprocessing
import os
import time

import pytest

from anebench.cli import main
from anebench.engines import get_engine
from anebench.engines.coreml_engine import CoreMLEngine
from anebench.errors import UserError
from anebench.orchestration import runplan
from anebench.orchestration.keepawake import KeepAwakeProcess, measured
from anebench.orchestration.mitigations import KEEP_AWAKE, UsedMitigations
from anebench.orchestration.runplan import Mitigations, Step
from anebench.orchestration.session import RunOptions
from anebench.system import preflight
from anebench.workloads import resolve_workload
from fakehost import pretend_linux_host, pretend_mac_host
from fakepipeline import no_memory_check, state_executor


def apple_silicon_mac(monkeypatch):
    pretend_mac_host(monkeypatch)


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
    pretend_linux_host(monkeypatch)
    assert not runplan.is_default_run((), None, ())
    pretend_mac_host(monkeypatch)
    assert runplan.is_default_run((), None, ())
    assert not runplan.is_default_run(("mlx",), None, ())
    assert not runplan.is_default_run((), None, ("llama_lm_head",))
    pretend_mac_host(monkeypatch, version=(14, 5))  # a Mac whose Core ML cannot run the bundles
    assert preflight.prediction_problem("Core ML") is not None
    assert runplan.published_campaign() is None  # then `run` keeps its usual default


def test_default_run_on_a_mac_measures_the_campaign(monkeypatch, capsys):
    apple_silicon_mac(monkeypatch)
    measured = []

    def fake_measure(engine, device, workload, options, progress=None, hooks=None):
        measured.append((engine.name, device, workload.name, options.mitigations.describe()))
        raise SystemExit(0)  # the plan is what is under test, not the measurement

    state_executor(monkeypatch, fake_measure, check_memory=no_memory_check)
    with pytest.raises(SystemExit):
        main(["run", "--no-save", "--keep-awake"])
    assert measured == [("coreml", "ane", "llama_lm_head", [KEEP_AWAKE])]


def test_explicit_ane_on_linux_says_macos(monkeypatch):
    pretend_linux_host(monkeypatch)
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
    assert (
        used[0] == KEEP_AWAKE
        and used[1].startswith("predicts-per-call 4:")
        and used[2].startswith("repeat 3:")
    )
    # on a CPU engine the spinner also gets a core of its own: the engine runs one thread fewer, said so
    assert mitigations.describe(numpy_step)[0] == KEEP_AWAKE
    assert all("one core left to the spinner" in m for m in mitigations.describe(numpy_step)[1:])
    options = mitigations.options(RunOptions(), applied)
    assert options.mitigations.describe() == used and options.timing == "wall clock per call of 4 predicts"
    assert options.mitigations == UsedMitigations(keep_awake=True, predicts=4, repeat=3)  # values, not prose
    assert Mitigations().options(RunOptions(), applied).mitigations.describe() == []


def test_batch_or_repeat_without_core_ml_is_refused():
    _, numpy_step = steps()
    with pytest.raises(UserError, match="predicts_per_call is a Core ML mitigation"):
        Mitigations(predicts=2).check([numpy_step], explicit_engines=True)
    with pytest.raises(UserError, match="repeat is a Core ML mitigation"):
        Mitigations(repeat=2).check([numpy_step], explicit_engines=True)
    Mitigations(keep_awake=True).check([numpy_step], explicit_engines=True)


def test_keep_awake_is_recorded_on_any_engine_with_its_measured_cpu_share(capsys):
    main(["run", "-e", "numpy", "-w", "lm_head:256x2048", "--runs", "5", "--warmup", "1", "--no-save",
          "--keep-awake", "--json"])
    record = json.loads(capsys.readouterr().out)["results"][0]
    assert record["method"]["mitigations"][0] == KEEP_AWAKE
    assert all("one core left to the spinner" in m for m in record["method"]["mitigations"][1:])
    share = record["keep_awake"]
    assert share["wall_seconds"] > 0 and share["cpu_share"] >= 0 and share["min_share"] == 0.9
    assert share["effective"] == (share["cpu_share"] >= 0.9)
    said = " ".join(w["text"] for w in record["warnings"])
    assert ("keep-awake failed" in said) == (not share["effective"])
    assert not multiprocessing.active_children()  # the spinner was stopped


def test_keep_awake_spins_in_its_own_process_through_a_gil_holding_call():
    """The helper thread waited for the GIL through every Core ML predict (21-24% on a CPU); a process
    does not: its CPU share over the timed window is read from the OS, not from its own clock."""
    from anebench.measure.warmup import WarmupPolicy
    from anebench.orchestration.session import measure_workload
    from gil_engine import GilHoldingEngine

    mitigations = Mitigations(keep_awake=True)
    options = mitigations.options(RunOptions(runs=60, warmup=WarmupPolicy(fixed=2)),
                                  Step(GilHoldingEngine(), "cpu", resolve_workload("lm_head:8x16:fp32")))
    with mitigations.awake() as awake:
        record = measure_workload(GilHoldingEngine(), "cpu", resolve_workload("lm_head:8x16:fp32"), options,
                                  hooks=awake.measure_hooks())
        pid = awake.helper.pid
    assert record.keep_awake is not None and record.keep_awake.wall_seconds >= 0.15  # 60 calls of 3 ms
    # spinning while the main thread held the GIL for ~all of the window. A thread waiting for the GIL
    # gets ~0; a process gets its share of a core, which on a loaded 2-core machine (load 7 seen while
    # the tests ran) is well under half: a bound that holds under load still tells the two apart.
    assert record.keep_awake.cpu_share > 0.1, record.keep_awake
    assert pid is not None and pid != os.getpid()
    assert not multiprocessing.active_children()


def test_a_keep_awake_share_below_nine_tenths_is_flagged_as_failed(monkeypatch):
    from anebench.engines.numpy_engine import NumpyEngine
    from anebench.orchestration.session import MeasureHooks, measure_workload

    low = measured(cpu_seconds=0.5, wall_seconds=1.0)
    assert low.cpu_share == 0.5 and not low.effective
    assert measured(cpu_seconds=0.95, wall_seconds=1.0).effective
    mitigations = Mitigations(keep_awake=True)
    with mitigations.awake() as awake:
        monkeypatch.setattr(awake.helper, "section", lambda: low)
        # 1 MB of weights: a call far longer than 20 timer ticks on any machine
        record = measure_workload(NumpyEngine(), "cpu", resolve_workload("lm_head:256x1024:fp32"),
                                  RunOptions(runs=3), hooks=MeasureHooks(finish=awake.finish))
    assert record.keep_awake == low
    assert any(w.text.startswith("keep-awake failed: its spinner was on a CPU 50%") and w.kind == "keep-awake"
               for w in record.warnings)


def test_keep_awake_hook_starts_only_once_prepared():
    mitigations = Mitigations(keep_awake=True)
    with mitigations.awake() as awake:
        assert not awake.helper.running
        awake.on_prepared(None)
        assert awake.helper.running and awake.helper.pid in {p.pid for p in multiprocessing.active_children()}
    assert not multiprocessing.active_children()


def test_keep_awake_process_stops_promptly():
    helper = KeepAwakeProcess()
    with helper:
        assert helper.running
        helper.mark("timed")
        time.sleep(0.3)
        helper.mark("timed-end")
    assert not helper.running
    assert helper.section().wall_seconds >= 0.3


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


def test_keep_awake_on_a_cpu_engine_leaves_the_spinner_a_core_and_says_so():
    from anebench.engines.numpy_engine import NumpyEngine
    from anebench.orchestration.runplan import Mitigations, Step
    from anebench.system.host import SYSTEM_HOST
    from anebench.workloads import resolve_workload

    step = Step(NumpyEngine(), "cpu", resolve_workload("lm_head:64x1024:fp32"))
    mitigations = Mitigations(keep_awake=True)
    expected = max(SYSTEM_HOST.usable_cores() - 1, 1)
    assert mitigations.spinner_threads(step) == expected
    assert any(f"ran {expected} thread(s)" in m for m in mitigations.describe(step))
    from threadpoolctl import threadpool_info

    with mitigations.awake(step):
        blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
        assert blas and all(n == expected for n in blas)
    assert Mitigations(keep_awake=False).spinner_threads(step) is None
