"""The one sha256 streamer, the one cache resolver and the one validation-error formatter."""

from __future__ import annotations

import hashlib

import pytest
from pydantic import BaseModel, ValidationError

from anebench.errors import UserError
from anebench.util import hashing, paths
from anebench.util.validation import error_lines


def test_stream_sha256_hashes_a_range_or_the_whole_file_across_chunks(tmp_path, monkeypatch):
    monkeypatch.setattr(hashing, "CHUNK_BYTES", 7)  # many chunks, the last one partial
    data = bytes(range(256)) * 3
    path = tmp_path / "blob"
    path.write_bytes(data)
    assert hashing.file_sha256(path) == hashlib.sha256(data).hexdigest()
    assert hashing.stream_sha256(path, 10, 100) == hashlib.sha256(data[10:110]).hexdigest()
    assert hashing.stream_sha256(path, 10, 0) == hashlib.sha256(b"").hexdigest()


def test_stream_sha256_names_a_short_or_missing_file(tmp_path):
    path = tmp_path / "blob"
    path.write_bytes(b"x" * 10)
    with pytest.raises(UserError, match="blob: truncated while hashing \\(5 bytes missing\\)"):
        hashing.stream_sha256(path, 5, 10)
    with pytest.raises(UserError, match="missing: cannot read"):
        hashing.file_sha256(tmp_path / "missing")


def test_cache_dirs_are_kinds_under_one_root(tmp_path, monkeypatch):
    monkeypatch.setenv(paths.CACHE_ENV, str(tmp_path / "c"))
    assert paths.cache_dir("tensor-sha256") == tmp_path / "c" / "tensor-sha256"
    monkeypatch.delenv(paths.CACHE_ENV)
    assert paths.cache_dir("tensor-sha256").parent == paths.cache_root()
    assert "anebench" in str(paths.cache_root())


def test_error_lines_give_one_line_per_field():
    class Point(BaseModel):
        x: int
        tags: list[int]

    with pytest.raises(ValidationError) as caught:
        Point.model_validate({"x": "a", "tags": [1, "b"]})
    lines = error_lines(caught.value)
    assert [line.split(":")[0] for line in lines] == ["x", "tags.1"]
    with pytest.raises(ValidationError) as caught:
        Point.model_validate("not an object")
    assert error_lines(caught.value, "document")[0].startswith("document: ")
