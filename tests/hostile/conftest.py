"""The hostile corpus: inputs a user or an attacker could hand anebench, generated here, each refused
in one line (exit 2) with the store and every file left byte-identical, or handled correctly."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: clitools, the record helpers


def digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path, monkeypatch):
    """User data and cache dirs in the test's folder: fallback files and caches land there."""
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg-data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def store_db(tmp_path):
    """A store holding the published figures and one measured record; tests assert it never changes."""
    from anebench.cli import main
    from anebench.results.files import save_records
    from test_store import make_record

    db = tmp_path / "store.sqlite"
    result = tmp_path / "one.json"
    save_records(result, [make_record(gbps=100)])
    for argv in (["ingest", "--published", "--db", str(db)], ["ingest", str(result), "--db", str(db)]):
        try:
            main(argv)
        except SystemExit as exc:
            assert not exc.code
    return db


def one_line_error(stderr: str, *needles: str) -> str:
    """The refusal is one line starting with 'error:' (problem lists follow, indented) and no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    assert len(errors) == 1, stderr
    text = " ".join(lines)
    for needle in needles:
        assert needle in text, (needle, stderr)
    return errors[0]
