"""The suite under a Mac's platform facts (issue 22): the seams every Mac decision reads, the paths that
used to read Linux's facts around them, and a representative subset of the suite run with --platform=mac.

The whole suite runs the same way with `python -m pytest --platform=mac` (or ANEBENCH_TEST_PLATFORM=mac);
CI runs the subset below, since a second whole run would double its time."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from anebench.system import energy_sources, ioreport, power, preflight
from anebench.system.host import SYSTEM_HOST
from clitools import run_cli
from fakehost import MAC_CHIP, pretend_linux_host, pretend_mac_host

pytest_plugins = ["pytester"]

TESTS = Path(__file__).parent
# The files whose tests take Mac-or-Linux decisions: preflight, engines, energy sources and plans, doctor,
# Core AI's dry run, the host description. Chosen to run in seconds.
MAC_SUBSET = ["test_coreml_preflight.py", "test_energy_cli.py", "test_doctor.py", "test_coreai_engine.py",
              "test_power.py"]


def test_the_mac_facts_reach_every_seam_and_the_native_bindings_stay_absent(monkeypatch, capsys):
    pretend_mac_host(monkeypatch)
    assert preflight.on_macos() and preflight.apple_silicon() and not preflight.under_rosetta()
    assert preflight.prediction_problem("Core ML") is None and preflight.ane_problem("Core ML") is None
    assert power.current_platform() == "darwin"
    code, stdout, _ = run_cli(capsys, "info", "--json")
    facts = json.loads(stdout)
    assert code == 0 and (facts["os"], facts["arch"], facts["chip"]) == ("macOS", "arm64", MAC_CHIP)
    if sys.platform != "darwin":
        assert ioreport.ioreport_problem() is not None  # the IOReport binding is not pretended


def test_linux_facts_stated_by_a_test_override_the_suites_platform(monkeypatch):
    pretend_mac_host(monkeypatch)
    pretend_linux_host(monkeypatch)
    assert not preflight.on_macos() and power.current_platform() == "linux"
    assert SYSTEM_HOST.info().os == "Linux" and SYSTEM_HOST.info().chip is None


def test_a_dry_run_naming_an_engine_this_mac_cannot_run_plans_the_others_energy_from_ioreport(monkeypatch,
                                                                                           capsys):
    """The plan of the runnable engines beside an unrunnable one read sys.platform, not the platform seam:
    on a Mac it named Linux RAPL as numpy's energy source."""
    pretend_mac_host(monkeypatch, version=(15, 5))  # Core AI needs macOS 27: unrunnable here
    code, stdout, stderr = run_cli(capsys, "run", "--dry-run", "-e", "numpy", "-e", "coreai", "--power", "-w",
                                   "lm_head:256x4096:fp32", "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert [u["engine"] for u in document["unavailable"]] == ["coreai"]
    (step,) = document["plan"]
    assert step["engine"] == "numpy" and step["energy_source"].startswith("IOReport Energy Model"), step


def test_energy_sources_on_a_mac_list_rapl_as_linux_only_even_where_a_powercap_tree_exists(monkeypatch,
                                                                                          tmp_path):
    zone = tmp_path / "intel-rapl:0"
    zone.mkdir()
    (zone / "energy_uj").write_text("100\n")
    (zone / "max_energy_range_uj").write_text("1000\n")
    pretend_mac_host(monkeypatch)
    rapl = next(s for s in energy_sources.energy_sources(tmp_path) if s.name == "Linux RAPL")
    assert not rapl.available and rapl.reason == "Linux only"
    pretend_linux_host(monkeypatch)
    rapl = next(s for s in energy_sources.energy_sources(tmp_path) if s.name == "Linux RAPL")
    assert rapl.available, rapl.reason


def test_doctor_names_the_macos_and_machine_the_host_seams_state(monkeypatch):
    """doctor read platform.mac_ver() and platform.machine() itself, so under stated facts it printed
    another host's version and "native x86_64" on an arm64 Mac."""
    from anebench.orchestration import doctor

    pretend_mac_host(monkeypatch, version=(15, 5))
    assert "macOS 15.5," in doctor.check_versions().detail
    assert doctor.check_rosetta().detail == "native arm64"


@pytest.mark.slow
def test_a_representative_subset_of_the_suite_passes_under_the_mac_facts(pytester):
    # In a subprocess, not in-process: pytester restores sys.modules after an in-process run, so a native
    # extension first imported inside it (mlx.core) was imported a second time by the next test file, and
    # a second initialisation aborts the interpreter (SIGABRT in `pytest test_mac_facts.py
    # test_energy_cli.py`; the default order hid it by importing mlx earlier).
    result = pytester.runpytest_subprocess(*[str(TESTS / name) for name in MAC_SUBSET], "--platform=mac",
                                          "-p", "no:cacheprovider")
    outcomes = result.parseoutcomes()
    assert outcomes.get("failed", 0) == 0 and outcomes.get("error", 0) == 0, result.stdout.str()[-4000:]
    assert outcomes.get("passed", 0) >= 40, outcomes
    assert "platform facts: a Mac" in result.stdout.str()
