import json

import pytest
from pydantic import ValidationError

from anebench.engines import get_engine
from anebench.errors import UserError
from anebench.measure.warmup import WarmupPolicy
from anebench.model import DOCUMENT_SCHEMA, SCHEMA_VERSION, ResultRecord
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.results.files import load_result_file, save_records


@pytest.fixture(scope="module")
def record():
    from anebench.workloads import Workload

    workload = Workload("rt", hidden=64, vocab=512, dtype="fp32", seed=5)
    return measure_workload(
        get_engine("numpy"), "cpu", workload, RunOptions(runs=10, warmup=WarmupPolicy(fixed=1))
    )


def test_record_round_trips_through_a_file(record, tmp_path):
    path = tmp_path / "out.json"
    save_records(path, [record])
    document = json.loads(path.read_text())
    assert document["schema"] == DOCUMENT_SCHEMA
    assert document["results"][0]["schema"] == SCHEMA_VERSION
    loaded = load_result_file(path)
    assert loaded == [record]
    assert loaded[0].content_id() == record.id
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic write left no temporary file
    assert path.stat().st_mode & 0o044  # readable by others, like any file the user writes


def test_record_carries_full_provenance(record):
    data = record.model_dump(mode="json", by_alias=True)
    for key in ("tool", "created", "host", "engine", "workload", "method", "summary", "samples_s", "gbps"):
        assert data[key] not in (None, "", [])
    assert data["method"]["statistic"] == "median"
    assert data["method"]["timer"] == "perf_counter_ns"
    assert data["method"]["timer_resolution_s"] > 0
    assert data["host"]["arch"] and data["host"]["cores_logical"] >= 1
    assert data["engine"]["version"]


def test_id_changes_when_the_content_changes(record):
    changed = record.model_copy(update={"gbps": record.gbps * 2})
    assert changed.content_id() != record.id


@pytest.mark.parametrize(
    "path, value",
    [
        (("gbps",), -1.0),
        (("gbps",), float("nan")),
        (("summary", "median"), 0.0),
        (("workload", "fingerprint"), "xyz"),
        (("engine", "name"), "x" * 500),
        (("schema",), "anebench.result/99"),
    ],
)
def test_implausible_values_are_rejected(record, path, value):
    data = record.model_dump(mode="json", by_alias=True)
    target = data
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValidationError):
        ResultRecord.model_validate(data)


def test_loading_a_broken_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="bad.json: not valid JSON"):
        load_result_file(bad)
    bad.write_text(json.dumps({"schema": "anebench.results/2", "results": [{"gbps": 1}]}))
    with pytest.raises(UserError, match="bad.json: invalid result at results.0"):
        load_result_file(bad)


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, monkeypatch):
    import os

    from anebench.util import outputs

    path = tmp_path / "chart.png"
    outputs.atomic_write_bytes(path, b"old")
    assert path.read_bytes() == b"old" and path.stat().st_mode & 0o044  # shared like any result file

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    from anebench.errors import UserError

    with pytest.raises(UserError, match="chart.png: cannot be written .*the disk is full"):
        outputs.atomic_write_bytes(path, b"new")  # one line naming the target, not the temporary
    assert path.read_bytes() == b"old" and [p.name for p in tmp_path.iterdir()] == ["chart.png"]


def test_suite_plots_are_shared_files_like_the_results(tmp_path):
    from anebench.report.suite_plots import plot_concurrency

    analysis = {
        "solo_gbps": [10.0, 11.0],
        "together_gbps": [6.0, 6.5],
        "combined_gbps": 12.5,
        "scaling": 1.19,
        "verdict": "partial",
        "rule": "r",
    }
    written = plot_concurrency(analysis, "t", tmp_path / "c")
    assert [p.name for p in written] == ["c.png", "c.svg"]
    assert all(p.stat().st_mode & 0o044 for p in written)  # mkstemp alone would leave them 0600
