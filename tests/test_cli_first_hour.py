"""The first hour of a new user (issue 14, command line): 80 columns, warnings once, help and version,
a readable `info`, one vocabulary, units, `anebench compare`, and the library under the CLI (issue 10)."""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console

from anebench.cli.tables import fmt_sig
from anebench.errors import SettingError, UserError
from anebench.results.files import document_json
from clitools import run_cli
from uncertainty_records import repeated_record

MS = 1e-3
ROOT = Path(__file__).resolve().parents[1]


def table_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_run_at_80_columns_fits_wraps_no_number_and_says_each_warning_once(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli(
        capsys, "run", "-e", "numpy", "-w", "lm_head:1024x16384:fp32", "--runs", "30", "--out", str(out)
    )
    assert code == 0, stderr
    assert max(len(line) for line in stdout.splitlines()) <= 80, stdout
    (record,) = json.loads(out.read_text())["results"]
    lines = stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if "numpy:cpu" in line)
    # the row, or under a width the stacked layout: the row's name line and its indented "label: value"
    # lines; either way every figure whole on one line, none folded onto the next
    stacked = [lines[first]] + [line for line in lines[first + 1:first + 9] if line.startswith("  ")]
    row = " ".join(stacked) if len(stacked) > 1 else lines[first]
    assert "lm_head:1024x16384:fp32" in row and f"{record['gbps']:.2f}" in row
    assert f"{record['workload']['weight_bytes'] / 1e6:.1f}" in row
    # the unit: in the stacked row ("median ms: 2.99") or the table's header, whichever this layout has
    units = (re.search(r"median (s|ms|µs|ns)\b", line) for line in [row, *lines])
    unit = next(found.group(1) for found in units if found)
    scale = {"s": 1, "ms": 1e3, "µs": 1e6, "ns": 1e9}[unit]
    median = record["summary"]["median"] * scale
    shown = f" {row} ".replace(":", " ")  # stacked: "median ms: 2.99"
    assert median >= 1 and f" {fmt_sig(median)} " in shown  # 3 significant digits, never 0.00

    def kind(text: str) -> str:  # a warning's kind: its text without its figures (as the CLI groups them)
        return re.sub(r"[0-9][0-9.,]*", "#", text)

    said = " ".join(stderr.split())  # a warning wraps to the 80 columns: read it as one line again
    for warning in record[
        "warnings"
    ]:  # e.g. "busy machine" is said before measuring, with that moment's load
        assert kind(said).count(kind(" ".join(warning["text"].split()))) == 1
    assert max(len(line) for line in stderr.splitlines()) <= 80, stderr
    warning_lines = [line for line in stderr.splitlines() if line.startswith("warning")]
    assert len(warning_lines) == len(set(warning_lines))


def test_a_warning_shared_by_several_records_is_printed_once_with_a_count(capsys, tmp_path):
    code, _, stderr = run_cli(
        capsys,
        "run",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "-w",
        "lm_head:128x256:fp32",
        "--runs",
        "5",
        "--no-save",
    )
    assert code == 0, stderr
    lines = [line for line in stderr.splitlines() if "only 5 samples" in line]
    assert len(lines) == 1 and lines[0].startswith("warning (x2): only 5 samples")


def test_warnings_differing_only_in_figures_are_one_warning():
    from anebench.cli.common import WarningLog

    log = WarningLog()
    for mb in range(1, 11):
        log.add(f"cache-resident: weights ({mb}.0 MB) are smaller than 4x the last-level cache", f"size {mb}")
    log.add("unstable: coefficient of variation 12% > 10%", "size 3")
    lines = log.lines()
    assert len(lines) == 2 and lines[0].startswith("warning (x10): cache-resident: weights (1.0 MB)")
    assert (
        "-v shows each" in lines[0]
        and lines[1] == "warning: size 3: unstable: coefficient of variation 12% > 10%"
    )
    assert log.lines() == []  # printed once: the log is empty after


def test_the_results_table_follows_columns_when_piped_and_under_json(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "60")
    code, stdout, stderr = run_cli(
        capsys, "run", "-e", "numpy", "-w", "lm_head:128x2048:fp32", "--runs", "6", "--no-save", "--json"
    )
    assert code == 0 and json.loads(stdout)["results"]
    lines = stderr.splitlines()
    start = lines.index("anebench results")
    table = lines[start : next(i for i, line in enumerate(lines) if "repetitions x" in line)]
    assert table and max(len(line) for line in table) <= 60


def test_a_narrow_width_stacks_the_rows_instead_of_wrapping_numbers():
    from anebench.cli.tables import results_table

    record = repeated_record([62 * MS, 63 * MS, 61.5 * MS], engine="numpy", device="cpu")
    console = Console(width=40, record=True, emoji=False)
    console.print(results_table([record]))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 40
    assert "numpy:cpu  llama_lm_head" in text and f"GB/s: {record.gbps:.2f}" in text
    assert "median ms: 62.0" in text


