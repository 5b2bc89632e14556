"""The energy campaign from the command line: the Mac plan with power on, `info`'s sources, --power here."""

from __future__ import annotations

import json

import pytest

from anebench.orchestration import runplan
from anebench.system import energy_sources
from clitools import run_cli
from fakehost import (
    LINUX_FACTS,
    mac_facts,
    pretend_linux_host,
    pretend_mac_host,
    state_ioreport,
    state_platform,
)
from fakepipeline import no_memory_check, state_executor


def test_dry_run_of_the_mac_campaign_lists_every_engine_with_power_on(capsys):
    code, stdout, stderr = run_cli(capsys, "run", "--plan-for", "mac", "--dry-run", "--json")
    assert code == 0, stderr
    plan = json.loads(stdout)["plan"]
    steps = [(s["engine"], s["device"], s["workload"]) for s in plan]
    assert steps[:3] == [("coreml", "ane", w) for w in runplan.CAMPAIGN_ANE]
    same_head = {(e, d) for e, d, w in steps if w == runplan.CAMPAIGN_COMPARE}
    assert {("coreml", "ane"), ("coreml", "gpu"), ("coreml", "cpu"), ("mlx", "gpu"), ("mlx", "cpu"),
            ("torch", "mps")} <= same_head
    assert all(s["power"] for s in plan)
    assert all(s["energy_source"].startswith("IOReport Energy Model") for s in plan)
    assert {s["device"]: s["energy_source"].split("(")[1].split(" ")[0] for s in plan} == {
        "ane": "ane", "gpu": "gpu", "mps": "gpu", "cpu": "cpu"}


def test_the_mac_plan_as_a_table_and_with_no_power(capsys):
    code, stdout, _ = run_cli(capsys, "run", "--plan-for", "mac", "--dry-run")
    assert code == 0 and "torch" in stdout and "mps" in stdout and "IOReport" in stdout
    code, stdout, _ = run_cli(capsys, "run", "--plan-for", "mac", "--dry-run", "--no-power", "--json")
    assert code == 0 and not any(s["power"] for s in json.loads(stdout)["plan"])


@pytest.mark.parametrize("argv, message", [
    (("run", "--plan-for", "mac"), "only with --dry-run"),
    (("run", "--plan-for", "mac", "--dry-run", "-e", "numpy"), "drop --engine"),
])
def test_plan_for_misuse_is_one_line_and_exit_2(capsys, argv, message):
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code == 2 and message in stderr and stdout == ""


@pytest.mark.parametrize("platform, source", [("linux", "Linux RAPL (CPU packages)"),
                                              ("darwin", "IOReport Energy Model (cpu + package")])
def test_dry_run_names_the_platforms_source_and_measures_nothing(capsys, tmp_path, monkeypatch, platform,
                                                                 source):
    monkeypatch.chdir(tmp_path)
    state_platform(monkeypatch, mac_facts() if platform == "darwin" else LINUX_FACTS)  # the host's facts
    code, stdout, stderr = run_cli(capsys, "run", "--dry-run", "-e", "numpy", "--power", "-w",
                                   "lm_head:256x4096:fp32", "--json")
    assert code == 0, stderr
    (step,) = json.loads(stdout)["plan"]
    assert step["power"] and step["energy_source"].startswith(source)
    assert list(tmp_path.iterdir()) == []  # nothing measured, nothing saved


def test_the_campaign_reads_energy_by_default_and_not_with_no_power(monkeypatch, capsys):
    pretend_mac_host(monkeypatch)
    seen = []

    def fake_measure(engine, device, workload, options, progress=None, hooks=None):
        seen.append(options.power)
        raise SystemExit(0)

    state_executor(monkeypatch, fake_measure, check_memory=no_memory_check)
    for argv, expected in ((["run", "--no-save"], True), (["run", "--no-save", "--no-power"], False),
                           (["run", "--no-save", "-e", "numpy", "-w", "lm_head:256x4096:fp32"], False)):
        run_cli(capsys, *argv)
        assert seen.pop() is expected, argv


def test_info_lists_the_energy_sources_with_ioreport_macos_only(capsys, monkeypatch):
    pretend_linux_host(monkeypatch)
    code, stdout, _ = run_cli(capsys, "info")
    assert code == 0
    assert "energy sources" in stdout and "IOReport Energy Model" in stdout and "macOS only" in stdout
    assert "Linux RAPL" in stdout and "NVIDIA NVML" in stdout


def test_power_on_linux_records_the_typed_section(capsys, tmp_path):
    code, stdout, stderr = run_cli(capsys, "run", "-e", "numpy", "-w", "lm_head:256x4096:fp32", "--runs", "5",
                                   "--power", "--no-save", "--json")
    assert code == 0, stderr
    (record,) = json.loads(stdout)["results"]
    assert record["energy"]["available"] or record["energy"]["reason"]
    assert "extras" not in record and "energy" in stderr


def test_info_lists_an_ioreport_source_only_by_the_channels_found(capsys, monkeypatch):
    """A Mac (or VM) with the Energy Model but no PMP / DCS BW group: actop's subscription succeeds on the
    Energy Model alone, so `info` used to list the DRAM traffic source as available."""
    import json as json_module
    from pathlib import Path

    from anebench.system.ioreport_parse import channels_from_json

    recorded = Path(__file__).parent / "data" / "ioreport" / "no_ane.json"
    state_ioreport(monkeypatch, problem=lambda: None,
                   probe_channels=lambda seconds: channels_from_json(json_module.loads(recorded.read_text())))
    code, stdout, stderr = run_cli(capsys, "info")
    assert code == 0, stderr
    energy_model = next(line for line in stdout.splitlines() if line.startswith("IOReport Energy Model"))
    pmp = next(line for line in stdout.splitlines() if line.startswith("IOReport PMP / DCS BW"))
    assert " yes " in energy_model and "CPU Energy (mJ)" in stdout and " no " in pmp
    sources = {s.name: s for s in energy_sources.energy_sources()}
    assert sources["IOReport Energy Model"].available and any(
        c.startswith("cpu: CPU Energy (mJ)") for c in sources["IOReport Energy Model"].channels)
    assert "no ane channel" in sources["IOReport Energy Model"].reason
    assert not sources["IOReport PMP / DCS BW"].available
    assert "AMCC RD+WR" in sources["IOReport PMP / DCS BW"].reason
