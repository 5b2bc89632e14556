"""The results store: SQLite (stdlib), one transaction per ingested file, records keyed by content id.

The full record is kept as JSON; a few columns are copied out for querying. Re-ingesting a record is a
no-op because its id is the sha256 of its content. Reports only read from here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import platformdirs

from ..errors import UserError
from ..system.chips import chip_key
from ..model import ResultRecord, utc_now
from .validate import InvalidFile, validate_records

STORE_SCHEMA = "anebench.store/1"
DB_FILENAME = "results.sqlite"

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
CREATE TABLE IF NOT EXISTS ingests (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    source_label TEXT NOT NULL,
    at TEXT NOT NULL,
    added INTEGER NOT NULL,
    duplicates INTEGER NOT NULL
);
"""


def default_db_path() -> Path:
    return Path(platformdirs.user_data_dir("anebench", appauthor=False)) / DB_FILENAME


@dataclass
class IngestReport:
    source_label: str
    added: int = 0
    duplicates: int = 0
    ids: list[str] = field(default_factory=list)

    @property
    def total(self) -> int:
        return self.added + self.duplicates


def record_chip(record: ResultRecord) -> str | None:
    """The chip a figure belongs to: the GPU for CUDA devices, else the host's chip."""
    if record.engine.device.startswith("cuda"):
        gpu = record.engine.details.get("gpu")
        if isinstance(gpu, str) and gpu:
            return gpu
    return record.host.chip


class Store:
    def __init__(self, connection: sqlite3.Connection, path: Path):
        self._db = connection
        self.path = path

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
        report = IngestReport(source_label)
        now = utc_now().isoformat()
        with self._db:  # one transaction: committed on success, rolled back on any exception
            for record in prepared:
                chip = record_chip(record)
                cursor = self._db.execute(
                    "INSERT OR IGNORE INTO records (id, provenance, tool, chip, chip_key, workload, "
                    "fingerprint, engine, device, suite, gbps, latency_s, created, source_label, "
                    "ingested_at, body) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id, record.provenance, record.tool.name, chip, chip_key(chip),
                        record.workload.name, record.workload.fingerprint, record.engine.name,
                        record.engine.device, record.suite, record.gbps, record.latency_s(),
                        record.created.isoformat(), source_label, now,
                        record.model_dump_json(by_alias=True),
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
        rows = self._db.execute(query + " ORDER BY created, id", args).fetchall()
        return [ResultRecord.model_validate_json(body) for (body,) in rows]

    def count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM records").fetchone()[0]


def open_store(path: Path | str | None = None) -> Store:
    """Open (creating if needed) the store at ``path``, default: the platform's user data dir."""
    path = Path(path) if path is not None else default_db_path()
    if path.exists() and path.is_dir():
        raise UserError(f"--db {path}: is a directory; give a database file name")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(path)
        try:
            _prepare(connection, path)
        except BaseException:
            connection.close()  # a refused file is left as it was, not held open
            raise
    except sqlite3.DatabaseError as exc:
        raise UserError(f"--db {path}: not an anebench results database ({exc})") from None
    except OSError as exc:
        raise UserError(f"--db {path}: cannot create the database ({exc.strerror})") from None
    return Store(connection, path)


def _prepare(connection: sqlite3.Connection, path: Path) -> None:
    """Create the tables of a new store. Another store schema, or another program's database, is
    refused before anything is written to it."""
    tables = {name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    found = None
    if "meta" in tables:
        found = connection.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
    if found is not None and found[0] != STORE_SCHEMA:
        raise UserError(f"--db {path}: store schema {found[0]!r}; this anebench reads {STORE_SCHEMA}")
    if tables and found is None:
        shown = ", ".join(sorted(tables)[:5])
        raise UserError(f"--db {path}: a SQLite database of something else (tables {shown}); give a new file "
                        "or an anebench results database")
    with connection:
        connection.executescript(_DDL)
        if found is None:
            connection.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (STORE_SCHEMA,))
