"""A Mac whose Energy Model ANE channel reads 0 (M5 / macOS 27), end to end on Linux: Core ML's predict is
the binding's stand-in (tests/fake_coreml.py) and IOReport returns a recorded-structure sample. The
"unavailable: counter did not move" reason must reach the run's output, the report and the submission."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anebench.engines.coreml_engine import OpPlacement
from anebench.system import energy_figures, power
from anebench.system.ioreport_parse import channels_from_json, dram_bandwidth, energy_by_component
from clitools import run_cli
from fake_coreml import FakeMLModel
from fakehost import pretend_mac_host
from fakepipeline import state_coreml, state_meters

M5_SAMPLE = Path(__file__).parent / "data" / "ioreport" / "m5_macos27_ane_zero.json"


class RecordedIOReport(power.ScalarMeter):
    """IOReport as the recorded sample has it, whatever the window (the sample's counts are fixed)."""

    source, scope = "IOReport Energy Model (fake)", "the whole SoC"

    def read(self):
        return None

    def between(self, start, end):
        channels = channels_from_json(json.loads(M5_SAMPLE.read_text()))
        reading = energy_by_component(channels)
        return energy_figures.Counted(reading.components["package"].joules, reading, dram_bandwidth(channels))


@pytest.fixture
def m5_mac(monkeypatch, tmp_path):
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    state_coreml(monkeypatch, load_model=lambda package, units, warnings_out=None: FakeMLModel(package),
                 query_placement=lambda model, units: [OpPlacement("conv", "ane", 1.0)])
    state_meters(monkeypatch, lambda device: RecordedIOReport())
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))


def test_a_zero_reading_ane_channel_is_unavailable_in_run_report_and_submit(capsys, tmp_path, m5_mac):
    result = tmp_path / "m5.json"
    code, stdout, stderr = run_cli(capsys, "run", "-e", "coreml", "-d", "ane", "-w", "lm_head:64x1024",
                                   "--runs", "5", "--power", "--out", str(result))
    assert code == 0, stderr
    assert "energy unavailable: counter did not move: the ane, cpu, dram channel(s) read 0" in " ".join(
        stderr.split())
    (record,) = json.loads(result.read_text())["results"]
    energy = record["energy"]
    assert not energy["available"] and energy["watts"] is None and energy["gbps_per_watt"] is None
    ane = next(c for c in energy["components"] if c["component"] == "ane")
    assert not ane["available"] and "PMP ANE RD/WR histograms moved" in ane["reason"]
    assert any("ane unavailable: counter did not move" in w["text"] for w in record["warnings"])

    db = tmp_path / "db.sqlite"
    assert run_cli(capsys, "ingest", str(result), "--db", str(db))[0] == 0
    code, report, _ = run_cli(capsys, "report", "--db", str(db), "--format", "md")
    assert code == 0
    (row,) = [line for line in report.splitlines() if line.startswith("| coreml:ane")
              and "unavailable" in line]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[3:8] == ["unavailable", "unavailable", "-", "-", "-"]  # no joules, no GB/s per watt
    assert "counter did not move" in cells[8]

    out = tmp_path / "submit"
    out.mkdir()
    code, stdout, stderr = run_cli(capsys, "submit", str(result), "--out", str(out))
    assert code == 0, stderr
    (body,) = out.glob("*.issue.md")
    text = body.read_text()
    assert "unavailable: counter did not move: the ane, cpu, dram channel(s) read 0" in text
