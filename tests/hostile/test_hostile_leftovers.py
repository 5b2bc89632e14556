"""The last leftovers of the hostile review round two (shared/reviews/hostile.md: S7, R6/R7, L5, E18):
one test per failure class, each asserting the exit code, one line, no traceback and nothing lost."""

from __future__ import annotations

import sqlite3

import pytest

from clitools import run_cli
from conftest import digest, one_line_error

# -- class: an ingest that stores nothing prints nothing but its error line (S7) --


def _read_only_store(monkeypatch):
    """The store's folder read-only as SQLite reports it (the tests may run as root, who can write anyway)."""
    from anebench.results.store import Store

    def refuse(self, prepared, source_label):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(Store, "_insert", refuse)


@pytest.mark.parametrize("how", ["read-only store", "bad file"])
def test_an_ingest_that_stores_nothing_prints_only_its_error_line(how, tmp_path, store_db, capsys,
                                                                   monkeypatch):
    from anebench.results.files import save_records
    from test_store import make_record

    source = tmp_path / "in.json"
    if how == "bad file":
        source.write_text('{"schema": "anebench.results/2", "results": [')
    else:
        save_records(source, [make_record(gbps=120)])
        _read_only_store(monkeypatch)
    before = digest(store_db)
    code, out, err = run_cli(capsys, "ingest", str(source), "--db", str(store_db))
    assert code == 2
    assert out == ""  # no empty "ingested into" table
    one_line_error(err, str(source) if how == "bad file" else "read-only")
    assert "ingested into" not in err
    assert digest(store_db) == before


# -- class: the checks on an input take memory bounded by the input, not 16 bytes per byte (R6, R7) --


def test_a_large_input_is_checked_in_a_few_times_its_size(tmp_path, store_db, capsys):
    import tracemalloc

    size = 32 * 1024 * 1024
    big = tmp_path / "big.json"
    big.write_bytes(b"{" + b" " * (size - 2) + b"}")  # all of it outside strings: the worst case for the scan
    before = digest(store_db)
    tracemalloc.start()
    try:
        code, out, err = run_cli(capsys, "ingest", str(big), "--db", str(store_db))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert code == 2 and out == ""
    one_line_error(err, str(big))
    assert digest(store_db) == before
    assert peak < 4 * size, f"peak {peak / size:.1f}x the input"  # was ~17x: two int64 arrays of its length


@pytest.mark.parametrize(
    "text", ["[[[]]]", '{"a": [[1, "]]]"], {"b": [[[[]]]]}}', "]]]][[", "[" * 40 + "]" * 39]
)
def test_the_nesting_depth_is_the_same_across_chunk_boundaries(text, monkeypatch):
    from anebench.util import inputs

    expected = inputs.nesting_depth(text)
    monkeypatch.setattr(inputs, "_DEPTH_CHUNK", 3)
    assert inputs.nesting_depth(text) == expected
    depth = deepest = 0
    for char in inputs._JSON_STRING.sub(b"", text.encode()):
        depth += {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}.get(char, 0)
        deepest = max(deepest, depth)
    assert expected == deepest


@pytest.mark.parametrize(("size", "stated", "kept"), [(10, 10, 10), (30, 10, 30), (80, 10, 51), (80, 80, 51)])
def test_a_file_that_grew_after_its_stat_is_read_whole_up_to_one_byte_past_the_cap(size, stated, kept):
    import io

    from anebench.util.inputs import _read_capped

    assert len(_read_capped(io.BytesIO(b"x" * size), stated, 50)) == kept  # 51 bytes: refused as too large


# -- class: an anemll-bench file is imported whole or not at all, whatever the broken block shows (L5) --


