"""`anebench submit`: validated submission file + Markdown issue body, optional host-id removal."""

from __future__ import annotations

import json

import pytest

from anebench.cli import main
from anebench.model import RecordWarning
from anebench.results.files import load_result_file, save_records
from anebench.system.host import catalog_chip
from test_store import make_record


def test_submit_writes_a_valid_document_and_issue_body(tmp_path, capsys):
    result = tmp_path / "run.json"
    record = make_record(chip="Apple M4 Pro", gbps=101.5)
    record = record.model_copy(update={"host": record.host.model_copy(update={"machine_model": "Mac16,1"}),
                                       "warnings": [RecordWarning.of("<script>x</script> | y")],
                                       "id": None}).with_id()
    save_records(result, [record])
    main(["submit", str(result), "--out-dir", str(tmp_path)])
    assert "issue body" in capsys.readouterr().out
    (submitted,) = load_result_file(tmp_path / "run.submission.json", strict=True)
    assert submitted.id == record.id and submitted.host.machine_model == "Mac16,1"
    body = (tmp_path / "run.issue.md").read_text()
    row = ("| Apple M4 Pro | M4 Pro | mlx:gpu | llama\\_lm\\_head | "
           "101.50 (no range: repetitions not recorded)")
    assert row + " |" in body
    # Markdown escaping, not HTML entities (issue 14): the brackets are backslash-escaped
    assert "<script>" not in body and "\\<script\\>x\\</script\\> \\| y" in body


def test_drop_host_ids_removes_identifiers_and_keeps_the_record_valid(tmp_path):
    result = tmp_path / "run.json"
    record = make_record()
    record = record.model_copy(update={"host": record.host.model_copy(update={"machine_model": "Mac16,1"}),
                                       "id": None}).with_id()
    save_records(result, [record])
    main(["submit", str(result), "--out-dir", str(tmp_path), "--drop-host-ids"])
    (submission,) = tmp_path.glob("*.submission.json")  # named by record id, not by the input's name
    (body,) = tmp_path.glob("*.issue.md")
    raw = json.loads(submission.read_text())["results"][0]
    assert raw["host"]["fingerprint"] == "" and raw["host"]["machine_model"] is None
    assert raw["host"]["chip"] == "Apple M4 Pro"
    (reloaded,) = load_result_file(submission, strict=True)  # id matches the new content
    assert reloaded.id != record.id and submission.name.startswith(f"anebench-submission-{reloaded.id[:12]}")
    assert "host identifiers: dropped" in body.read_text()


def test_submit_refuses_an_invalid_result_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    raw = make_record().model_dump(mode="json", by_alias=True)
    bad.write_text(json.dumps(dict(raw, gbps=0, id=None)))
    with pytest.raises(SystemExit) as info:
        main(["submit", str(bad), "--out-dir", str(tmp_path)])
    assert info.value.code == 2 and "gbps" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.submission.json")) and not list(tmp_path.glob("*.issue.md"))


def test_host_maps_to_the_catalog(monkeypatch):
    record = make_record(chip="Apple M5 Pro")
    assert catalog_chip(record.host).key == "M5 Pro"
    assert catalog_chip(make_record(chip=None).host) is None


def test_submit_refuses_an_empty_document_in_one_line(tmp_path, capsys):
    result = tmp_path / "empty.json"
    save_records(result, [])
    with pytest.raises(SystemExit) as info:
        main(["submit", str(result), "--out-dir", str(tmp_path)])
    err = capsys.readouterr().err
    assert info.value.code == 2 and "holds no records" in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.json"]  # nothing written


def test_issue_body_files_a_cuda_run_under_its_gpu():
    from anebench.report.submission import issue_body

    cuda = make_record(chip=None, engine="torch", device="cuda:0")
    cuda = cuda.model_copy(
        update={
            "engine": cuda.engine.model_copy(update={"details": {"gpu": "NVIDIA H100 80GB HBM3"}}),
            "id": None,
        }
    ).with_id()
    body = issue_body([cuda], "run.submission.json", False)
    assert "| NVIDIA H100 80GB HBM3 | H100 SXM | torch:cuda:0 |" in body
    assert f"| {cuda.latency_s() * 1e3:.3f} (median) |" in body
