"""A suite's analysis is stored once per suite result: the store's rows hold a sweep's fit once, its
points refer to it, and every record loads back whole."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import pytest

from anebench.engines.numpy_engine import NumpyEngine
from anebench.orchestration.session import RunOptions, measure
from anebench.orchestration.suites.sweep import finish_sweep
from anebench.results.store import open_store
from anebench.results.store_db import STORE_SCHEMA
from anebench.workloads import Workload


@pytest.fixture(scope="module")
def sweep_records():
    """A sweep's three points as the suite builds them, timed on a clean line so the fit passes."""
    latencies = {1024: 1e-4, 2048: 2e-4, 4096: 4e-4}
    options = RunOptions(runs=3, suite="sweep")
    measured = []
    for vocab, latency in latencies.items():
        m = measure(NumpyEngine(), "cpu", Workload(f"w{vocab}", 64, vocab, "fp32"), options)
        measured.append(replace(m, timing=replace(m.timing, samples_s=[latency] * len(m.timing.samples_s))))
    result = finish_sweep(measured, cache_bytes=None)
    assert result.analysis.fit is not None
    return result.records


def stored_rows(path) -> tuple[list[str], list[tuple[str, str]]]:
    with sqlite3.connect(path) as db:
        records = [body for (body,) in db.execute("SELECT body FROM records")]
        suites = db.execute("SELECT kind, body FROM suite_results").fetchall()
    db.close()
    return records, suites


def test_a_sweeps_store_rows_hold_its_fit_once(tmp_path, sweep_records):
    db = tmp_path / "db.sqlite"
    with open_store(db) as store:
        assert store.ingest(sweep_records, "sweep").added == 3
    records, suites = stored_rows(db)
    fit = sweep_records[0].sweep.fit.model_dump()
    assert len(records) == 3 and len(suites) == 1
    kind, body = suites[0]
    assert kind == "sweep" and json.loads(body)["fit"] == fit
    every_row = records + [body for _, body in suites]
    assert sum('"fit":' in row for row in every_row) == 1  # the fit once, in the suite result's row
    reference = {json.loads(row)["sweep"]["suite_result"] for row in records}
    assert len(reference) == 1 and '"points"' not in records[0]
    # each point keeps what identifies it
    assert sorted(json.loads(row)["sweep"]["point"] for row in records) == [0, 1, 2]


def test_stored_points_load_back_whole_with_their_ids(tmp_path, sweep_records):
    db = tmp_path / "db.sqlite"
    with open_store(db) as store:
        store.ingest(sweep_records, "sweep")
        loaded = {r.id: r for r in store.records()}
        assert set(loaded) == {r.id for r in sweep_records}
        for record in sweep_records:
            assert loaded[record.id].sweep == record.sweep
            assert loaded[record.id].content_id() == record.id
        shown_id, shown = store.body(sweep_records[0].id[:12])
        assert json.loads(shown)["sweep"]["fit"] == sweep_records[0].sweep.fit.model_dump()
        assert all('"fit":' in body for _, body in store.rows())


def test_removing_points_keeps_the_analysis_until_the_last_is_gone(tmp_path, sweep_records):
    db = tmp_path / "db.sqlite"
    with open_store(db) as store:
        store.ingest(sweep_records, "sweep")
        store.remove(sweep_records[0].id[:12])
        assert len(stored_rows(db)[1]) == 1 and len(store.records()) == 2
        store.remove(*(r.id[:12] for r in sweep_records[1:]))
    assert stored_rows(db) == ([], [])


def test_an_old_store_with_the_analysis_in_every_point_upgrades_to_one_suite_result(tmp_path, sweep_records):
    db = tmp_path / "old.sqlite"
    with open_store(db):
        pass
    with sqlite3.connect(db) as old:  # a /1 store: no suite_results table, each row the whole record
        old.execute("DROP TABLE suite_results")
        old.execute("UPDATE meta SET value = 'anebench.store/1' WHERE key = 'schema'")
        for record in sweep_records:
            old.execute(
                "INSERT INTO records (id, provenance, tool, workload, fingerprint, engine, device, suite, "
                "created, source_label, ingested_at, body) VALUES (?, 'measured', 'anebench', ?, ?, ?, ?, "
                "'sweep', ?, 'old', ?, ?)",
                (record.id, record.workload.name, record.workload.fingerprint, record.engine.name,
                 record.engine.device, record.created.isoformat(), record.created.isoformat(),
                 record.model_dump_json(by_alias=True)))
    old.close()
    with open_store(db, create=False, readonly=True) as store:  # read-only: read as it is
        assert {r.id for r in store.records()} == {r.id for r in sweep_records}
    with open_store(db) as store:  # writable: upgraded in place
        assert {r.id: r.sweep for r in store.records()} == {r.id: r.sweep for r in sweep_records}
    records, suites = stored_rows(db)
    assert len(suites) == 1 and not any('"fit":' in row for row in records)
    with sqlite3.connect(db) as check:
        assert check.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone() == (STORE_SCHEMA,)
    check.close()


def test_orchestration_never_patches_a_record():
    """Every record is built once, validated: pydantic's model_copy(update=) skips the validators."""
    from pathlib import Path

    import anebench.orchestration as orchestration

    root = Path(orchestration.__file__).parent
    patched = [str(path.relative_to(root)) for path in root.rglob("*.py")
               if "model_copy(update=" in path.read_text()]
    assert patched == []
