"""One output stack (issue 23, item 2): -q silences every suite's notes, warnings and progress; every
command's output fits COLUMNS=80, help and errors included; --out writes the format its extension names,
and several --export-FORMAT files can be written at once; each rule paragraph once; the note the records
store is the note printed."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import click
import pytest

from anebench.cli import app
from anebench.model import RecordWarning, ResultRecord
from checkpoint_builders import single_file_model
from clitools import document_results, run_cli

RUNS = ("--runs", "3", "--warmup", "1", "--time-budget", "0.1")
TINY = ("-e", "numpy", "-w", "lm_head:64x256:fp32", "--runs", "5", "--warmup", "1")
# Each suite with a tiny numpy workload: seconds, not minutes. A tiny roofline or compute cannot place
# a ridge or a peak, and a tiny sweep may fail its fit gates: "analysis failed" (exit 3) is an outcome.
SUITES = {
    "sweep": ("sweep", "-e", "numpy", "-w", "lm_head:256x8:fp32", "--min-mb", "1", "--max-mb", "2",
              "--points", "3", "--cache-mb", "0.25", *RUNS),
    "roofline": ("roofline", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--max-batch", "2", *RUNS),
    "latency": ("latency", "-e", "numpy", "--no-sweep", *RUNS),
    "compute": ("compute", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--batch", "8", "--dtype", "fp32",
                *RUNS),
    "concurrent": ("concurrent", "-e", "numpy", "-w", "lm_head:64x1024:fp32", "--copies", "2", "--threads",
                   *RUNS),
    "quant": ("quant", "-e", "numpy", "-w", "lm_head:64x256:fp32", *RUNS),
}
ERROR_LABELS = ("error:", "analysis failed:", "measurement refused:")


@pytest.fixture(autouse=True)
def _private_dirs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # no default results store is read
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))


def error_continuations(stderr: str) -> list[str]:
    """stderr's lines that are not part of an error (an error may wrap onto following lines)."""
    others, in_error = [], False
    for line in stderr.splitlines():
        if line.startswith(ERROR_LABELS):
            in_error = True
        elif not in_error and line.strip():
            others.append(line)
    return others


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("suite", list(SUITES))
def test_quiet_suite_prints_only_results_and_errors(capsys, suite, where):
    argv = SUITES[suite]
    argv = ("-q", *argv, "--no-save") if where == "before" else (argv[0], "-q", *argv[1:], "--no-save")
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code in (0, 3), stderr
    assert error_continuations(stderr) == [], stderr  # no note, rule, warning or progress line
    assert code == 0 or "analysis failed:" in stderr
    assert stdout.strip()  # the results are still printed


def test_quiet_after_the_subcommand_silences_run_and_verbose_with_quiet_is_refused(capsys):
    code, stdout, stderr = run_cli(capsys, "run", "-q", *TINY, "--no-save")
    assert code == 0 and "numpy:cpu" in stdout and stderr == ""
    code, stdout, stderr = run_cli(capsys, "-v", "run", "-q", *TINY, "--no-save")
    assert code == 2 and stdout == "" and "--quiet with --verbose" in stderr


# --- 80 columns ------------------------------------------------------------------------------------------


