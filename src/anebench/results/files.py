"""Reading and writing result files: atomic writes, one document schema, clear errors."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from ..errors import UserError, setting
from ..model import DOCUMENT_SCHEMA, OLD_DOCUMENT_SCHEMAS, ResultRecord, ResultsDocument
from ..util import outputs
from ..util.inputs import read_json
from ..util.outputs import Protected
from ..util.validation import error_lines


def atomic_write_bytes(path: Path, data: bytes, what: str = "output", force: bool = False,
                       protected: Protected = (), replaces_own_database: bool = False) -> Path:
    """Write atomically under the output policy (see ``anebench.util.outputs``)."""
    return outputs.atomic_write_bytes(Path(path), data, what, force, protected,
                                      replaces_own_database=replaces_own_database)


def atomic_write_text(path: Path, text: str, what: str = "output", force: bool = False,
                      protected: Protected = ()) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"), what, force, protected)


def document_json(records: list[ResultRecord]) -> str:
    document = ResultsDocument(results=[r if r.id else r.with_id() for r in records])
    return document.model_dump_json(by_alias=True, indent=1) + "\n"


def save_records(path: Path, records: list[ResultRecord], what: str = setting("out"), force: bool = False,
                 protected: Protected = ()) -> Path:
    return atomic_write_text(Path(path), document_json(records), what, force, protected)


def read_json_file(path: Path, what: str = ""):
    """The parsed JSON of ``path`` (a bounded regular file, bounded nesting, finite numbers); a
    UserError naming the file says why it cannot be read."""
    return read_json(Path(path), what)


def load_records(path: Path) -> list[ResultRecord]:
    """A results document, or a single record, that anebench wrote: strict schema, first problem named.

    Files from others go through ``results.validate.load_result_file``, which reports every problem.
    """
    path = Path(path)
    data = read_json_file(path)
    try:
        if isinstance(data, dict) and data.get("schema") in (DOCUMENT_SCHEMA, *OLD_DOCUMENT_SCHEMAS):
            return ResultsDocument.model_validate(data).results
        return [ResultRecord.model_validate(data)]
    except ValidationError as exc:
        raise UserError(f"{path}: invalid result at {error_lines(exc)[0]}") from None
