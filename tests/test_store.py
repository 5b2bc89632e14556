"""The results store: validated ingest, one transaction per file, duplicates as no-ops."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from anebench.cli import main
from anebench.errors import UserError
from anebench.model import (
    EngineInfo,
    HostInfo,
    MethodInfo,
    ResultRecord,
    Summary,
    ToolInfo,
    WorkloadInfo,
    utc_now,
)
from anebench.results.files import load_result_file, save_records
from anebench.results.store import open_store
from anebench.results.validate import InvalidFile
from anebench.workloads import resolve_workload


def make_record(chip: str = "Apple M4 Pro", gbps: float = 100.0, engine: str = "mlx", device: str = "gpu",
                workload: str = "llama_lm_head", note: str = "", runs: int = 5, **sections) -> ResultRecord:
    """A plausible measured record whose latency and GB/s agree with its weight bytes."""
    w = resolve_workload(workload)
    latency = w.weight_bytes / (gbps * 1e9)
    samples = [latency] * runs
    return ResultRecord(
        tool=ToolInfo(version="0.1.0"),
        created=utc_now(),
        host=HostInfo(os="macOS", arch="arm64", chip=chip, fingerprint="abc"),
        engine=EngineInfo(name=engine, device=device, run_dtype=w.dtype),
        workload=WorkloadInfo(name=w.name, shape=list(w.shape), dtype=w.dtype, weight_bytes=w.weight_bytes,
                              fingerprint=w.fingerprint, note=note),
        method=MethodInfo(runs=runs, warmup_policy="until steady", warmup_runs=3, timer="perf_counter"),
        summary=Summary(n=runs, median=latency, ci95_low=latency, ci95_high=latency, mean=latency,
                        min=latency, max=latency),
        samples_s=samples,
        gbps=gbps,
        **sections,
    ).with_id()


def test_ingest_stores_valid_records_and_duplicates_are_no_ops(tmp_path):
    path = tmp_path / "r.json"
    save_records(path, [make_record(gbps=100), make_record(gbps=120, chip="Apple M5")])
    with open_store(tmp_path / "db.sqlite") as store:
        first = store.ingest(load_result_file(path, strict=True), str(path))
        again = store.ingest(load_result_file(path, strict=True), str(path))
        assert (first.added, first.duplicates) == (2, 0)
        assert (again.added, again.duplicates) == (0, 2)
        stored = store.records()
    assert sorted(r.gbps for r in stored) == [100, 120]
    assert {r.id for r in stored} == set(first.ids)


def test_a_file_with_one_bad_record_stores_nothing_and_names_every_problem(tmp_path):
    good = make_record(gbps=90).model_dump(mode="json", by_alias=True)
    bad_nan = dict(good, gbps=math.nan, id=None)
    bad_negative = dict(good, gbps=-5, id=None)
    path = tmp_path / "mixed.json"
    path.write_text(json.dumps({"schema": "anebench.results/1", "results": [good, bad_nan, bad_negative]}))
    with pytest.raises(InvalidFile) as info:
        load_result_file(path, strict=True)
    assert len(info.value.problems) == 2
    assert all("gbps" in p and str(path) in p for p in info.value.problems)
    assert "record 2" in info.value.problems[0] and "record 3" in info.value.problems[1]


def test_plausibility_checks_beyond_the_schema(tmp_path):
    record = make_record(gbps=100)
    inconsistent = record.model_copy(update={"gbps": 300.0, "id": None})
    unsourced = record.model_copy(update={"provenance": "published", "id": None})
    tampered = record.model_copy(update={"provenance_note": "edited"})  # keeps the old id (GB/s is derived)
    long_note = make_record().model_dump(mode="json", by_alias=True)
    long_note["workload"]["note"] = "x" * 5000
    long_note["id"] = None
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"schema": "anebench.results/1", "results": [
        json.loads(r.model_dump_json(by_alias=True)) for r in (inconsistent, unsourced, tampered)
    ] + [long_note]}))
    with pytest.raises(InvalidFile) as info:
        load_result_file(path, strict=True)
    problems = "\n".join(info.value.problems)
    assert "disagrees with weight_bytes / latency" in problems
    assert "provenance_note: required for published" in problems
    assert "id: does not match" in problems
    assert "workload.note" in problems and "at most 2000" in problems


def test_store_ingest_is_all_or_nothing(tmp_path):
    with open_store(tmp_path / "db.sqlite") as store:
        store.ingest([make_record(gbps=50)], "seed")
        bad = make_record(gbps=60).model_copy(update={"provenance": "imported", "id": None})
        with pytest.raises(InvalidFile):
            store.ingest([make_record(gbps=70), bad], "bad batch")
        assert store.count() == 1


def test_cli_ingest_bad_file_leaves_store_unchanged_and_good_files_still_load(tmp_path, capsys):
    db = tmp_path / "db.sqlite"
    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    save_records(good, [make_record(gbps=80)])
    raw = make_record(gbps=81).model_dump(mode="json", by_alias=True)
    bad.write_text(json.dumps(dict(raw, gbps="fast", id=None)))
    main(["ingest", "--db", str(db), str(good)])
    before = sqlite3.connect(db).execute("SELECT id, body FROM records").fetchall()
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["ingest", "--db", str(db), str(bad), str(good), "--json"])
    assert exit_info.value.code == 2
    out = json.loads(capsys.readouterr().out)
    assert out["ingested"] == [{"source": str(good), "added": 0, "duplicates": 1}]
    assert out["failed"][0]["problems"] and "gbps" in out["failed"][0]["problems"][0]
    assert sqlite3.connect(db).execute("SELECT id, body FROM records").fetchall() == before


def test_published_import_is_idempotent(tmp_path):
    db = tmp_path / "db.sqlite"
    main(["ingest", "--published", "--db", str(db)])
    with open_store(db) as store:
        count = store.count()
        assert count == 48 and {r.provenance for r in store.records()} == {"published"}  # 47 + README M2 Pro
    main(["ingest", "--published", "--db", str(db)])
    with open_store(db) as store:
        assert store.count() == count


def test_bad_inputs_are_one_line_user_errors(tmp_path):
    (tmp_path / "notjson.json").write_text("{nope")
    with pytest.raises(UserError, match="not valid JSON"):
        load_result_file(tmp_path / "notjson.json", strict=True)
    with pytest.raises(UserError, match="no such file"):
        load_result_file(tmp_path / "missing.json", strict=True)
    (tmp_path / "garbage.sqlite").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(UserError, match="not an anebench results database"):
        open_store(tmp_path / "garbage.sqlite")
    with pytest.raises(SystemExit) as info:
        main(["ingest", "--db", str(tmp_path / "x.sqlite"), "--from", "nosuch", str(tmp_path / "a.json")])
    assert info.value.code == 2


def test_an_unreadable_path_is_one_line_for_ingest_and_submit(tmp_path, capsys):
    not_a_dir = tmp_path / "a.json"
    not_a_dir.write_text("{}")
    bad = not_a_dir / "b.json"  # below a file: NotADirectoryError, an OSError no other clause names
    with pytest.raises(UserError, match="b.json: cannot be read"):
        load_result_file(bad, strict=True)
    for argv in (["ingest", str(bad), "--db", str(tmp_path / "db.sqlite")], ["submit", str(bad)]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        err = capsys.readouterr().err
        assert info.value.code == 2 and "cannot be read" in err and "Traceback" not in err


def test_a_refused_database_is_closed_not_held_open(tmp_path, monkeypatch):
    from anebench.results import store as store_module

    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', 'anebench.store/0')")
    db.close()
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"not a database at all" * 100)
    opened, real_connect = [], sqlite3.connect

    def connect(path, **kwargs):
        opened.append(real_connect(path, **kwargs))
        return opened[-1]

    monkeypatch.setattr(store_module.sqlite3, "connect", connect)
    for path, reason in (
        (other, "store schema 'anebench.store/0'"),
        (garbage, "not an anebench results database"),
    ):
        with pytest.raises(UserError, match=reason):
            open_store(path)
        with pytest.raises(sqlite3.ProgrammingError, match="closed"):
            opened[-1].execute("SELECT 1")


def _tables(path) -> list[str]:
    with sqlite3.connect(path) as db:
        found = sorted(name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    db.close()
    return found


def test_another_programs_database_is_refused_and_left_untouched(tmp_path):
    other_store = tmp_path / "other.sqlite"
    with sqlite3.connect(other_store) as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema', 'anebench.store/0')")
    db.close()
    app = tmp_path / "app.sqlite"
    with sqlite3.connect(app) as db:
        db.execute("CREATE TABLE users (name TEXT)")
    db.close()
    with pytest.raises(UserError, match="store schema"):
        open_store(other_store)
    with pytest.raises(UserError, match="a SQLite database of something else \\(tables users\\)"):
        open_store(app)
    assert _tables(other_store) == ["meta"] and _tables(app) == ["users"]  # nothing added to either
    with open_store(tmp_path / "new.sqlite") as store:  # a new file and a reopened store still work
        store.ingest([make_record()], "t")
    with open_store(tmp_path / "new.sqlite") as store:
        assert store.count() == 1
