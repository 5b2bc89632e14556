"""--drop-host-ids removes every identifier; control characters never reach an output raw."""

from __future__ import annotations

import json
import socket

from anebench.model import RecordWarning
from anebench.results.files import save_records
from clitools import run_cli
from conftest import one_line_error

ESC, RLO, NUL = "\x1b", "\u202e", "\x00"


def _private_record():
    from test_store import make_record

    record = make_record(gbps=100)
    secret_dir = "/Users/jdoe/private-models/acme-secret-7b"
    workload = record.workload.model_copy(update={
        "name": "hf:acme-secret-7b:lm_head.weight",
        "note": f"checkpoint acme-secret-7b (single file): tensor lm_head.weight from {secret_dir}",
        "origin": {"model": "acme-secret-7b", "revision": None, "file": f"{secret_dir}/model.safetensors",
                   "tensor": "lm_head.weight"},
    })
    host = record.host.model_copy(update={"machine_model": "Mac16,1", "fingerprint": socket.gethostname()})
    warnings = [RecordWarning.of(f"loaded on {socket.gethostname()}")]
    return record.model_copy(update={"workload": workload, "host": host, "id": None,
                                     "warnings": warnings}).with_id()


def test_drop_host_ids_removes_paths_folder_and_host_names_everywhere(tmp_path, capsys):
    result = tmp_path / f"anebench-run-{socket.gethostname()}-20250101T000000.json"
    save_records(result, [_private_record()])
    out = tmp_path / "out"
    out.mkdir()
    code, stdout, err = run_cli(capsys, "submit", str(result), "--out-dir", str(out), "--drop-host-ids")
    assert code == 0, err
    written = sorted(out.iterdir())
    assert len(written) == 2
    for path in written:
        assert socket.gethostname() not in path.name
        text = path.read_text()
        for secret in ("jdoe", "acme-secret-7b", "/Users", "private-models", socket.gethostname(), "Mac16,1"):
            assert secret not in text, (secret, path.name)
    submission = next(p for p in written if p.name.endswith(".submission.json"))
    record = json.loads(submission.read_text())["results"][0]
    assert record["workload"]["fingerprint"] == _private_record().workload.fingerprint  # still comparable
    assert record["host"]["chip"] == "Apple M4 Pro"
    assert socket.gethostname() not in stdout


def _hostile_record():
    from test_store import make_record

    record = make_record(gbps=100, chip="Apple M4 Pro")
    host = record.host.model_copy(
        update={"cpu_model": f"evil{ESC}[2J{ESC}]0;pwned{NUL}", "os": f"mac{RLO}SOcam"}
    )
    engine = record.engine.model_copy(update={"version": f"1.0{ESC}[31m"})
    return record.model_copy(update={"host": host, "engine": engine, "id": None,
                                     "warnings": [RecordWarning.of(f"w{ESC}[8m hidden {RLO}")],
                                     "provenance_note": f"from {ESC}]8;;http://x{ESC}\\"}).with_id()


def test_control_characters_are_escaped_in_every_output(tmp_path, capsys):
    db = tmp_path / "s.sqlite"
    result = tmp_path / "evil.json"
    save_records(result, [_hostile_record()])
    code, stdout, err = run_cli(capsys, "ingest", str(result), "--db", str(db))
    assert code == 0, err
    outputs = [stdout, err]
    for fmt in ("md", "html", "csv", "json"):
        code, stdout, err = run_cli(capsys, "report", "--db", str(db), "--format", fmt)
        assert code == 0, err
        outputs += [stdout, err]
    code, stdout, err = run_cli(capsys, "submit", str(result), "--out-dir", str(tmp_path))
    assert code == 0, err
    outputs += [stdout, err, next(tmp_path.glob("*.issue.md")).read_text()]
    for text in outputs:
        assert ESC not in text and RLO not in text and NUL not in text, repr(text[:300])


def test_control_characters_in_an_error_are_escaped(tmp_path, capsys):
    code, _, err = run_cli(capsys, "ingest", str(tmp_path / f"no{ESC}[2Jsuch{RLO}.json"), "--db",
                           str(tmp_path / "s.sqlite"))
    assert code == 2 and ESC not in err and RLO not in err
    one_line_error(err, "no such file")
