"""Suite results stored once: the store keeps each suite's analysis in one row, its points refer to it.

A sweep's fit and knee, a roofline's ridge and peaks, a concurrency run's verdict and rule are the same in
every point of one suite result (``model.suites.ANALYSIS_FIELDS``). The store keeps each analysis once in
its ``suite_results`` table, keyed by a content id (the sha256 of the suite kind and the analysis's
canonical JSON), and each point's row keeps only the fields that identify the point plus that id, under
``REFERENCE`` in the section. Reading a row joins them again, so a loaded record is whole and keeps the
content id it had (the id is computed from the whole record, never from the stored row).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from ..model import Concurrency, RooflinePoint, SweepPoint
from ..model.suites import ANALYSIS_FIELDS

REFERENCE = "suite_result"  # in a stored point's section: the id of its suite result
SECTION_MODELS: dict[str, type[BaseModel]] = {
    "sweep": SweepPoint, "roofline": RooflinePoint, "concurrency": Concurrency,
}

StoredAnalysis = tuple[str, str, str]  # (id, kind, the analysis's canonical JSON)


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def analysis_id(kind: str, analysis_json: str) -> str:
    return hashlib.sha256(f"{kind}\n{analysis_json}".encode()).hexdigest()


def split(body: dict[str, Any]) -> tuple[dict[str, Any], list[StoredAnalysis]]:
    """``body`` (a record's JSON) with each suite section's analysis replaced by its suite result's id,
    and the suite results to store (each once: a repeated id is the same analysis)."""
    point = dict(body)
    found = []
    for kind, fields in ANALYSIS_FIELDS.items():
        section = body.get(kind)
        if not isinstance(section, dict) or REFERENCE in section:
            continue
        analysis = {name: section[name] for name in fields if name in section}
        if not analysis:
            continue
        text = canonical(analysis)
        key = analysis_id(kind, text)
        point[kind] = {**{k: v for k, v in section.items() if k not in analysis}, REFERENCE: key}
        found.append((key, kind, text))
    return point, found


def join(body: dict[str, Any], analyses: Mapping[str, dict[str, Any]]) -> dict[str, Any]:
    """``body`` as stored, with each section's suite result put back (in the section's field order).

    A reference the store does not hold raises ValueError: the row cannot be loaded, and readers skip it
    by name as they skip any row they cannot load."""
    whole = dict(body)
    for kind, model in SECTION_MODELS.items():
        section = body.get(kind)
        if not isinstance(section, dict) or REFERENCE not in section:
            continue
        key = section[REFERENCE]
        analysis = analyses.get(key)
        if analysis is None:
            raise ValueError(f"{kind}: its suite result {str(key)[:16]} is not in the store")
        merged = {**{k: v for k, v in section.items() if k != REFERENCE}, **analysis}
        order = [field.alias or name for name, field in model.model_fields.items()]
        whole[kind] = {name: merged[name] for name in order if name in merged} | {
            name: value for name, value in merged.items() if name not in order}
    return whole


def stored_json(body: dict) -> str:
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def joined_json(body: str, analyses: dict[str, dict]) -> str:
    """A stored row's JSON with its suite result joined in; as stored where it cannot be (the loader then
    names what is wrong with it)."""
    try:
        return stored_json(join(json.loads(body), analyses))
    except ValueError:
        return body


def remove_orphans(db: sqlite3.Connection) -> None:
    """Delete the suite results no row refers to any more (after rows were removed)."""
    if not db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'suite_results'"
                      ).fetchone():
        return
    used = " UNION ".join(
        f"SELECT json_extract(body, '$.{kind}.suite_result') AS id FROM records "
        f"WHERE json_extract(body, '$.{kind}.suite_result') IS NOT NULL"
        for kind in ("sweep", "roofline", "concurrency")
    )
    db.execute(f"DELETE FROM suite_results WHERE id NOT IN ({used})")


def upgrade_rows(db: sqlite3.Connection) -> None:
    """A /1 store's rows in the /2 shape: each suite analysis moved to ``suite_results``, once. A row
    holding a /1 record is left as stored (it keeps its old id; the model upgrades it on loading)."""
    for record_id, body in db.execute("SELECT id, body FROM records").fetchall():
        try:
            document = json.loads(body)
        except ValueError:
            continue  # a damaged row stays as it is: readers skip it by name
        if not isinstance(document, dict) or document.get("schema") != "anebench.result/2":
            continue
        point, analyses = split(document)
        if analyses:
            db.executemany("INSERT OR IGNORE INTO suite_results (id, kind, body) VALUES (?, ?, ?)", analyses)
            db.execute("UPDATE records SET body = ? WHERE id = ?", (stored_json(point), record_id))


def read_analyses(db: sqlite3.Connection) -> dict[str, dict]:
    """Every stored suite result by id (none in a /1 store opened read-only: it has no such table)."""
    try:
        rows = db.execute("SELECT id, body FROM suite_results").fetchall()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return {}
        raise
    found = {}
    for key, body in rows:
        try:
            found[str(key)] = json.loads(body)
        except ValueError:
            continue  # a damaged analysis: the rows that refer to it are skipped by name on loading
    return found
