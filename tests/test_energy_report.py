"""The report's energy table: per chip, by engine and device, from records with an energy section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anebench.model import Energy
from anebench.report.build import render_report
from anebench.report.energy import energy_sections, record_energy
from anebench.results.published import published_records
from anebench.results.store import open_store
from anebench.system.energy_figures import Counted, energy_figures
from anebench.system.ioreport_parse import channels_from_json, dram_bandwidth, energy_by_component
from test_store import make_record

DATA = Path(__file__).parent / "data" / "ioreport"


class Meter:
    source, scope, sampling = "IOReport Energy Model (test)", "the SoC", "two samples"


def with_energy(record, work: str, sample: str = "single_die.json", calls: int = 10, seconds: float = 2.0):
    channels = channels_from_json(json.loads((DATA / sample).read_text()))
    reading = energy_by_component(channels)
    counted = Counted(reading.components["package"].joules, reading, dram_bandwidth(channels))
    energy = energy_figures(Meter(), "the timed calls", counted, seconds, calls, record.gbps,
                            record.workload.weight_bytes, work)
    return record.model_copy(update={"energy": energy, "id": None}).with_id()


@pytest.fixture(scope="module")
def campaign():
    ane = with_energy(make_record(chip="Apple M4 Max", engine="coreml", device="ane", gbps=120), "ane")
    gpu = with_energy(make_record(chip="Apple M4 Max", engine="mlx", device="gpu", gbps=400), "gpu")
    other = with_energy(make_record(chip="Apple M2 Ultra", engine="torch", device="mps", gbps=600), "gpu",
                        "two_die.json", seconds=1.0)
    plain = make_record(chip="Apple M4 Max", engine="mlx", device="cpu", gbps=90)  # no energy: no row
    return [ane, gpu, other, plain]


def test_one_energy_table_per_chip_by_engine_and_device(campaign):
    sections = {s.title: s for s in energy_sections(campaign)}
    assert set(sections) == {"Energy: Apple M4 Max", "Energy: Apple M2 Ultra"}
    rows = {row[0]: row for row in sections["Energy: Apple M4 Max"].rows}
    assert set(rows) == {"coreml:ane", "mlx:gpu"}
    ane = rows["coreml:ane"]
    # single_die.json: 5.52 J package, 1.2 J ANE over 10 calls -> 0.552 / 0.12 J per token
    assert ane[2] == "120.00" and ane[3] == "0.5520" and ane[4] == "0.1200 (ane)"
    assert ane[5] == f"{120 / 0.6:.2f}" and ane[6] == f"{120 / 2.76:.2f}"  # over 0.6 W ANE and 2.76 W package
    assert ane[7].startswith("128.0 (") and "resolution 32" in ane[7]
    assert rows["mlx:gpu"][4] == "0.0500 (gpu)"


def test_joules_per_token_divides_a_batched_call_by_its_batch(campaign):
    ane = campaign[0]
    batched = ane.model_copy(
        update={"workload": ane.workload.model_copy(update={"batch": 4}), "id": None}
    ).with_id()
    (section,) = [s for s in energy_sections([batched]) if s.title == "Energy: Apple M4 Max"]
    assert section.rows[0][3] == "0.1380"


def test_reports_carry_the_energy_table_only_when_such_records_exist(campaign):
    text = render_report(published_records() + campaign, "md", None, "test")
    assert "## Energy: Apple M4 Max" in text and "J/token (scope)" in text
    assert text.index("## Energy: Apple M4 Max") < text.index("## Concurrency verdicts")
    assert "## Energy:" not in render_report(published_records(), "md", None, "test")
    assert "Energy: Apple M2 Ultra" in render_report(campaign, "html", None, "test")


def test_the_energy_section_survives_the_store(campaign, tmp_path):
    with open_store(tmp_path / "db.sqlite") as store:
        store.ingest(campaign, "test")
        back = store.records()
    assert sorted(r.energy.joules for r in back if r.energy) == sorted(
        r.energy.joules for r in campaign if r.energy
    )


def test_older_files_with_extras_energy_still_give_a_row():
    old = make_record(chip="Apple M4", engine="numpy", device="cpu", gbps=50,
                      energy={"available": True, "source": "Linux RAPL (powercap)", "scope": "CPU package(s)",
                              "window": "warmup and timed calls", "calls": 10, "joules": 5.0, "seconds": 1.0,
                              "watts": 5.0, "joules_per_call": 0.5, "gbps_per_watt": 10.0})
    assert isinstance(record_energy(old), Energy)
    (section,) = energy_sections([old])
    assert section.rows[0][3] == "0.5000" and section.rows[0][6] == "10.00"
