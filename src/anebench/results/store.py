"""The results store: SQLite (stdlib), one transaction per ingested file, records keyed by content id.

The record is kept as JSON; a few columns are copied out for querying. A suite's analysis (a sweep's fit,
a roofline's ridge, a concurrency verdict) is kept once, in ``suite_results``, and each point's row refers
to it (results/suite_results.py); reading a row joins them. Re-ingesting a record is a no-op because its
id is the sha256 of its content. Reports only read from here. The SQLite file itself (its schema, opening
it, naming its failures) is results/store_db.py.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ..model import ResultRecord, utc_now
from ..system.chips import chip_key
from ..util.paths import data_dir
from .store_db import DB, connect_store, with_retries
from .suite_results import (
    join,
    joined_json,
    read_analyses,
    remove_orphans,
    split,
    stored_json,
)
from .validate import InvalidFile, validate_records

DB_FILENAME = "results.sqlite"


@dataclass(frozen=True)
class StoredRecord:
    """One line of `anebench store list`: what identifies a stored record without loading it."""

    id: str
    suite: str
    workload: str
    engine: str
    device: str
    provenance: str
    gbps: float | None
    created: str
    source_label: str
    host: str = ""


def default_db_path() -> Path:
    return data_dir() / DB_FILENAME


@dataclass
class IngestReport:
    source_label: str
    added: int = 0
    duplicates: int = 0
    ids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.added + self.duplicates


class Store:
    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._db = connection
        self.path = path
        self.skipped: list[tuple[str, str]] = []  # (id, why) of rows the last records() could not load

    def close(self) -> None:
        self._db.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def ingest(self, records: Iterable[ResultRecord], source_label: str) -> IngestReport:
        """Store every record or none: a single invalid record raises InvalidFile and stores nothing."""
        prepared = [r if r.id else r.with_id() for r in records]
        problems = validate_records(prepared, source_label)
        if problems:
            raise InvalidFile(source_label, problems)
        return with_retries(lambda: self._insert(prepared, source_label), self.path)

    def _upgraded_ids(self) -> set[str]:
        """The content ids that the store's schema /1 rows have once upgraded: a /1 row keeps its old id,
        so the same measurement ingested again (upgraded, with its new id) must be found by this one."""
        rows = self._db.execute(
            "SELECT body FROM records WHERE body LIKE '%\"anebench.result/1\"%'"
        ).fetchall()
        found = set()
        for (body,) in rows:
            try:
                found.add(ResultRecord.model_validate_json(body).content_id())
            except (ValueError, TypeError, ArithmeticError, RecursionError):
                continue  # a row this version cannot load matches nothing
        return found

    def _insert(self, prepared: list[ResultRecord], source_label: str) -> IngestReport:
        report = IngestReport(source_label)
        now = utc_now().isoformat()
        with self._db:  # one transaction: committed on success, rolled back on any exception
            upgraded = self._upgraded_ids()
            for record in prepared:
                assert record.id is not None  # ingest gave every record its id
                if record.id in upgraded:  # already here as a /1 row
                    report.duplicates += 1
                    continue
                chip = record.chip
                body, analyses = split(json.loads(record.model_dump_json(by_alias=True)))
                self._db.executemany("INSERT OR IGNORE INTO suite_results (id, kind, body) VALUES (?, ?, ?)",
                                     analyses)
                cursor = self._db.execute(
                    "INSERT OR IGNORE INTO records (id, provenance, tool, chip, chip_key, workload, "
                    "fingerprint, engine, device, suite, gbps, latency_s, created, source_label, "
                    "ingested_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id, record.provenance, record.tool.name, chip, chip_key(chip),
                        record.workload.name, record.workload.fingerprint, record.engine.name,
                        record.engine.device, record.suite, record.gbps, record.latency_s(),
                        record.created.isoformat(), source_label, now, stored_json(body),
                    ),
                )
                if cursor.rowcount:
                    report.added += 1
                    report.ids.append(record.id)
                else:
                    report.duplicates += 1
            self._db.execute(
                "INSERT INTO ingests (source_label, at, added, duplicates) VALUES (?, ?, ?, ?)",
                (source_label, now, report.added, report.duplicates),
            )
        return report

    def records(self, provenance: str | None = None) -> list[ResultRecord]:
        query = "SELECT body FROM records"
        args: tuple = ()
        if provenance:
            query += " WHERE provenance = ?"
            args = (provenance,)
        query = query.replace("SELECT body", "SELECT id, body")
        rows = with_retries(
            lambda: self._db.execute(query + " ORDER BY created, id", args).fetchall(), self.path
        )
        analyses = self._analyses()
        loaded, self.skipped = [], []
        for record_id, body in rows:  # one row this version cannot load is skipped by name, as report does
            try:
                loaded.append(ResultRecord.model_validate(join(json.loads(body), analyses)))
            except (ValueError, TypeError, ArithmeticError, RecursionError) as exc:
                first = (str(exc).splitlines() or [""])[0]
                self.skipped.append((str(record_id), f"{type(exc).__name__}: {first}"[:200]))
        return loaded

    def rows(self) -> list[tuple[str, str]]:
        """(id, JSON) of every record, its suite result joined in, for readers that must survive a record
        they cannot load (a row whose JSON or suite result is broken comes back as stored)."""
        query = "SELECT id, body FROM records ORDER BY created, id"
        rows = with_retries(lambda: self._db.execute(query).fetchall(), self.path)
        analyses = self._analyses()
        return [(record_id, joined_json(body, analyses)) for record_id, body in rows]

    def _analyses(self) -> dict[str, dict]:
        return with_retries(lambda: read_analyses(self._db), self.path)

    def count(self) -> int:
        return with_retries(lambda: self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0], self.path)

    def listing(self) -> list[StoredRecord]:
        """What `store list` shows of every record, oldest first, read from the indexed columns and the
        host section only (a record the current model cannot load is still listed)."""
        query = ("SELECT id, suite, workload, engine, device, provenance, gbps, created, source_label, "
                 "json_extract(body, '$.host.chip'), json_extract(body, '$.host.cpu_model') "
                 "FROM records ORDER BY created, id")
        rows = with_retries(lambda: self._db.execute(query).fetchall(), self.path)
        return [
            StoredRecord(
                id=row[0], suite=row[1], workload=row[2], engine=row[3], device=row[4], provenance=row[5],
                gbps=row[6], created=row[7], source_label=row[8], host=row[9] or row[10] or "",
            )
            for row in rows
        ]

    def _one_id(self, prefix: str) -> str:
        """The full id of the one record whose id starts with ``prefix`` (at least 8 hex digits)."""
        if not (8 <= len(prefix) <= 64 and all(c in "0123456789abcdef" for c in prefix)):
            raise UserError(f"record id {prefix[:80]!r}: give at least 8 hex digits of an id")
        query = "SELECT id FROM records WHERE id LIKE ? || '%' LIMIT 2"
        found = self._db.execute(query, (prefix,)).fetchall()
        if not found:
            raise UserError(f"record {prefix}: no record in {self.path} has this id")
        if len(found) > 1:
            raise UserError(f"record {prefix}: more than one record starts with it; give more digits")
        return str(found[0][0])

    def body(self, prefix: str) -> tuple[str, str]:
        """(full id, stored JSON) of the one record whose id starts with ``prefix``."""

        def read() -> tuple[str, str]:
            record_id = self._one_id(prefix)
            row = self._db.execute("SELECT body FROM records WHERE id = ?", (record_id,)).fetchone()
            return record_id, joined_json(str(row[0]), self._analyses())

        return with_retries(read, self.path)

    def remove(self, *prefixes: str) -> list[str]:
        """Delete the records whose ids start with ``prefixes`` (each at least 8 hex digits, each naming
        exactly one record); their full ids. All or nothing: every prefix is checked before any row is
        deleted, in one transaction, so a refused command leaves the store as it was."""
        for prefix in prefixes:
            if not (8 <= len(prefix) <= 64 and all(c in "0123456789abcdef" for c in prefix)):
                raise UserError(f"record id {prefix[:80]!r}: give at least 8 hex digits of an id")

        def delete() -> list[str]:
            with self._db:
                ids = []
                for prefix in prefixes:
                    found = self._db.execute("SELECT id FROM records WHERE id LIKE ? || '%' LIMIT 2",
                                             (prefix,)).fetchall()
                    if not found:
                        raise UserError(f"record {prefix}: no record in {self.path} has this id; "
                                        "nothing was removed")
                    if len(found) > 1:
                        raise UserError(f"record {prefix}: more than one record starts with it; give more "
                                        "digits; nothing was removed")
                    ids.append(str(found[0][0]))
                for record_id in dict.fromkeys(ids):
                    self._db.execute("DELETE FROM records WHERE id = ?", (record_id,))
                remove_orphans(self._db)
                return list(dict.fromkeys(ids))

        return with_retries(delete, self.path)


def open_store(path: Path | str | None = None, create: bool = True, readonly: bool = False) -> Store:
    """Open the store at ``path`` (default: the platform's user data dir); ``create``: make it if absent.

    Without ``create`` no file or folder is ever made (``report``, ``store remove``); ``readonly``
    (``report``) opens the database so that it cannot be changed either.
    """
    path = Path(path) if path is not None else default_db_path()
    if path.exists() and path.is_dir():
        raise UserError(f"{DB} {path}: is a directory; give a database file name")
    if path.exists() and not path.is_file():
        raise UserError(f"{DB} {path}: not a regular file (a device or FIFO); give a database file")
    if not create and not path.exists():
        raise UserError(
            f"{DB} {path}: no such database; run `anebench ingest` first or give an existing {DB}"
        )
    return Store(connect_store(path, create, readonly), path)


