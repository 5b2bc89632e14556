"""The store under contention and damage: each SQLite failure named for what it is, one line, no traceback."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading

import pytest

from anebench.errors import UserError
from anebench.results import store_db as store_db_module
from anebench.results.store import open_store
from clitools import run_cli
from conftest import digest, one_line_error


def test_a_locked_store_is_named_locked_after_retries(tmp_path, capsys, store_db, monkeypatch):
    monkeypatch.setattr(store_db_module, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(store_db)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        code, _, err = run_cli(capsys, "ingest", "--published", "--db", str(store_db))
    finally:
        holder.rollback()
        holder.close()
    assert code == 2
    one_line_error(err, "locked by another process")


def test_a_lock_that_clears_is_waited_for(tmp_path, store_db, monkeypatch):
    monkeypatch.setattr(store_db_module, "BUSY_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(store_db, check_same_thread=False)
    holder.execute("BEGIN EXCLUSIVE")
    threading.Timer(0.3, holder.rollback).start()  # released during the retries
    with open_store(store_db) as opened:
        assert opened.count() == 49  # 48 published (47 Results.MD + the README's M2 Pro) and one measured
    holder.close()


def test_read_only_malformed_and_full_stores_are_named(tmp_path, store_db):
    from test_store import make_record

    with (
        open_store(store_db, create=False, readonly=True) as opened,
        pytest.raises(UserError, match="read-only"),
    ):
        opened.ingest([make_record(gbps=80)], "x")
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(store_db.read_bytes()[: 4096 * 3])
    with pytest.raises(UserError) as info, open_store(damaged) as opened:
        opened.records()
    assert "damaged" in str(info.value) or "malformed" in str(info.value)
    with open_store(store_db) as opened:
        opened._db.execute("PRAGMA max_page_count = 1")  # as a full disk: no page can be added
        with pytest.raises(UserError, match="disk is full"):
            opened.ingest([make_record(gbps=80 + i) for i in range(50)], "x")


def test_garbage_and_foreign_databases_are_refused_unchanged(tmp_path, capsys):
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"SQLite format 3\0" + b"\xff" * 5000)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE t (x)")
    db.close()
    for path, phrase in ((garbage, "not an anebench results database"), (other, "something else")):
        before = digest(path)
        code, _, err = run_cli(capsys, "ingest", "--published", "--db", str(path))
        assert code == 2
        one_line_error(err, phrase)
        assert digest(path) == before


def _create(path: str, barrier, results) -> None:
    barrier.wait()
    try:
        with open_store(path) as opened:
            results.put(("ok", opened.count()))
    except Exception as exc:  # noqa: BLE001 - report any failure to the parent
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_many_processes_creating_one_new_store_all_succeed(tmp_path):
    context = multiprocessing.get_context("fork")
    for trial in range(10):  # the old race lost about 1 creation in 3
        path = str(tmp_path / f"new-{trial}.sqlite")
        barrier, results = context.Barrier(8), context.Queue()
        procs = [context.Process(target=_create, args=(path, barrier, results)) for _ in range(8)]
        for p in procs:
            p.start()
        outcomes = [results.get(timeout=120) for _ in procs]
        for p in procs:
            p.join()
        assert all(kind == "ok" for kind, _ in outcomes), outcomes
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT value FROM meta").fetchall() == [("anebench.store/2",)]
    db.close()


def test_a_directory_device_or_fifo_as_db_is_refused(tmp_path, capsys):
    import os
    import stat

    fifo = tmp_path / "fifo.sqlite"
    os.mkfifo(fifo)
    null = tmp_path / "null"
    os.mknod(null, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    for path, phrase in ((tmp_path, "is a directory"), (null, "not a regular file"), (fifo, "not a regular")):
        code, _, err = run_cli(capsys, "ingest", "--published", "--db", str(path))
        assert code == 2
        one_line_error(err, phrase)