def _anemll_inputs(tmp_path):
    import html
    from pathlib import Path

    whole = (Path(__file__).resolve().parents[1] / "data" / "anemll" / "m4_results.json").read_text()
    second = whole.replace("2025-03-02 14:05:11", "2025-03-03 08:00:00")
    cut_before_marker = second[: second.index('"system_info"')]  # only "timestamp" shows
    cut_inside_results = second[: second.index('"results"') + 40]
    a17 = tmp_path / "a17.md"
    a17.write_text(f"My run:\n\n{whole}\n\nAnd the second one:\n\n{cut_before_marker}\n")
    a18 = tmp_path / "a18.html"
    a18.write_text(f"<html><body><script>var r = {whole};</script>\n"
                   f"<pre>{html.escape(cut_inside_results)}</pre></body></html>\n")
    return {"a17": a17, "a18": a18}


@pytest.mark.parametrize("case", ["a17", "a18"])
def test_a_whole_anemll_block_beside_a_broken_one_imports_nothing(case, tmp_path, store_db, capsys):
    source = _anemll_inputs(tmp_path)[case]
    before = digest(store_db)
    code, out, err = run_cli(capsys, "ingest", "--from", "anemll-bench", str(source), "--db", str(store_db))
    assert code == 2, err
    one_line_error(err, str(source), "nothing from this file was stored")
    assert "result block is broken" in err and out == ""
    assert digest(store_db) == before


def test_the_whole_block_alone_still_imports(tmp_path, store_db, capsys):
    import html
    from pathlib import Path

    whole = (Path(__file__).resolve().parents[1] / "data" / "anemll" / "m4_results.json").read_text()
    page = tmp_path / "both.html"  # the same run raw and escaped: nothing broken
    page.write_text(f"<script>var r = {whole};</script><pre>{html.escape(whole)}</pre>")
    code, _, err = run_cli(capsys, "ingest", "--from", "anemll-bench", str(page), "--db", str(store_db))
    assert code == 0, err


# -- class: an address-space limit below the workload is one line naming it, not numpy's error (E18) --


def test_an_address_space_limit_below_the_workload_names_the_workload_and_its_bytes(tmp_path):
    import os
    import resource
    import subprocess
    import sys
    from pathlib import Path

    if os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_AVPHYS_PAGES") < 2.5e9:
        pytest.skip(reason="the free-memory preflight would refuse the 1.07 GB workload first here")
    limit = 1_500_000 * 1024  # `ulimit -v 1500000` as in the review: python and numpy fit, 1.07 GB more not

    def limited():
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    out = tmp_path / "r.json"
    src = str(Path(__file__).resolve().parents[2] / "src")
    proc = subprocess.run(
        [sys.executable, "-m", "anebench", "run", "--engine", "numpy", "--workload",
         "lm_head:65536x4096:fp32", "--runs", "3", "--warmup", "0", "--out", str(out)],
        # one BLAS thread: each thread reserves its own buffers, which the limit would count
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": src, "OPENBLAS_NUM_THREADS": "1"},
        capture_output=True, text=True, timeout=180, preexec_fn=limited)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc.stderr, "lm_head:65536x4096:fp32", "1.07 GB", "ulimit -v")
    assert "MemoryError" not in proc.stderr and not out.exists()


# -- class: --out naming the file this command's own stdout is redirected to (O8) --


@pytest.mark.parametrize("name", ["/proc/self/fd/1", "printed.txt"])
def test_out_to_the_file_stdout_is_redirected_to_is_refused(name, tmp_path):
    import os
    import subprocess
    import sys
    from pathlib import Path

    if name.startswith("/proc") and not Path("/proc/self/fd/1").exists():
        pytest.skip(reason="no /proc here")
    printed = tmp_path / "printed.txt"
    printed.write_text("kept from before\n")
    src = str(Path(__file__).resolve().parents[2] / "src")
    with printed.open("a") as stdout:
        proc = subprocess.run(
            [sys.executable, "-m", "anebench", "run", "--engine", "numpy", "--workload",
             "lm_head:256x4096:fp32", "--runs", "5", "--warmup", "0", "--out", name],
            cwd=tmp_path, env={**os.environ, "PYTHONPATH": src}, stdout=stdout, stderr=subprocess.PIPE,
            text=True, timeout=180)
    assert proc.returncode == 2, proc.stderr
    one_line_error(proc.stderr, name, "own standard output")
    assert printed.read_text() == "kept from before\n"
