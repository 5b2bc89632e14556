"""The last leftovers of the hostile review round two (shared/reviews/hostile.md: S7, R6/R7, L5, E18):
one test per failure class, each asserting the exit code, one line, no traceback and nothing lost."""

from __future__ import annotations

import sqlite3

import pytest

from clitools import run_cli
from conftest import digest, one_line_error

# -- class: an ingest that stores nothing prints nothing but its error line (S7) --


def _read_only_store(monkeypatch):
    """The store's folder read-only as SQLite reports it (the tests may run as root, who can write anyway)."""
    from anebench.results.store import Store

    def refuse(self, prepared, source_label):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(Store, "_insert", refuse)


@pytest.mark.parametrize("how", ["read-only store", "bad file"])
def test_an_ingest_that_stores_nothing_prints_only_its_error_line(how, tmp_path, store_db, capsys, monkeypatch):
    from anebench.results.files import save_records
    from test_store import make_record

    source = tmp_path / "in.json"
    if how == "bad file":
        source.write_text('{"schema": "anebench.results/2", "results": [')
    else:
        save_records(source, [make_record(gbps=120)])
        _read_only_store(monkeypatch)
    before = digest(store_db)
    code, out, err = run_cli(capsys, "ingest", str(source), "--db", str(store_db))
    assert code == 2
    assert out == ""  # no empty "ingested into" table
    one_line_error(err, str(source) if how == "bad file" else "read-only")
    assert "ingested into" not in err
    assert digest(store_db) == before