def test_units_three_significant_digits_and_microseconds():
    from anebench.cli.tables import abbreviate, fmt_time, result_rows

    assert fmt_time(12.3e-6) == "12.3 µs" and fmt_time(5.123e-3) == "5.12 ms" and fmt_time(2.5) == "2.50 s"
    assert fmt_time(850e-9) == "850 ns"
    fast = repeated_record(
        [20e-6, 20.4e-6, 19.8e-6], engine="numpy", device="cpu", workload="lm_head:64x256:fp32"
    )
    header, (row,) = result_rows([fast])
    assert "median µs" in header and row[header.index("median µs")] == "20.0"
    assert abbreviate("hf:/models/some-very-long-folder:lm_head.weight") == "hf:/model…lm_head.weight"
    assert (
        len(abbreviate("x" * 80)) == 24 and abbreviate("lm_head:1024x16384:fp32") == "lm_head:1024x16384:fp32"
    )


def test_bare_anebench_prints_help_and_exits_0(capsys):
    code, stdout, stderr = run_cli(capsys)
    assert code == 0 and "error" not in stderr
    assert "Usage: anebench" in stdout and "Commands" in stdout and "compare" in stdout
    commands = stdout[stdout.index("Commands") :].splitlines()
    assert not any(line.rstrip().endswith("...") for line in commands)  # summaries wrapped, never cut
    assert "bytes / bandwidth past the cache knee" in stdout


def test_version(capsys):
    from anebench import __version__

    for flag in ("-V", "--version"):
        code, stdout, _ = run_cli(capsys, flag)
        assert code == 0 and stdout.strip() == f"anebench {__version__}"


def test_quiet_prints_only_results_and_verbose_with_quiet_is_refused(capsys, tmp_path):
    code, stdout, stderr = run_cli(
        capsys, "-q", "run", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--runs", "5", "--no-save"
    )
    assert code == 0 and "numpy:cpu" in stdout and stderr == ""
    code, _, stderr = run_cli(capsys, "-q", "-v", "engines")
    assert code == 2 and len(stderr.strip().splitlines()) == 1


