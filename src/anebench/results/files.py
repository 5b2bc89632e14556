"""Result files: one document schema, written atomically, read by one loader with clear errors.

A document holds each suite result once (``results.suite_document``); older documents load through
``results.upgrade``; every loaded record is whole, as it was before it was written.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from ..errors import UserError, setting
from ..model import DOCUMENT_SCHEMA, ResultRecord, ResultsDocument
from ..util.inputs import read_json
from ..util.outputs import Protected, atomic_write_bytes
from ..util.validation import error_lines
from .suite_document import SUITE_RESULTS, compact, expand
from .upgrade import DOCUMENT_SCHEMAS, upgrade_document
from .validate import InvalidFile, validate_raw

DOCUMENT_KEYS = ("schema", SUITE_RESULTS, "results")


def document_json(records: list[ResultRecord]) -> str:
    """The results document of ``records`` (each given its id): each suite result once, then the points."""
    whole = [(r if r.id else r.with_id()).model_dump(mode="json", by_alias=True) for r in records]
    return json.dumps(compact(whole), indent=1, ensure_ascii=False) + "\n"


def save_records(path: Path, records: list[ResultRecord], what: str = setting("out"), force: bool = False,
                 protected: Protected = ()) -> Path:
    return atomic_write_bytes(Path(path), document_json(records).encode("utf-8"), what, force, protected)


def load_result_file(path: Path, strict: bool = False) -> list[ResultRecord]:
    """The records of a results document (this schema or an older one) or of a single record.

    Not ``strict``: a file anebench wrote, read back (a saved sweep, a test's output): the schema only,
    and the first problem is named with where it is. ``strict``: a file about to be stored, compared or
    submitted (ingest, compare, submit): the schema and the cross-field plausibility checks, every
    problem of every record reported (:class:`InvalidFile`) and no record kept.
    """
    path = Path(path)
    data = read_json(path)
    document = isinstance(data, dict) and data.get("schema") in DOCUMENT_SCHEMAS
    problems: list[str] = []
    if document:
        data = upgrade_document(data)
        joined, problems = expand(data, str(path))
        data = {**data, "results": joined}
    if not strict:
        if problems:
            raise UserError(problems[0])
        try:
            if document:
                return ResultsDocument.model_validate(
                    {key: value for key, value in data.items() if key != SUITE_RESULTS}).results
            return [ResultRecord.model_validate(data)]
        except ValidationError as exc:
            raise UserError(f"{path}: invalid result at {error_lines(exc)[0]}") from None
    if document:
        raw = data.get("results")
        if not isinstance(raw, list):
            raise InvalidFile(path, [f"{path}: results: must be a list of records"])
        extra = sorted(set(data) - set(DOCUMENT_KEYS))
        problems += [f"{path}: unexpected top-level field(s): {', '.join(extra)}"] if extra else []
    elif isinstance(data, dict):
        raw, problems = [data], []
    else:
        raise UserError(f"{path}: expected a results document ({DOCUMENT_SCHEMA}) or one result record")
    records = []
    for index, item in enumerate(raw, 1):
        record, found = validate_raw(item, f"{path}: record {index}")
        problems += found
        if record is not None:
            records.append(record)
    if problems:
        raise InvalidFile(path, problems)
    return records
