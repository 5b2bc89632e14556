"""Validation before anything is stored: the schema (types, ranges) plus plausibility across fields.

Every problem is one line naming the file, the record and the field, so a contributor can fix a whole
file in one pass instead of one error per attempt.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from pydantic import ValidationError

from ..errors import UserError
from .files import read_json_file
from ..model import DOCUMENT_SCHEMA, OLD_DOCUMENT_SCHEMAS, ResultRecord

# A stated GB/s and a stated latency must agree with the stated bytes within this fraction; the
# published figures are rounded to 2-3 digits, which is well inside it.
CONSISTENCY_TOLERANCE = 0.03
MIN_LATENCY_S = 1e-6  # no timer used here resolves a weight-streaming call shorter than this
MAX_PROBLEMS_SHOWN = 50


class InvalidFile(UserError):
    """A file with at least one invalid record: nothing from it is stored. ``problems``: one line each."""

    def __init__(self, path: str | Path, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s); nothing from this file was stored")


def _pydantic_problems(exc: ValidationError, where: str) -> list[str]:
    lines = []
    for error in exc.errors():
        field = ".".join(str(p) for p in error["loc"]) or "(record)"
        lines.append(f"{where}: {field}: {error['msg']}")
    return lines


def plausibility_problems(record: ResultRecord) -> list[str]:
    """Cross-field checks the schema cannot express; an empty list means the record is plausible."""
    problems = []
    if not record.tool.name.strip() or not record.tool.version.strip():
        problems.append("tool: name and version are required provenance")
    if record.provenance in ("published", "imported") and not record.provenance_note.strip():
        problems.append(f"provenance_note: required for {record.provenance} records (name the source)")
    latency = record.latency_s()
    if record.gbps is None and latency is None:
        problems.append(f"gbps / summary.{record.method.statistic}: the record states no figure at all")
    if latency is not None and latency < MIN_LATENCY_S:
        problems.append(f"summary.{record.method.statistic}: {latency:g} s is below {MIN_LATENCY_S:g} s")
    if record.gbps is not None and latency is not None and not record.facts.weight_bytes_unknown:
        implied = record.workload.weight_bytes / latency / 1e9
        if abs(implied - record.gbps) / record.gbps > CONSISTENCY_TOLERANCE:
            problems.append(
                f"gbps: {record.gbps:g} disagrees with weight_bytes / latency = {implied:.4g} GB/s"
            )
    if record.provenance == "measured":
        if not record.samples_s:
            problems.append("samples_s: a measured record must keep its raw samples")
        elif record.method.runs is not None and record.method.runs != len(record.samples_s):
            problems.append(f"method.runs: {record.method.runs} but {len(record.samples_s)} samples")
        if record.method.runs is None:
            problems.append("method.runs: a measured record must state its run count")
    s = record.summary
    if s.min is not None and s.max is not None and s.min > s.max:
        problems.append("summary: min is above max")
    if None not in (s.median, s.ci95_low, s.ci95_high) and not s.ci95_low <= s.median <= s.ci95_high:
        problems.append("summary: median lies outside its 95% confidence interval")
    created = record.created if record.created.tzinfo else record.created.replace(tzinfo=timezone.utc)
    if created > datetime.now(timezone.utc) + timedelta(days=1):
        problems.append(f"created: {record.created.isoformat()} is in the future")
    if record.id is not None and record.id != record.content_id():
        problems.append("id: does not match the record's content (edited after it was made?)")
    return problems


def validate_raw(data: object, where: str) -> tuple[ResultRecord | None, list[str]]:
    """One raw record (parsed JSON) -> (record with id, []) or (None, problems)."""
    try:
        record = ResultRecord.model_validate(data)
    except ValidationError as exc:
        return None, _pydantic_problems(exc, where)
    problems = [f"{where}: {p}" for p in plausibility_problems(record)]
    if problems:
        return None, problems
    return (record if record.id else record.with_id()), []


def validate_records(records: list[ResultRecord], label: str) -> list[str]:
    problems = []
    for index, record in enumerate(records, 1):
        problems += [f"{label}: record {index}: {p}" for p in plausibility_problems(record)]
    return problems


def load_result_file(path: Path) -> list[ResultRecord]:
    """An anebench results document or a single record; every invalid record reported, none kept."""
    path = Path(path)
    data = read_json_file(path)
    if isinstance(data, dict) and data.get("schema") in (DOCUMENT_SCHEMA, *OLD_DOCUMENT_SCHEMAS):
        raw = data.get("results")
        if not isinstance(raw, list):
            raise InvalidFile(path, [f"{path}: results: must be a list of records"])
        extra = sorted(set(data) - {"schema", "results"})
        problems = [f"{path}: unexpected top-level field(s): {', '.join(extra)}"] if extra else []
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
