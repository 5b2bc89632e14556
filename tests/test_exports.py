"""One exporter per format (issue 23, item 2): `compare` (and `run`) give the same figures through every
exporter, with the one ± convention (the GB/s range of the between-run interval); --out follows its
extension on `compare` as on `run`, and --export-FORMAT files are written beside it."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest

from anebench.cli.exports import export_text
from anebench.measure.uncertainty import fmt_gbps, gbps_range
from anebench.report.escape import md_cell
from anebench.results.files import save_records
from clitools import run_cli
from uncertainty_records import repeated_record

MS = 1e-3


@pytest.fixture
def one_record():
    return repeated_record([62 * MS, 63 * MS, 61.5 * MS], engine="numpy", device="cpu").with_id()


def test_compare_gives_runs_figures_through_every_exporter(capsys, tmp_path, one_record):
    found = gbps_range(one_record)
    assert found is not None
    a = save_records(tmp_path / "a.json", [one_record])
    files = {fmt: tmp_path / f"c.{fmt}" for fmt in ("json", "jsonl", "md", "table")}
    exports = [arg for fmt, path in files.items() for arg in (f"--export-{fmt}", str(path))]
    out = tmp_path / "x.csv"
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(a), "--out", str(out), *exports)
    assert code == 0, stderr
    # --out x.csv writes CSV: the pair's GB/s and its range, as run's CSV and record give them
    (row,) = csv.DictReader(io.StringIO(out.read_text()))
    (run_row,) = csv.DictReader(io.StringIO(export_text("csv", [one_record], "run")))
    for side in ("a", "b"):
        assert float(row[f"{side}_gbps"]) == float(run_row["gbps"]) == one_record.gbps
        assert (float(row[f"{side}_gbps_low"]), float(row[f"{side}_gbps_high"])) == (found.low, found.high)
        assert float(row[f"{side}_median_s"]) == float(run_row["median_s"])
    assert row["verdict"] == "no significant difference" and float(row["ratio"]) == 1.0
    # json and jsonl: the same range
    (pair,) = json.loads(files["json"].read_text())["pairs"]
    (line,) = [json.loads(text) for text in files["jsonl"].read_text().splitlines()]
    assert pair == line and pair["a"]["gbps_range"] == [found.low, found.high] == pair["b"]["gbps_range"]
    # md and the text table: the range as run's table prints it ([low-high], two decimals)
    span = found.text()
    assert span == f"[{fmt_gbps(found.low)}-{fmt_gbps(found.high)}]"
    assert span in export_text("table", [one_record], "run") and span in files["table"].read_text()
    assert md_cell(span) in export_text("md", [one_record], "run")
    assert md_cell(span) in files["md"].read_text()
    assert "ratio" in files["table"].read_text() and "| ratio |" in files["md"].read_text()
    assert "wrote the comparison as csv to" in stderr and stdout.count("numpy:cpu") == 1


def test_compare_refuses_an_unknown_extension_or_an_input_as_output_before_writing(capsys, tmp_path,
                                                                                     one_record):
    a = save_records(tmp_path / "a.json", [one_record])
    before = sorted(tmp_path.iterdir())
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(a), "--out", str(tmp_path / "x.xlsx"))
    assert code == 2 and stdout == "" and "unknown format '.xlsx'" in stderr
    assert len(stderr.strip().splitlines()) == 1
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(a), "--export-csv", str(a), "--force")
    assert code == 2 and stdout == "" and "--export-csv" in stderr and "input" in stderr
    assert sorted(tmp_path.iterdir()) == before and json.loads(a.read_text())["results"]


@pytest.mark.parametrize("fmt", ["csv", "md", "jsonl"])
def test_compare_format_on_stdout_is_the_exporters_text(capsys, tmp_path, one_record, fmt):
    a = save_records(tmp_path / "a.json", [one_record])
    code, stdout, stderr = run_cli(capsys, "compare", str(a), str(a), "--format", fmt,
                                   "--export-" + fmt, str(tmp_path / f"same.{fmt}"))
    assert code == 0, stderr
    assert stdout == (tmp_path / f"same.{fmt}").read_text() and stdout.strip()


def test_report_gives_the_same_figures_through_every_exporter(capsys, tmp_path, one_record):
    found = gbps_range(one_record)
    assert found is not None
    db = tmp_path / "s.sqlite"
    code, _, stderr = run_cli(capsys, "ingest", str(save_records(tmp_path / "a.json", [one_record])),
                              "--db", str(db))
    assert code == 0, stderr
    files = {fmt: tmp_path / f"r.{fmt}" for fmt in ("json", "jsonl", "table")}
    exports = [arg for fmt, path in files.items() for arg in (f"--export-{fmt}", str(path))]
    out = tmp_path / "r.csv"
    code, stdout, stderr = run_cli(capsys, "report", "--db", str(db), "--out", str(out), *exports)
    assert code == 0 and stdout == "", stderr
    # --out r.csv writes the report's CSV: the figure and its 95% range (as a log half-width)
    (row,) = [r for r in csv.DictReader(io.StringIO(out.read_text())) if r["section"] == "matrix"]
    gbps, halfwidth = float(row["median_gbps"]), float(row["gbps_rel_halfwidth95"])
    assert gbps == pytest.approx(one_record.gbps, abs=1e-3)
    assert (gbps * math.exp(-halfwidth), gbps * math.exp(halfwidth)) == pytest.approx((found.low, found.high),
                                                                                     rel=1e-4)
    (matrix,) = json.loads(files["json"].read_text())["matrix"]
    assert matrix["gbps_range"] == {"gbps": found.gbps, "low": found.low, "high": found.high}
    lines = [json.loads(text) for text in files["jsonl"].read_text().splitlines()]
    assert [line for line in lines if line["section"] == "matrix"] == [{"section": "matrix", **matrix}]
    # the tables: the figure with its range, as run's table and compare's facts print it
    assert found.cell() in files["table"].read_text()
    assert found.text() in export_text("table", [one_record], "run")
    code, stdout, _ = run_cli(capsys, "report", "--db", str(db), "--format", "md")
    assert code == 0 and md_cell(found.cell()) in stdout


def test_report_out_follows_its_extension_and_refuses_a_contradicting_format(capsys, tmp_path, one_record):
    db = tmp_path / "s.sqlite"
    run_cli(capsys, "ingest", str(save_records(tmp_path / "a.json", [one_record])), "--db", str(db))
    code, _, stderr = run_cli(capsys, "report", "--db", str(db), "--out", str(tmp_path / "r.html"))
    assert code == 0 and (tmp_path / "r.html").read_text().lstrip().lower().startswith("<!doctype html")
    code, _, stderr = run_cli(capsys, "report", "--db", str(db), "--out", str(tmp_path / "r.md"),
                              "--format", "json")
    assert code == 2 and "the extension names md" in stderr and not (tmp_path / "r.md").exists()
    code, _, stderr = run_cli(capsys, "report", "--db", str(db), "--out", str(tmp_path / "report"),
                              "--format", "json")
    assert code == 0 and json.loads((tmp_path / "report").read_text())["matrix"]
