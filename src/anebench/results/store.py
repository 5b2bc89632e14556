"""The results store: SQLite (stdlib), one transaction per ingested file, records keyed by content id.

The record is kept as JSON; a few columns are copied out for querying. A suite's analysis (a sweep's fit,
a roofline's ridge, a concurrency verdict) is kept once, in ``suite_results``, and each point's row refers
to it (results/suite_results.py); reading a row joins them. Re-ingesting a record is a no-op because its
id is the sha256 of its content. Reports only read from here.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from ..errors import UserError, setting
from ..model import ResultRecord, utc_now
from ..system.chips import chip_key
from ..util.paths import data_dir
from .suite_results import (
    join,
    joined_json,
    read_analyses,
    remove_orphans,
    split,
    stored_json,
    upgrade_rows,
)
from .validate import InvalidFile, validate_records

T = TypeVar("T")
STORE_SCHEMA = "anebench.store/2"
# /1 kept every suite analysis in each point's row; opened writable, a /1 store is upgraded in place
OLD_STORE_SCHEMAS = ("anebench.store/1",)
DB_FILENAME = "results.sqlite"
DB = setting("db")  # where the store is; the CLI writes the flag that set it

_DDL = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    id TEXT PRIMARY KEY,
    provenance TEXT NOT NULL,
    tool TEXT NOT NULL,
    chip TEXT,
    chip_key TEXT,
    workload TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    engine TEXT NOT NULL,
    device TEXT NOT NULL,
    suite TEXT NOT NULL,
    gbps REAL,
    latency_s REAL,
    created TEXT NOT NULL,
    source_label TEXT NOT NULL,
    ingested_at TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS records_by_chip ON records (chip_key, fingerprint);
CREATE TABLE IF NOT EXISTS suite_results (
    id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    body TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS ingests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    source_label TEXT NOT NULL,
    at TEXT NOT NULL,
    added INTEGER NOT NULL,
    duplicates INTEGER NOT NULL
);
"""


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


BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another process's transaction
RETRIES = 3  # whole attempts after a busy timeout, with a short pause between them


def recover_hot_journal(path: Path) -> None:
    """A write interrupted by SIGKILL (an ingest killed mid-transaction) leaves a hot rollback journal
    beside the store; a read-only connection cannot roll it back and fails as "read-only". Roll it back
    with a short writable connection (what any SQLite writer does first); where that is not allowed,
    say what is wrong instead of blaming permissions on the store."""
    journal = path.with_name(path.name + "-journal")
    try:
        if journal.stat().st_size == 0:
            return
    except OSError:
        return
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=rw", timeout=BUSY_TIMEOUT_S, uri=True)
        try:
            connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()  # rolls the journal back
        finally:
            connection.close()
    except sqlite3.Error as exc:
        raise UserError(
            f"{DB} {path}: an interrupted write left a hot journal ({journal.name}) that must be rolled back "
            f"before the store can be read, and this process cannot write there ({exc}); run any anebench "
            f"command that writes the store (e.g. ingest with {setting('published')} and this {DB}) with "
            "write access"
        ) from None


def describe_sqlite_error(exc: sqlite3.Error, path: Path) -> str:
    """One line naming what went wrong with the database at ``path``."""
    text = str(exc).lower()
    if "locked" in text or "busy" in text:
        return (f"{DB} {path}: the database is locked by another process (waited {BUSY_TIMEOUT_S:.0f} s, "
                f"{RETRIES} attempts); try again when it has finished")
    if "readonly" in text or "read-only" in text:
        return f"{DB} {path}: the database (or its folder) is read-only; give a writable {DB}"
    if "malformed" in text or "not a database" in text or "encrypted" in text:
        return (
            f"{DB} {path}: not an anebench results database: not SQLite, or damaged ({exc}); "
            f"give another {DB}"
        )
    if "full" in text:
        return f"{DB} {path}: the disk is full; nothing was stored"
    if "unable to open" in text:
        return f"{DB} {path}: cannot open the database file (missing folder or permissions)"
    if "disk i/o" in text:
        return f"{DB} {path}: an I/O error while using the database ({exc})"
    return f"{DB} {path}: database error ({exc})"


def with_retries(action: Callable[[], T], path: Path) -> T:
    """Run ``action``; a busy database is retried, every SQLite failure becomes a one-line UserError."""
    for attempt in range(RETRIES):
        try:
            return action()
        except sqlite3.OperationalError as exc:
            if ("locked" in str(exc) or "busy" in str(exc)) and attempt + 1 < RETRIES:
                time.sleep(0.2 * (attempt + 1))
                continue
            raise UserError(describe_sqlite_error(exc, path)) from None
        except sqlite3.Error as exc:
            raise UserError(describe_sqlite_error(exc, path)) from None
    raise AssertionError("unreachable")


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

    if readonly and not create:
        recover_hot_journal(path)

    def connect() -> sqlite3.Connection:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
        else:
            mode = "ro" if readonly else "rw"  # "rw" fails on a missing file instead of creating it
            connection = sqlite3.connect(
                f"{path.resolve().as_uri()}?mode={mode}", timeout=BUSY_TIMEOUT_S, uri=True
            )
        try:
            _prepare(connection, path, create)
        except BaseException:
            connection.close()  # a refused file is left as it was, not held open
            raise
        return connection

    try:
        connection = with_retries(connect, path)
    except OSError as exc:
        raise UserError(f"{DB} {path}: cannot create the database ({exc.strerror})") from None
    return Store(connection, path)


def _prepare(connection: sqlite3.Connection, path: Path, create: bool = True) -> None:
    """Create the tables of a new store. Another store schema, or another program's database, is
    refused before anything is written to it. Several processes creating one new store at once take
    turns: the check and the creation run in one write transaction (BEGIN IMMEDIATE)."""
    if create:
        connection.execute("BEGIN IMMEDIATE")
    try:
        tables = {
            name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        }
        found = None
        if "meta" in tables:
            found = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        if found is not None and found[0] not in (STORE_SCHEMA, *OLD_STORE_SCHEMAS):
            raise UserError(f"{DB} {path}: store schema {found[0]!r}; this anebench reads {STORE_SCHEMA}")
        if tables and found is None:
            shown = ", ".join(sorted(tables)[:5])
            raise UserError(f"{DB} {path}: a SQLite database of something else (tables {shown}); give a new "
                            "file or an anebench results database")
        if not create:
            if found is None:
                raise UserError(f"{DB} {path}: an empty database, not an anebench results store")
            return
        for statement in _DDL.split(";"):
            if statement.strip():
                connection.execute(statement)
        if found is not None and found[0] in OLD_STORE_SCHEMAS:
            upgrade_rows(connection)
            connection.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (STORE_SCHEMA,))
        connection.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (STORE_SCHEMA,))
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
