"""`anebench doctor` on a stated Mac (the host seam, preflight's platform facts, the Core ML binding's
stand-in and recorded-structure IOReport samples), and off a Mac."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anebench.engines import coreml_engine
from anebench.engines.base import Availability
from anebench.engines.coreml_engine import OpPlacement
from anebench.orchestration import doctor
from anebench.system import preflight
from anebench.system.ioreport_parse import channels_from_json
from clitools import run_cli
from fake_coreml import FakeMLModel
from fakehost import FakeHost, pretend_linux_host, pretend_mac_host, state_host, state_ioreport
from fakepipeline import state_coreml, state_engines

DATA = Path(__file__).parent / "data" / "ioreport"
UNIT_OF = {units: unit for unit, units in coreml_engine.COMPUTE_UNITS.items()}


def recorded(name: str):
    return channels_from_json(json.loads((DATA / name).read_text()))


class Probes:
    """IOReport's probe: the recorded sample, calling the work it is given meanwhile (as the real one)."""

    def __init__(self, sample: str):
        self.sample, self.windows, self.work_calls = sample, [], 0

    def __call__(self, seconds, during=None):
        self.windows.append(seconds)
        for _ in range(3 if during is not None else 0):
            during()
            self.work_calls += 1
        return recorded(self.sample)


@pytest.fixture
def mac(monkeypatch, tmp_path):
    """An Apple-silicon Mac as the checks see it; IOReport answers with ``mac.probes`` (single die)."""
    pretend_mac_host(monkeypatch)  # native arm64: Core ML and the Neural Engine reachable
    state_coreml(monkeypatch,
                 load_model=lambda package, units, warnings_out=None: FakeMLModel(package, hold_us=2000),
                 query_placement=lambda model, units: [OpPlacement("const", None),
                                                       OpPlacement("conv", UNIT_OF[units], 1.0)])
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    probes = Probes("single_die.json")
    state_ioreport(monkeypatch, problem=lambda: None, probe_channels=probes)
    return probes


def test_a_healthy_mac_passes_every_check(mac):
    diagnosis = doctor.diagnose(FakeHost(chip="Apple M4 Pro"))
    lines = diagnosis.lines()
    assert diagnosis.on_mac and diagnosis.failed == [], lines
    names = [c.name for c in diagnosis.checks]
    assert names[:6] == ["versions", "chip", "Rosetta", "MLComputePlan ane", "MLComputePlan gpu",
                         "MLComputePlan cpu"]
    assert "ok   chip: Apple M4 Pro (catalog M4 Pro)" in lines
    assert "ok   MLComputePlan ane: 1 ops on ane, 0 unplaced" in lines
    (duration,) = [line for line in lines if "duration reader" in line]
    assert duration.startswith("ok   duration reader: Core ML duration / wall clock over 20 predicts")
    assert mac.windows == [0.1, 1.0] and mac.work_calls == 3  # idle, then under ANE work
    assert "ok   IOReport ANE (mJ): 1.2000 J over 0.1 s idle, 1.2000 J over 1 s of ANE work" in lines
    assert any(line.startswith("ok   PMP / DCS BW: AMCC RD+WR 128.0 GB/s") for line in lines)
    assert lines[-1].startswith("skip Core AI: Core AI needs macOS 27 (this Mac runs macOS")  # not a failure


def test_an_m5_on_macos_27_fails_on_the_ane_channel_and_names_the_pmp_view(mac):
    mac.sample = "m5_macos27_ane_zero.json"
    diagnosis = doctor.diagnose(FakeHost(chip="Apple M4 Pro"))
    failed = {c.name: c.detail for c in diagnosis.failed}
    assert set(failed) == {"IOReport ANE0 (mj)", "IOReport CPU Energy (mj)", "IOReport DRAM0 (mj)"}
    assert failed["IOReport ANE0 (mj)"].endswith("counter did not move while the ane was busy")
    lines = diagnosis.lines()
    assert "ok   IOReport GPU Energy (mj): 0.5000 J over 0.1 s idle, 0.5000 J over 1 s of ANE work" in lines
    assert any(line.startswith("ok   PMP ANE RD/WR: ANE0 RD 48.0 GB/s; ANE0 WR 16.0 GB/s") for line in lines)


