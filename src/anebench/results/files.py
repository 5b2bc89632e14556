"""Reading and writing result files: atomic writes, one document schema, clear errors."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from pydantic import ValidationError

from ..errors import UserError
from ..model import DOCUMENT_SCHEMA, OLD_DOCUMENT_SCHEMAS, ResultRecord, ResultsDocument


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write to a temporary file beside ``path`` and rename it into place: never half-written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(handle.fileno(), 0o666 & ~_umask())  # mkstemp makes 0600; results are shared files
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _read_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# Read once at import: os.umask can only be read by setting it, which is unsafe once threads run.
_UMASK = _read_umask()


def _umask() -> int:
    return _UMASK


def document_json(records: list[ResultRecord]) -> str:
    document = ResultsDocument(results=[r if r.id else r.with_id() for r in records])
    return document.model_dump_json(by_alias=True, indent=1) + "\n"


def save_records(path: Path, records: list[ResultRecord]) -> None:
    atomic_write_text(Path(path), document_json(records))


def read_json_file(path: Path):
    """The parsed JSON of ``path``; a UserError naming the file says why it cannot be read."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise UserError(f"{path}: is a directory; give a results JSON file") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UserError(f"{path}: not valid JSON ({exc})") from None
    except OSError as exc:  # permission denied, a file used as a directory, an I/O error
        raise UserError(f"{path}: cannot be read ({exc.strerror or exc})") from None


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
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise UserError(f"{path}: invalid result at {where}: {first['msg']}") from None
