"""The store's SQLite file: its schema, opening it (a new store made, an old one upgraded in place, a
foreign file refused before anything is written), and one line naming any SQLite failure, with retries
while another process holds it (results/store.py reads and writes the records through it)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from ..errors import UserError, setting
from .suite_results import upgrade_rows

T = TypeVar("T")
STORE_SCHEMA = "anebench.store/2"
# /1 kept every suite analysis in each point's row; opened writable, a /1 store is upgraded in place
OLD_STORE_SCHEMAS = ("anebench.store/1",)
DB = setting("db")  # where the store is; the CLI writes the flag that set it

STORE_DDL = """
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


def connect_store(path: Path, create: bool, readonly: bool) -> sqlite3.Connection:
    """A connection to the store at ``path``, its tables made (``create``) or checked, or one line naming
    what is wrong; a read-only open first rolls back a write that was interrupted."""
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
        return with_retries(connect, path)
    except OSError as exc:
        raise UserError(f"{DB} {path}: cannot create the database ({exc.strerror})") from None


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
        for statement in STORE_DDL.split(";"):
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
