"""The test seams (issue 23 item 8): platform facts behind the host, the engine registry, the Core ML
binding and the measurement executor. Each is passed in, or stated for a block and restored after it."""

from __future__ import annotations

import platform
import sys

import pytest

from anebench.engines import ENGINE_FACTORIES, active_engines, get_engine, use_engines
from anebench.engines.coreml_engine import CoreMLEngine
from anebench.engines.coreml_runtime import NATIVE_BINDING, CoreMLBinding, active_binding, use_binding
from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import UserError
from anebench.orchestration.executor import SESSION_EXECUTOR, Executor, active_executor, use_executor
from anebench.system import power, preflight
from anebench.system.host import SYSTEM_HOST, active_host, detect_platform, use_host
from anebench.util.seam import Seam
from fakehost import LINUX_FACTS, FakeHost, mac_facts


def test_the_native_platform_facts_are_this_machines():
    facts = detect_platform()
    assert facts.system == sys.platform and facts.machine == platform.machine()
    assert (facts.macos_version == ()) is (sys.platform != "darwin")
    assert facts.rosetta is False or sys.platform == "darwin"  # Rosetta exists only on macOS


def test_a_stated_host_is_what_system_host_answers_until_the_block_ends():
    before = active_host()  # this machine, or the Mac that --platform=mac states
    mac = FakeHost(chip="Apple M4 Max", available_bytes=3 << 30)
    with use_host(mac):
        assert active_host() is mac
        assert SYSTEM_HOST.info().chip == "Apple M4 Max" and SYSTEM_HOST.available_memory_bytes() == 3 << 30
        assert preflight.on_macos() and preflight.ane_problem("Core ML") is None
        assert power.current_platform() == "darwin"
        with use_host(FakeHost()):  # nested: the inner host, then the outer one again
            assert not preflight.on_macos() and power.current_platform() == "linux"
        assert preflight.on_macos()
    assert active_host() is before and SYSTEM_HOST.info() == before.info()


def test_facts_passed_in_are_answered_whatever_host_is_active():
    with use_host(FakeHost()):  # a Linux host is active
        assert preflight.prediction_problem("Core ML", mac_facts()) is None
        intel = mac_facts(machine="x86_64", chip=None)
        assert preflight.ane_problem("Core ML", intel) == preflight.INTEL_MESSAGE.format(framework="Core ML")
        rosetta = mac_facts(machine="x86_64", rosetta=True)
        assert preflight.under_rosetta(rosetta)
        assert preflight.prediction_problem("Core ML", rosetta) == preflight.ROSETTA_MESSAGE
        with pytest.raises(UserError, match="Rosetta"):
            preflight.check_native_host(rosetta)
    with use_host(FakeHost(chip="Apple M4")):  # a Mac is active
        off_mac = preflight.prediction_problem("Core ML", LINUX_FACTS)
        assert off_mac.startswith("Core ML prediction needs macOS")
        assert "macOS 14.2" in preflight.prediction_problem("Core ML", mac_facts((14, 2)))


def test_a_registry_passed_in_or_stated_is_where_engines_are_found():
    only_numpy = {"numpy": NumpyEngine}
    assert get_engine("numpy", only_numpy).name == "numpy"
    with pytest.raises(UserError, match="unknown engine 'mlx'.*valid: numpy"):
        get_engine("mlx", only_numpy)
    with use_engines(only_numpy):
        assert active_engines() is only_numpy
        with pytest.raises(UserError, match="valid: numpy"):
            get_engine("coreml")
    assert active_engines() is ENGINE_FACTORIES and get_engine("coreml").name == "coreml"


def test_the_core_ml_binding_is_the_engines_own_else_the_stated_one():
    stated = CoreMLBinding(version=lambda: "9.9")
    assert CoreMLEngine(binding=CoreMLBinding(version=lambda: "8.0")).version() == "8.0"
    with use_binding(stated):
        assert active_binding() is stated and CoreMLEngine().version() == "9.9"
        assert CoreMLEngine(binding=CoreMLBinding(version=lambda: "8.0")).version() == "8.0"
    assert active_binding() is NATIVE_BINDING


def test_the_stated_executor_is_used_where_none_is_passed_and_restored_after():
    stated = Executor(measure=lambda *args, **kwargs: None)
    with use_executor(stated):
        assert active_executor() is stated
    assert active_executor() is SESSION_EXECUTOR


def test_stated_meters_open_every_devices_counter_until_the_block_ends():
    stand_in = power.Unavailable("a test's counter")
    native = power.energy_meter("cpu")
    with power.use_meters(lambda device: stand_in):
        assert power.energy_meter("cpu") is stand_in and power.energy_meter("cuda:0") is stand_in
    after = power.energy_meter("cpu")
    assert after is not stand_in and type(after) is type(native)


def test_a_seam_answers_the_innermost_stated_value_and_restores_the_outer_one_on_error():
    seam = Seam("native")
    with seam.use("outer"):
        with pytest.raises(RuntimeError), seam.use("inner"):
            assert seam.get() == "inner"
            raise RuntimeError("the block failed")
        assert seam.get() == "outer"
    assert seam.get() == "native" and seam.stated is None