def test_placement_off_the_asked_unit_and_a_missing_duration_are_named(mac, monkeypatch):
    state_coreml(monkeypatch,
                 query_placement=lambda model, units: [OpPlacement("conv", "cpu", 1.0)],
                 load_model=lambda package, units, warnings_out=None: FakeMLModel(package, duration=False))
    failed = {c.name: c.detail for c in doctor.diagnose(FakeHost(chip="Apple M4 Pro")).failed}
    assert "1 of 1 ops fall back from the Neural Engine" in failed["MLComputePlan ane"]
    assert "MLComputePlan cpu" not in failed
    assert failed["duration reader"].startswith("coremltools records no prediction duration")


def test_core_ai_is_checked_through_the_engine_registry_when_registered(mac, monkeypatch):
    class NoCoreAI:
        name = "coreai"

        def available(self):
            return Availability(False, "Core AI needs macOS 27")

    assert preflight.coreai_problem() is not None  # macOS 15.5: Core AI needs macOS 27
    state_engines(monkeypatch, coreai=NoCoreAI)
    (check,) = [c for c in doctor.diagnose(FakeHost(chip="Apple M4 Pro")).checks if c.name == "Core AI"]
    assert check.status == "skip" and check.detail == "Core AI needs macOS 27"  # an older macOS: expected
    NoCoreAI.available = lambda self: Availability(False, "coreai-core is not installed")
    macos_27 = FakeHost(chip="Apple M4 Pro", macos_version=(27, 0))  # macOS 27, and still no Core AI
    (check,) = [c for c in doctor.diagnose(macos_27).checks if c.name == "Core AI"]
    assert check.status == "FAIL" and check.detail == "coreai-core is not installed"
    state_engines(monkeypatch, coreai=None)
    (check,) = [c for c in doctor.diagnose(FakeHost(chip="Apple M4 Pro")).checks if c.name == "Core AI"]
    assert check.status == "skip" and check.detail == "no coreai engine in this anebench"


def test_the_cli_writes_one_diagnostic_file_and_submit_attaches_it(mac, monkeypatch, capsys, tmp_path):
    from anebench.report import submission

    state_host(monkeypatch, FakeHost(chip="Apple M4 Pro"))
    monkeypatch.setattr(submission, "host_identifying_strings", lambda: {"alices-mbp", "alice"})
    mac.sample = "m5_macos27_ane_zero.json"
    out = tmp_path / "doctor.txt"
    code, stdout, stderr = run_cli(capsys, "doctor", "--out", str(out))
    assert code == 1 and "FAIL IOReport ANE0 (mj)" in stdout  # a failed check: exit 1, the file written
    text = out.read_text()
    assert text.startswith("# anebench doctor")
    assert "host identifiers: fingerprint fake, model Mac16,8" in text
    assert "FAIL IOReport ANE0 (mj)" in text and "diagnostic file" in stderr

    result = tmp_path / "r.json"
    assert run_cli(capsys, "run", "-e", "numpy", "-w", "lm_head:64x1024:fp32", "--runs", "3",
                   "--out", str(result))[0] == 0
    out.write_text(out.read_text() + "checked on alices-mbp by alice\n")
    folder = tmp_path / "submit"
    folder.mkdir()
    code, stdout, stderr = run_cli(capsys, "submit", str(result), "--out", str(folder), "--doctor", str(out),
                                   "--drop-host-ids")
    assert code == 0, stderr
    (attached,) = folder.glob("*.doctor.txt")
    kept = attached.read_text()
    assert "FAIL IOReport ANE0 (mj)" in kept and "alice" not in kept and "<dropped>" in kept
    assert "Mac16,8" not in kept and "fingerprint" not in kept
    (body,) = folder.glob("*.issue.md")
    assert f"Attach `{attached.name}` too" in body.read_text()
    code, _, stderr = run_cli(capsys, "submit", str(result), "--out", str(folder), "--doctor", str(result),
                              "--force")
    assert code == 2 and "not a file written by `anebench doctor`" in stderr


def test_off_a_mac_doctor_says_what_it_would_check_writes_nothing_and_exits_0(capsys, tmp_path, monkeypatch):
    pretend_linux_host(monkeypatch)
    code, stdout, _ = run_cli(capsys, "doctor")
    assert code == 0 and stdout.startswith("anebench doctor: not a Mac, so nothing was checked")
    assert "MLComputePlan per unit" in stdout and "IOReport channels" in stdout and "Core AI" in stdout
    assert list(tmp_path.iterdir()) == []
