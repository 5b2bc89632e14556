"""Schema /1 files and stores (written by anebench 0.1 before the typed model) still load, ingest and
report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from anebench.model import SCHEMA_VERSION, ResultRecord
from anebench.results.files import load_result_file
from anebench.results.store import open_store
from clitools import run_cli

V1 = Path(__file__).parent / "data" / "v1"
SUITE_FILES = ["run.json", "sweep.json", "roofline.json", "concurrent.json", "compute.json"]


@pytest.mark.parametrize("name", SUITE_FILES)
def test_a_v1_file_loads_into_typed_sections(name):
    raw = json.loads((V1 / name).read_text())
    assert raw["schema"] == "anebench.results/1" and all(
        r["schema"] == "anebench.result/1" for r in raw["results"]
    )
    records = load_result_file(V1 / name)
    assert len(records) == len(raw["results"]) and all(r.schema_ == SCHEMA_VERSION for r in records)
    for record, old in zip(records, raw["results"]):
        assert record.samples_s == old["samples_s"] and record.summary.median == pytest.approx(
            old["summary"]["median"]
        )
        for key in old["extras"]:  # every extras key of a /1 file lands in a typed section
            assert getattr(record, key) is not None
    assert load_result_file(V1 / name, strict=True)  # the importer's full validation accepts it too


def test_v1_sections_keep_their_meaning():
    (sweep,) = [r for r in load_result_file(V1 / "sweep.json") if r.sweep and r.sweep.fit][:1]
    old = json.loads((V1 / "sweep.json").read_text())["results"][0]["extras"]["sweep"]
    assert sweep.sweep.fit.bandwidth_gbps == pytest.approx(old["bandwidth_gbps"])
    assert sweep.sweep.fit.overhead_s * 1e6 == pytest.approx(old["overhead_us"])
    roof = load_result_file(V1 / "roofline.json")
    assert [r.roofline.batch for r in roof] == [r.workload.batch for r in roof]
    (compute,) = load_result_file(V1 / "compute.json")
    assert compute.compute.tflop_per_s > 0 and compute.suite == "compute"
    assert {r.suite for r in load_result_file(V1 / "concurrent.json")} == {"concurrency"}


def test_a_v1_store_loads_ingests_and_reports(tmp_path, capsys):
    db = tmp_path / "store.db"
    shutil.copy(V1 / "store.db", db)
    with open_store(db) as store:
        before = store.records()
    assert len(before) > 40 and any(r.provenance == "published" for r in before)
    assert all(r.schema_ == SCHEMA_VERSION for r in before)
    code, _, stderr = run_cli(capsys, "ingest", str(V1 / "run.json"), "--db", str(db))
    assert code == 0, stderr
    code, stdout, stderr = run_cli(capsys, "report", "--db", str(db), "--format", "json")
    assert code == 0, stderr
    assert json.loads(stdout)


def test_a_measured_summary_that_contradicts_its_samples_is_refused():
    (record,) = load_result_file(V1 / "run.json")
    data = record.model_dump(mode="json", by_alias=True)
    data["summary"]["median"] *= 0.5
    with pytest.raises(ValidationError, match="contradicts the samples"):
        ResultRecord.model_validate(data)
    data = record.model_dump(mode="json", by_alias=True)
    data["summary"] = {"n": None}  # left out: derived from the samples
    assert ResultRecord.model_validate(data).summary.median == record.summary.median


def test_an_odd_v1_section_value_is_refused_not_carried():
    raw = json.loads((V1 / "sweep.json").read_text())["results"][0]
    raw["extras"]["sweep"]["point"] = "not a number"
    with pytest.raises(ValidationError, match="sweep"):
        ResultRecord.model_validate(raw)


@pytest.mark.parametrize("name", ["sweep.json", "roofline.json", "concurrent.json"])
def test_a_v1_suite_file_written_again_holds_each_analysis_once_and_loads_the_same(tmp_path, name):
    """/1 (and /2) documents copied the suite's analysis into every point; written again (/3), each
    suite result is held once in `suite_results` and the points load back whole and unchanged."""
    from anebench.model import DOCUMENT_SCHEMA
    from anebench.results.files import save_records

    records = load_result_file(V1 / name)
    again = save_records(tmp_path / name, records)
    document = json.loads(again.read_text())
    assert document["schema"] == DOCUMENT_SCHEMA
    kinds = {entry["kind"] for entry in document["suite_results"]}
    assert kinds == {records[0].suite} and len(document["suite_results"]) < len(records)
    ids = {entry["id"] for entry in document["suite_results"]}
    assert all(point[records[0].suite]["suite_result"] in ids for point in document["results"])
    assert load_result_file(again) == [r if r.id else r.with_id() for r in records]  # the id it is saved with