def command_paths(group: click.Group, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    paths = [path]
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            paths += command_paths(command, (*path, name))
        else:
            paths.append((*path, name))
    return paths


def assert_fits(columns: int, *texts: str) -> None:
    wide = [line for text in texts for line in text.splitlines() if len(line) > columns]
    assert not wide, "\n".join(wide)


@pytest.mark.parametrize("path", command_paths(app), ids=lambda p: " ".join(p) or "anebench")
def test_every_help_fits_80_columns(capsys, monkeypatch, path):
    monkeypatch.setenv("COLUMNS", "80")
    code, stdout, stderr = run_cli(capsys, *path, "--help")
    assert code == 0 and "Usage:" in stdout
    assert_fits(80, stdout, stderr)


@pytest.mark.parametrize("suite", list(SUITES))
def test_every_suite_fits_80_columns_and_says_each_rule_once(capsys, tmp_path, monkeypatch, suite):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli(capsys, *SUITES[suite], "--out", str(out))
    assert code in (0, 3), stderr
    assert_fits(80, stdout, stderr)
    assert stderr.count("fit gates:") <= 1 and stderr.count("verdict rule:") <= 1
    assert stderr.count("rule: ") <= 1 or suite == "concurrent"
    if suite == "concurrent":
        from anebench.report.suite_plots import concurrency_title

        records = [ResultRecord.model_validate(r) for r in document_results(json.loads(out.read_text()))]
        assert len(records) == 4 and "2 copies" in concurrency_title(records)  # 2 copies, 4 records


def test_other_commands_and_errors_fit_80_columns(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    saved = tmp_path / "a.json"
    code, stdout, stderr = run_cli(capsys, "run", *TINY, "--out", str(saved))
    assert code == 0, stderr
    record_id = document_results(json.loads(saved.read_text()))[0]["id"][:16]
    runs = [
        ("sweep", "-e", "numpy", "--dry-run"),
        ("roofline", "-e", "numpy", "--dry-run"),
        ("concurrent", "-e", "numpy", "-w", "lm_head:64x1024:fp32", "--dry-run"),
        ("run", "-e", "numpy", "--dry-run"),
        ("engines",),
        ("info",),
        ("compare", str(saved), str(saved)),
        ("ingest", str(saved), "--db", str(tmp_path / "s.sqlite")),
        ("store", "list", "--db", str(tmp_path / "s.sqlite")),
        ("store", "show", record_id, "--db", str(tmp_path / "s.sqlite")),
        ("submit", str(saved), "--out", str(tmp_path)),
        ("doctor", "--out", str(tmp_path / "doctor.txt")),
        ("report", "--db", str(tmp_path / "s.sqlite"), "--format", "md", "--out", str(tmp_path / "r.md")),
    ]
    outputs = [stdout, stderr]
    for argv in runs:
        code, stdout, stderr = run_cli(capsys, *argv)
        assert code == 0, (argv, stderr)
        outputs += [stdout, stderr]
    deep = tmp_path / ("a-long-folder-name-" * 4) / ("and-another-one-" * 3) / "results.unknown"
    errors = [
        ("run", *TINY, "--out", str(deep)),  # an error naming a long path
        ("run", "--no-such-option-with-a-long-name-that-click-will-quote-back-to-the-user"),
        ("compare", str(tmp_path / ("missing-" * 12) / "a.json"), str(saved)),
    ]
    for argv in errors:
        code, stdout, stderr = run_cli(capsys, *argv)
        assert code == 2 and stderr.startswith("error:"), stderr
        outputs += [stdout, stderr]
    assert_fits(80, *outputs)


# --- --out by extension, --export-FORMAT -------------------------------------------------------------------


def test_out_writes_the_format_its_extension_names(capsys, tmp_path):
    paths = {ext: tmp_path / f"r.{ext}" for ext in ("csv", "md", "json", "jsonl", "txt")}
    for path in paths.values():
        code, _, stderr = run_cli(capsys, "run", *TINY, "--out", str(path))
        assert code == 0, stderr
    (row,) = csv.DictReader(io.StringIO(paths["csv"].read_text()))
    assert row["engine"] == "numpy" and int(row["weight_bytes"]) == 64 * 256 * 4
    assert float(row["median_s"]) > 0
    assert paths["md"].read_text().startswith("| engine:dev | workload |")
    (record,) = document_results(json.loads(paths["json"].read_text()))
    assert record["engine"]["name"] == "numpy"
    (line,) = paths["jsonl"].read_text().splitlines()
    assert ResultRecord.model_validate_json(line).engine.name == "numpy"
    assert "numpy:cpu" in paths["txt"].read_text() and "GB/s" in paths["txt"].read_text()


def test_an_unknown_out_extension_is_refused_before_measuring(capsys, tmp_path):
    target = tmp_path / "r.xlsx"
    code, stdout, stderr = run_cli(capsys, "run", *TINY, "--out", str(target))
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1
    assert "--out" in stderr and "'.xlsx'" in stderr and not target.exists()
    assert "numpy:cpu" not in stderr  # nothing was measured


def test_several_exports_at_once_for_a_suite(capsys, tmp_path):
    files = {fmt: tmp_path / f"c.{fmt}" for fmt in ("csv", "json", "jsonl", "md")}
    exports = [arg for fmt, path in files.items() for arg in (f"--export-{fmt}", str(path))]
    code, _, stderr = run_cli(capsys, *SUITES["compute"], "--out", str(tmp_path / "c.out.csv"), *exports)
    assert code in (0, 3), stderr
    rows = list(csv.DictReader(io.StringIO(files["csv"].read_text())))
    assert rows and rows[0]["engine:dev"] == "numpy:cpu" and "TFLOP/s" in rows[0]
    assert (tmp_path / "c.out.csv").read_text() == files["csv"].read_text()  # --out by extension: the same
    (record,) = document_results(json.loads(files["json"].read_text()))
    assert record["suite"] == "compute"
    assert len(files["jsonl"].read_text().splitlines()) == 1
    assert "| engine:dev |" in files["md"].read_text()


# --- the note the records store ----------------------------------------------------------------------------


def test_concurrent_prints_the_copies_note_its_records_store(capsys, tmp_path):
    from anebench.orchestration.suites.concurrent import CHECKPOINT_NOTE, SEED_NOTE

    model = single_file_model(tmp_path / "tiny-llama")
    out = tmp_path / "c.json"
    code, _, stderr = run_cli(capsys, "concurrent", "-e", "numpy", "-w", f"hf:{model}", "--copies", "2",
                              "--threads", *RUNS, "--out", str(out))
    assert code in (0, 3), stderr
    notes = {r["concurrency"]["copies_note"] for r in document_results(json.loads(out.read_text()))}
    assert notes == {CHECKPOINT_NOTE}
    assert f"copies: {CHECKPOINT_NOTE}" in stderr and SEED_NOTE not in stderr
    assert Path(out).exists()


# --- one unit rule ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("seconds", [[62e-3, 0.9e-3, 0.1], [5e-6, 12.5e-6, 0.4e-6], [2.5, 0.05]])
def test_run_a_suite_and_the_report_put_one_latency_column_in_the_same_unit(seconds):
    from anebench.cli.tables import time_unit as run_unit
    from anebench.report.suite_terminal import time_cells
    from anebench.report.tables import time_unit as report_unit

    smallest = min(seconds)
    unit, factor = run_unit(seconds)
    assert time_cells(seconds)[0] == unit == report_unit(seconds)[0]
    assert 1 <= smallest * factor < 1000  # the smallest value is at least 1 and under 1000 in that unit


def test_csv_escapes_formulas_and_keeps_figures_and_missing_marks():
    from anebench.report.format import csv_text

    text = csv_text(["name", "x"], [["=HYPERLINK(1)", "-1.5"], ["-", 3], ["@me", "-"]])
    rows = list(csv.reader(io.StringIO(text)))
    assert rows == [["name", "x"], ["'=HYPERLINK(1)", "-1.5"], ["-", "3"], ["'@me", "-"]]


def test_drift_of_either_sign_is_one_warning_kind_printed_once():
    from anebench.cli.console import WarningLog
    from anebench.cli.terminal import Warnings
    from uncertainty_records import repeated_record

    ms = 1e-3
    drifts = ["drift: median of the last tenth of samples is +12% from the first tenth",
              "drift: median of the last tenth of samples is -17% from the first tenth"]
    records = [repeated_record([62 * ms, 63 * ms], engine="numpy", device="cpu") for _ in drifts]
    records = [r.model_copy(update={"warnings": [RecordWarning.of(text)]})
               for r, text in zip(records, drifts)]
    grouped = Warnings()
    grouped.add_records(records)
    (line,) = grouped.lines()
    assert line.startswith("drift (2 of 2 records, numpy:cpu")
    log = WarningLog()
    for text in drifts:
        log.add(text, "numpy:cpu")
    (line,) = log.lines()
    assert line.startswith("warning (x2): drift:")