def test_info_is_a_readable_table(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, stdout, _ = run_cli(capsys, "info")
    assert code == 0
    assert "None" not in stdout and "[{" not in stdout and "['" not in stdout and "{'" not in stdout
    assert max(len(line) for line in stdout.splitlines()) <= 80
    assert re.search(r"memory\s+\d+\.\d GB", stdout) and "BLAS" in stdout and "energy sources" in stdout
    code, stdout, _ = run_cli(capsys, "info", "--format", "json")
    assert code == 0 and json.loads(stdout)["arch"]


@pytest.mark.parametrize(
    "argv, phrase",
    [
        (
            ("run", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--no-save", "--out", "x.json"),
            "--no-save and --out",
        ),
        (
            ("run", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--json", "--format", "csv"),
            "--json is --format json",
        ),
        (("ingest", "f.json", "--from", "nope"), "--from 'nope' is not a known format"),
    ],
)
def test_conflicting_or_bad_options_are_refused_in_one_line(capsys, tmp_path, argv, phrase):
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code == 2 and stdout == "" and phrase in stderr and len(stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.json").exists()


def test_library_errors_name_settings_not_flags(tmp_path):
    from anebench.artifacts.export import check_bundle_dir
    from anebench.results.ingest import loader_for

    with pytest.raises(SettingError) as info:
        loader_for("nope")
    assert info.value.setting == "format" and "--" not in str(info.value)
    (tmp_path / "f").write_text("x")
    with pytest.raises(SettingError) as info:
        check_bundle_dir(tmp_path / "f")
    assert info.value.setting == "out" and "--" not in str(info.value)


def test_format_csv_and_md_print_one_document(capsys):
    code, stdout, stderr = run_cli(
        capsys,
        "run",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "--runs",
        "6",
        "--no-save",
        "--format",
        "csv",
    )
    assert code == 0, stderr
    (row,) = list(csv.DictReader(io.StringIO(stdout)))
    assert (
        row["engine"] == "numpy" and float(row["median_s"]) > 0 and int(row["weight_bytes"]) == 64 * 256 * 4
    )
    code, stdout, _ = run_cli(
        capsys,
        "run",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "--runs",
        "6",
        "--no-save",
        "--format",
        "md",
    )
    assert code == 0 and stdout.startswith("| engine:dev | workload |") and "GB/s" in stdout


def test_published_context_on_a_host_without_a_catalogued_chip_is_said_once(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    code, stdout, _ = run_cli(
        capsys,
        "run",
        "-e",
        "numpy",
        "-w",
        "lm_head:64x256:fp32",
        "-w",
        "lm_head:128x256:fp32",
        "--runs",
        "5",
        "--no-save",
    )
    assert code == 0
    assert "chip not detected" not in stdout and "not in the chip catalog" not in stdout
    assert stdout.count("published ranges by device kind") == 2  # the table's title and one note
    section = stdout[stdout.index("your run beside published ranges") :]
    for kind in ("ANE", "Apple GPU", "CPU", "NVIDIA GPU"):
        assert kind in section
    assert "llama_lm_head" in section and "lm_head:128x256:fp32" in section


def test_submit_says_where_the_issue_body_goes():
    from anebench.cli.results import SUBMIT_URL

    tomllib = pytest.importorskip("tomllib")
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["anebench"]
    assert settings["submit-url"] == SUBMIT_URL


# --- anebench compare -------------------------------------------------------------------------------------


def write(tmp_path: Path, name: str, *records) -> Path:
    path = tmp_path / name
    path.write_text(document_json(list(records)))
    return path


def test_compare_two_runs_within_their_uncertainty_is_no_significant_difference(
    capsys, tmp_path, monkeypatch
):
    monkeypatch.setenv("COLUMNS", "80")
    a = write(
        tmp_path, "a.json", repeated_record([62 * MS, 63 * MS, 61.5 * MS], engine="numpy", device="cpu")
    )
    b = write(
        tmp_path, "b.json", repeated_record([62.5 * MS, 61.8 * MS, 63.1 * MS], engine="numpy", device="cpu")
    )
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0, stderr
    row = next(line for line in stdout.splitlines() if "numpy:cpu" in line)
    assert "n.s." in row and "62.0" in row and "62.5" in row
    assert max(len(line) for line in stdout.splitlines()) <= 80
    code, stdout, _ = run_cli(capsys, "compare", str(a), str(b), "--json")
    (pair,) = json.loads(stdout)["pairs"]
    assert pair["verdict"] == "no significant difference" and pair["significant"] is False
    assert pair["ci95"][0] < 1 < pair["ci95"][1]


def test_compare_a_clearly_faster_run_is_significant(capsys, tmp_path):
    a = write(
        tmp_path, "a.json", repeated_record([62 * MS, 63 * MS, 61.5 * MS], engine="numpy", device="cpu")
    )
    b = write(
        tmp_path, "b.json", repeated_record([40 * MS, 40.5 * MS, 39.8 * MS], engine="numpy", device="cpu")
    )
    code, stdout, _ = run_cli(capsys, "compare", str(a), str(b), "--format", "json")
    (pair,) = json.loads(stdout)["pairs"]
    assert code == 0 and pair["verdict"] == "b is faster" and pair["significant"] is True
    assert pair["ratio"] == pytest.approx(62 / 40, rel=0.02) and pair["ci95"][0] > 1
    code, stdout, _ = run_cli(capsys, "compare", str(a), str(b))
    assert "faster" in next(line for line in stdout.splitlines() if "numpy:cpu" in line)


def test_compare_refuses_different_fingerprints_in_one_line(capsys, tmp_path):
    a = write(tmp_path, "a.json", repeated_record([62 * MS] * 3, engine="numpy", device="cpu"))
    b = write(
        tmp_path,
        "b.json",
        repeated_record([6 * MS] * 3, engine="numpy", device="cpu", workload="llama_lm_head_lut6"),
    )
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(b))
    assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1
    assert "different workload fingerprints" in stderr and "llama_lm_head " in stderr
    assert "llama_lm_head_lut6" in stderr and str(a) in stderr and str(b) in stderr


def test_compare_needs_two_files(capsys, tmp_path):
    a = write(tmp_path, "a.json", repeated_record([62 * MS] * 3))
    code, _, stderr = run_cli(capsys, "compare", str(a))
    assert code == 2 and "at least two result files" in stderr


# --- the library under the CLI (issue 10 item 4) -----------------------------------------------------------


def test_the_campaign_keeps_finished_steps_when_interrupted(monkeypatch):
    from anebench.orchestration import campaign
    from anebench.orchestration.executor import Executor
    from anebench.orchestration.runplan import Mitigations
    from anebench.orchestration.session import RunOptions, measure_workload

    plan = campaign.plan_run(("numpy",), None, ("lm_head:64x256:fp32", "lm_head:128x256:fp32"), Mitigations())
    assert [s.workload.name for s in plan.steps] == ["lm_head:64x256:fp32", "lm_head:128x256:fp32"]
    real, calls = measure_workload, []

    def second_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    labels = []
    result = campaign.run_campaign(
        plan.steps, RunOptions(runs=5), Mitigations(), lambda label, total: labels.append(label) or None,
        executor=Executor(measure=second_interrupted),
    )
    assert result.interrupted and result.planned == 2 and len(result.records) == 1
    assert labels == ["numpy:cpu lm_head:64x256:fp32", "numpy:cpu lm_head:128x256:fp32"]
    interrupted = Executor(measure=lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):  # nothing finished: nothing to keep
        campaign.run_campaign(plan.steps, RunOptions(runs=5), Mitigations(), executor=interrupted)


def test_ingest_is_a_library_function(tmp_path):
    from anebench.results.ingest import ingest

    good = write(tmp_path, "good.json", repeated_record([62 * MS] * 3))
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    outcome = ingest([good, bad], db=tmp_path / "s.sqlite")
    assert [r.added for r in outcome.reports] == [1] and len(outcome.failures) == 1
    assert outcome.records_in_store == 1
    with pytest.raises(UserError):
        ingest([], db=tmp_path / "s.sqlite")
