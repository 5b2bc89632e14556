"""Every hostile input file is refused whole, in one line, fast, with the store byte-identical."""

from __future__ import annotations

import json
import time

import pytest
from corpus import anebench_files, anemll_files, consistent, write

from clitools import run_cli
from conftest import digest, one_line_error


@pytest.mark.parametrize("fmt,generator", [("anebench", anebench_files), ("anemll-bench", anemll_files)])
def test_every_hostile_file_is_refused_in_one_line_and_the_store_is_unchanged(
    fmt, generator, tmp_path, capsys, store_db
):
    (tmp_path / "corpus").mkdir()
    cases = generator(tmp_path / "corpus")
    before = digest(store_db)
    failures = []
    for name, (path, phrase) in cases.items():
        started = time.perf_counter()
        code, _out, err = run_cli(capsys, "ingest", "--from", fmt, str(path), "--db", str(store_db))
        seconds = time.perf_counter() - started
        try:
            assert code == 2, f"exit {code}"
            one_line_error(err, phrase)
            assert seconds < 15, f"took {seconds:.1f} s"  # loose: a loaded runner; a hang takes minutes
            assert digest(store_db) == before, "the store changed"
        except AssertionError as exc:
            failures.append(f"{name}: {exc}")
    assert not failures, "\n".join(failures)


def test_the_report_skips_a_record_it_cannot_render_and_store_remove_deletes_it(tmp_path, capsys, store_db):
    import sqlite3

    # A record written into the database by hand (or by a broken tool): a section no schema allows. The
    # report names it and goes on; `store remove` deletes it.
    from test_store import make_record

    odd = make_record(gbps=90)
    body = json.loads(odd.model_dump_json(by_alias=True))
    body["concurrency"] = {"mode": 5}
    with sqlite3.connect(store_db) as db:
        db.execute(
            "INSERT INTO records SELECT ?, provenance, tool, chip, chip_key, workload, fingerprint, engine, "
            "device, suite, gbps, latency_s, created, source_label, ingested_at, ? FROM records LIMIT 1",
            (odd.id, json.dumps(body)),
        )
    db.close()
    code, out, err = run_cli(capsys, "report", "--db", str(store_db), "--format", "md")
    assert code == 0 and "# anebench results by chip" in out
    assert f"record {odd.id[:16]} skipped" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "store", "remove", odd.id[:12], "--db", str(store_db))
    assert code == 0 and odd.id in err
    code, _, err = run_cli(capsys, "report", "--db", str(store_db), "--format", "csv")
    assert code == 0 and "skipped" not in err
    code, _, err = run_cli(capsys, "store", "remove", "deadbeefdeadbeef", "--db", str(store_db))
    assert code == 2 and "no record" in err


def test_a_plausible_record_is_still_accepted(tmp_path, capsys, store_db):
    """The bounds are not so tight that an honest figure is refused: 60 GB/s on an M1 (68.25 GB/s)."""
    path = write(tmp_path / "ok.json", consistent(60))
    code, _, err = run_cli(capsys, "ingest", str(path), "--db", str(store_db))
    assert code == 0, err


def test_published_figures_pass_the_physics_checks():
    from anebench.results.published import published_records
    from anebench.results.validate import plausibility_problems

    assert all(not plausibility_problems(r) for r in published_records())


def test_a_pasted_issue_with_two_whole_blocks_is_still_imported(tmp_path, capsys, store_db):
    import json

    from corpus import ANEMLL_DOC

    doc, second = json.dumps(ANEMLL_DOC), json.dumps(ANEMLL_DOC | {"timestamp": "2025-03-02 10:00:00"})
    path = write(tmp_path / "issue.md", f"one\n```json\n{doc}\n```\ntwo\n```json\n{second}\n```\n")
    code, _, err = run_cli(capsys, "ingest", "--from", "anemll-bench", str(path), "--db", str(store_db))
    assert code == 0, err
