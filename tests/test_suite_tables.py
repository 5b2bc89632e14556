"""Suite tables at 80 columns, warnings once with a count, latency without a hidden sweep, concurrency
progress, one output vocabulary (issue 14, issue 10 item 4 for the suite commands)."""

from __future__ import annotations

import json
import re

import pytest

from anebench.cli.console import warning_group
from anebench.model import ResultRecord
from anebench.report.suite_terminal import sig, suite_tables, time_cells
from clitools import document_results, run_cli
from test_suites_cli import scripted_sweep

RUNS = ("--runs", "5", "--warmup", "1", "--time-budget", "0.2")
SWEEP = ("-w", "lm_head:256x8:fp32", "--min-mb", "1", "--max-mb", "8", "--points", "4", "--cache-mb", "0.25")


def saved(path) -> list[ResultRecord]:
    return [ResultRecord.model_validate(r) for r in document_results(json.loads(path.read_text()))]


def assert_fits_80_and_numbers_whole(text: str, suite: str, records: list[ResultRecord]) -> None:
    """Every line within 80 columns, and every number of the suite's tables printed whole on one line."""
    lines = text.splitlines()
    assert lines and max(len(line) for line in lines) <= 80, "\n".join(
        line for line in lines if len(line) > 80
    )
    tables = suite_tables(suite, records)
    assert all(table.rows for table in tables)
    for table in tables:
        for column in table.columns:
            assert any(column in line for line in lines), column  # headers never wrap either
        for row in table.rows:
            for cell, numeric in zip(row, table.numeric):
                if numeric and cell != "-":
                    pattern = rf"(?<![\w.]){re.escape(cell)}(?![\w.])"
                    assert any(re.search(pattern, line) for line in lines), (cell, text)


@pytest.mark.parametrize(
    "argv, suite",
    [
        (("roofline", "-w", "lm_head:64x256:fp32", "--max-batch", "4"), "roofline"),
        (
            ("compute", "-w", "lm_head:64x256:fp32", "--batch", "8", "--dtype", "fp32", "--dtype", "fp16"),
            "compute",
        ),
        (("latency", "--no-sweep"), "latency"),
        (("concurrent", "-w", "lm_head:64x1024:fp32", "--copies", "2", "--threads"), "concurrency"),
    ],
)
def test_suite_tables_fit_80_columns_without_wrapped_numbers(capsys, tmp_path, monkeypatch, argv, suite):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli(capsys, *argv, "-e", "numpy", "-e", "torch", *RUNS, "--out", str(out))
    # a tiny roofline or compute cannot place a ridge or a peak: analysis failed (3), tables and records kept
    assert code == 0 or (code == 3 and "analysis failed" in stderr), stderr
    assert_fits_80_and_numbers_whole(stdout, suite, saved(out))
    if suite in ("compute", "latency"):
        assert "GB/s" not in stdout  # a figure that means nothing for the suite is not shown
    if suite == "roofline":
        assert re.search(r"\bbatch\b", stdout.splitlines()[1])  # the first table's rows say their batch
    if suite == "concurrency":
        assert " solo " in stdout and " together " in stdout and "copy" in stdout


def test_sweep_table_fits_80_and_prints_each_warning_once_with_a_count(capsys, tmp_path, monkeypatch):
    from anebench.engines.numpy_engine import NumpyEngine

    # every size below 4x this "cache": each record carries a cache-resident warning
    monkeypatch.setattr(NumpyEngine, "cache_bytes", lambda self, device: 64 << 20)
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "s.json"
    code, stdout, stderr = run_cli(capsys, "sweep", "-e", "numpy", *SWEEP, *RUNS, "--out", str(out))
    records = saved(out)
    assert code in (0, 3), stderr  # 3: a real tiny sweep on a shared machine may fail its fit gates
    assert_fits_80_and_numbers_whole(stdout, "sweep", records)
    assert all(any(w.text.startswith("cache-resident") for w in r.warnings) for r in records)
    cache_lines = [line for line in stderr.splitlines() if line.startswith("warning: cache-resident")]
    assert len(cache_lines) == 1 and "cache-resident (6 of 6 records, numpy:cpu" in cache_lines[0]
    kinds = {warning_group(w) for r in records for w in r.warnings}  # as the console groups them
    assert len([line for line in stderr.splitlines() if line.startswith("warning:")]) == len(kinds)


def test_latency_default_runs_a_small_sweep_and_says_so(capsys, monkeypatch):
    import anebench.orchestration.suites.sweep_rounds as sweep_rounds

    measured: list[int] = []
    real = sweep_rounds.prepared_workload

    def spy(engine, device, workload, host):  # every size is prepared once, before the rounds
        measured.append(workload.weight_bytes)
        return real(engine, device, workload, host)

    monkeypatch.setattr(sweep_rounds, "prepared_workload", spy)
    code, stdout, stderr = run_cli(capsys, "latency", "-e", "numpy", "--runs", "5", "--no-save", "--json")
    assert code == 0, stderr
    # seconds, not the hidden 4 GB sweep: at most 8x a cache of <= 16 MiB, else 1-32 MiB
    assert 2 <= len(measured) <= 12 and max(measured) <= 128 * 2**20 and sum(measured) <= 400 * 10**6
    assert "no stored sweep; ran a small one (" in stderr or "no sweep-fitted overhead" in stderr
    (record,) = document_results(json.loads(stdout))
    assert record["workload"]["shape"] == [64, 64] or record["latency"]["refused_as_too_short"]


