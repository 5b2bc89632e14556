"""The leaderboard's SQLite file, built deterministically from the accepted submissions.

The same rows in the same order through the same SQLite give the same bytes: rows are inserted sorted,
no column holds a time of building, the page size is fixed and the file is VACUUMed. Across SQLite
versions the bytes can still differ (the header names the library version that wrote the file), so
``--check`` compares the logical content (``dump``), not the bytes.

It is also an anebench results store (``meta`` and ``records`` tables, STORE_SCHEMA), so
``anebench report --db leaderboard/results.sqlite`` reads it, and Datasette serves its other tables:
``matrix`` (the per-chip matrix), ``results`` (one row per record) and ``submissions``.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from ..system.chips import chip_key
from .aggregate import Aggregate
from .leaderboard import Rejected, Repository
from .store_db import STORE_DDL, STORE_SCHEMA

PAGE_SIZE = 4096

LEADERBOARD_DDL = """
CREATE TABLE matrix (
    chip TEXT NOT NULL, config TEXT NOT NULL, workload TEXT NOT NULL, fingerprint TEXT NOT NULL,
    engine TEXT NOT NULL, device TEXT NOT NULL, median_gbps REAL NOT NULL, gbps_rel_halfwidth95 REAL,
    contributors INTEGER NOT NULL, submitters INTEGER NOT NULL, median_latency_s REAL,
    memory_bandwidth TEXT NOT NULL, utilisation_low REAL, utilisation_high REAL, tier INTEGER,
    timing TEXT NOT NULL, flags TEXT NOT NULL
);
CREATE TABLE results (
    id TEXT PRIMARY KEY, submission TEXT NOT NULL, chip TEXT, chip_key TEXT, workload TEXT NOT NULL,
    fingerprint TEXT NOT NULL, engine TEXT NOT NULL, engine_version TEXT NOT NULL, device TEXT NOT NULL,
    suite TEXT NOT NULL, batch INTEGER NOT NULL, tokens INTEGER NOT NULL, weight_bytes INTEGER NOT NULL,
    gbps REAL, latency_s REAL, runs INTEGER, timer TEXT NOT NULL, created TEXT NOT NULL,
    tool_version TEXT NOT NULL, os_version TEXT NOT NULL, power_source TEXT, warnings TEXT NOT NULL
);
CREATE TABLE submissions (
    path TEXT PRIMARY KEY, run_id TEXT NOT NULL, chip TEXT NOT NULL, records INTEGER NOT NULL,
    tool_version TEXT NOT NULL, tool_commit TEXT, tool_dirty INTEGER, os TEXT NOT NULL,
    os_version TEXT NOT NULL, power_source TEXT, low_power_mode INTEGER, thermal_state TEXT,
    host_ids INTEGER NOT NULL, log TEXT
);
CREATE TABLE rejected (path TEXT PRIMARY KEY, reason TEXT NOT NULL);
CREATE INDEX results_by_chip ON results (chip_key, fingerprint, engine, device);
"""


def _matrix_rows(agg: Aggregate, submitters: dict[tuple, int]) -> list[tuple]:
    rows = []
    for r in agg.rows:
        low, high = r.utilisation or (None, None)
        rows.append(
            (
                r.chip,
                r.config,
                r.workload,
                r.fingerprint,
                r.engine,
                r.device,
                r.median_gbps,
                r.gbps_halfwidth,
                r.contributors,
                submitters.get((r.chip, r.config, r.fingerprint, r.engine, r.device), 0),
                r.median_latency_s,
                r.bandwidth,
                low,
                high,
                r.tier,
                r.timing,
                "; ".join(r.flags),
            )
        )
    return rows


def write_store(path: Path, repo: Repository, agg: Aggregate, submitters: dict[tuple, int]) -> None:
    """Write the leaderboard's database to ``path`` (a new file)."""
    of = repo.submission_of()
    db = sqlite3.connect(path)
    try:
        db.execute(f"PRAGMA page_size = {PAGE_SIZE}")
        db.execute("PRAGMA journal_mode = DELETE")
        db.executescript(STORE_DDL + ";" + LEADERBOARD_DDL)
        with db:
            db.execute("INSERT INTO meta (key, value) VALUES ('schema', ?)", (STORE_SCHEMA,))
            records = sorted(repo.records, key=lambda r: r.id or "")
            for r in records:
                chip = r.chip
                created = r.created.isoformat()
                db.execute(
                    "INSERT INTO records (id, provenance, tool, chip, chip_key, workload, fingerprint, "
                    "engine, device, suite, gbps, latency_s, created, source_label, ingested_at, body) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        r.id,
                        r.provenance,
                        r.tool.name,
                        chip,
                        chip_key(chip),
                        r.workload.name,
                        r.workload.fingerprint,
                        r.engine.name,
                        r.engine.device,
                        r.suite,
                        r.gbps,
                        r.latency_s(),
                        created,
                        of[r.id or ""],
                        created,
                        r.model_dump_json(by_alias=True),
                    ),
                )
                db.execute(
                    f"INSERT INTO results VALUES ({', '.join('?' * 22)})",
                    (
                        r.id,
                        of[r.id or ""],
                        chip,
                        chip_key(chip),
                        r.workload.name,
                        r.workload.fingerprint,
                        r.engine.name,
                        r.engine.version,
                        r.engine.device,
                        r.suite,
                        r.workload.batch,
                        r.workload.tokens,
                        r.workload.weight_bytes,
                        r.gbps,
                        r.latency_s(),
                        r.method.runs,
                        r.method.timer,
                        created,
                        r.tool.version,
                        r.host.os_version,
                        r.host.power_source,
                        "; ".join(w.text for w in r.warnings),
                    ),
                )
            db.executemany(
                "INSERT INTO matrix VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                _matrix_rows(agg, submitters),
            )
            for sub in sorted(repo.accepted, key=lambda s: s.path):
                e, env, tool = sub.envelope, sub.envelope.environment, sub.envelope.tool
                db.execute(
                    "INSERT INTO submissions VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        sub.path,
                        e.run_id,
                        e.chip,
                        len(sub.records),
                        tool.version,
                        tool.commit,
                        tool.dirty,
                        env.os,
                        env.os_version,
                        env.power_source,
                        env.low_power_mode,
                        env.thermal_state,
                        env.host_ids,
                        e.log,
                    ),
                )
            db.executemany(
                "INSERT INTO rejected VALUES (?, ?)",
                [(x.path, x.reason) for x in sorted(repo.rejected, key=lambda x: x.path)],
            )
        db.execute("VACUUM")
    finally:
        db.close()


def dump(path: Path) -> str:
    """The database's logical content (schema and rows, SQL text): what ``--check`` compares."""
    db = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    try:
        return "\n".join(db.iterdump())
    finally:
        db.close()


__all__ = ["PAGE_SIZE", "Rejected", "dump", "write_store"]