def test_latency_reuses_the_stored_sweep_of_the_same_engine_and_device(capsys, tmp_path, monkeypatch):
    from anebench.results.store import open_store

    scripted_sweep(monkeypatch, overhead_s=7e-6)
    sweep_file = tmp_path / "s.json"
    code, _, stderr = run_cli(capsys, "sweep", "-e", "numpy", *SWEEP, *RUNS, "--out", str(sweep_file))
    assert code == 0, stderr
    db = tmp_path / "store.db"
    with open_store(db) as store:
        store.ingest(saved(sweep_file), "s.json")
    from fakepipeline import state_executor

    def no_sweep(*args, **kwargs):  # every sweep checks the memory of its largest size before measuring
        pytest.fail("ran a sweep")

    state_executor(monkeypatch, check_memory=no_sweep)
    code, stdout, stderr = run_cli(
        capsys, "latency", "-e", "numpy", "--db", str(db), "--runs", "5", "--no-save", "--json"
    )
    assert code == 0, stderr
    (record,) = document_results(json.loads(stdout))
    assert record["latency"]["sweep_overhead_us"] == pytest.approx(7.0)
    assert "numpy:cpu: overhead from the sweep of" in stderr and str(db) in stderr
    assert "7.00" in stderr  # the overhead column of the table (stderr under --json)


def test_concurrency_reports_progress_for_every_phase():
    from anebench.engines import usable_engine
    from anebench.orchestration.session import RunOptions
    from anebench.orchestration.suites.concurrent import run_concurrent

    started: list[str] = []
    finished: list[str] = []

    def factory(label: str, total: int):
        started.append(label)
        return lambda done, total_: finished.append(label) if done == total_ else None

    from anebench.workloads import resolve_workload

    workload = resolve_workload("lm_head:64x1024:fp32")
    run_concurrent(
        usable_engine("numpy"),
        "cpu",
        workload,
        2,
        RunOptions(runs=5, time_budget_s=0.2),
        mode="threads",
        progress=factory,
    )
    phases = [label.split(": ", 1)[1] for label in started]
    assert phases == ["prepare 2 copies", "copy 0 solo on cpu", "copy 1 solo on cpu", "2 copies together"]
    assert finished == started  # each phase is marked done when the next begins, the last at the end


def test_format_vocabulary_and_conflicts(capsys, tmp_path):
    code, stdout, stderr = run_cli(
        capsys,
        "compute",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "--batch",
        "8",
        *RUNS,
        "--no-save",
        "--format",
        "csv",
    )
    assert code in (0, 3), stderr  # 3: batch 8 of a tiny head may not be compute-bound (no peak)
    header, *rows = stdout.splitlines()
    assert (
        header == "engine:dev,workload,dtype,batch,latency µs,TFLOP/s,half TFLOP/s,bound"
        or header.startswith("engine:dev,workload,dtype,batch,latency ")
    )
    assert len(rows) == 1 and rows[0].startswith("numpy:cpu,64x256,fp32,8,")
    code, stdout, stderr = run_cli(
        capsys,
        "compute",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "--batch",
        "8",
        *RUNS,
        "--no-save",
        "--format",
        "md",
    )
    assert code in (0, 3) and stdout.startswith("### peak matrix throughput\n\n| engine:dev | workload |")
    for argv, expected in [
        (("--json", "--format", "csv"), "--json and --format csv"),
        (("--no-save", "--out", str(tmp_path / "x.json")), "--no-save and --out"),
    ]:
        code, stdout, stderr = run_cli(capsys, "roofline", "-e", "numpy", *argv)
        assert code == 2 and stdout == "" and expected in stderr and len(stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_times_take_three_significant_digits_in_one_unit_per_column():
    # report/format.py's one rule: the unit in which the column's smallest value is at least 1
    assert time_cells([5e-6, 12.5e-6, 0.4e-6]) == ("ns", ["5000", "12500", "400"])
    assert time_cells([2e-3, 0.1e-3]) == ("µs", ["2000", "100"])
    assert time_cells([5e-6, 12.5e-6, 1.4e-6]) == ("µs", ["5.00", "12.5", "1.40"])
    assert time_cells([None, 3.2]) == ("s", ["-", "3.20"])
    assert sig(9.996) == "10.0" and sig(123456) == "123456" and sig(0.000123) == "0.000123"


def test_every_suite_table_renders_from_stored_records_within_80_columns():
    """The tables are a report of the records: the v1 store's suites (upgraded) render with no run at all."""
    import io
    from pathlib import Path

    from rich.console import Console

    from anebench.cli.terminal import rich_table
    from anebench.report.suite_terminal import all_suite_tables
    from anebench.results.store import open_store

    with open_store(Path(__file__).parent / "data" / "v1" / "store.db", create=False, readonly=True) as store:
        records = store.records()
    tables = all_suite_tables(records)
    titles = " ".join(t.title for t in tables)
    for suite in ("sweep", "roofline", "concurrency"):
        assert suite in titles, titles
    buffer = io.StringIO()
    console = Console(file=buffer, width=80, emoji=False)
    for table in tables:
        console.print(rich_table(table))
    text = buffer.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    for table in tables:
        for row in table.rows:
            for cell, numeric in zip(row, table.numeric):
                if numeric and cell != "-":
                    assert re.search(rf"(?<![\w.]){re.escape(cell)}(?![\w.])", text), cell
