"""Reports: every format escapes hostile strings; the HTML page renders its rows in headless Chromium."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser

import pytest

from anebench.cli import main
from anebench.model import RecordWarning
from anebench.report.build import render_report
from anebench.report.compare import family_comparison
from anebench.report.escape import csv_cell, md_cell
from anebench.results.published import published_records
from anebench.workloads import resolve_workload
from test_store import make_record

SCRIPT = "<script>alert(1)</script>"
FORMULA = '=HYPERLINK("http://evil.example","x")'
HOSTILE_CHIP = f"{FORMULA} | {SCRIPT} `code` [link](http://x)"
HOSTILE_ENGINE = "@SUM(1+1)|<b>bold</b>"


@pytest.fixture(scope="module")
def records():
    hostile = make_record(chip=HOSTILE_CHIP, engine=HOSTILE_ENGINE, gbps=77)
    warnings = [RecordWarning.of(f"note {SCRIPT} | -1+2")]
    hostile = hostile.model_copy(update={"warnings": warnings, "id": None}).with_id()
    return published_records() + [hostile]


class _Cells(HTMLParser):
    """Rows of every table: lists of cell texts; also counts <script> elements."""

    def __init__(self):
        super().__init__()
        self.rows, self.scripts, self._cell = [], 0, None

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = ""
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append(self._cell)
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell += data


def _cells(text: str) -> _Cells:
    parser = _Cells()
    parser.feed(text)
    return parser


def test_html_escapes_every_value_and_is_self_contained(records):
    page = render_report(records, "html", None, "test")
    assert SCRIPT not in page and "<b>bold" not in page
    parsed = _cells(page)
    assert parsed.scripts == 0
    chips = [row[0] for row in parsed.rows if row]
    assert HOSTILE_CHIP in chips  # shown as text, exactly as submitted
    assert "http://" not in re.sub(r"&quot;http://evil\.example&quot;|http://x\)", "", page.replace(
        "http://evil.example", "").replace("http://x", ""))  # no other external reference
    assert "<img" in page and 'src="data:image/png;base64,' in page
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", page)


def test_markdown_escapes_pipes_backticks_brackets_and_html(records):
    text = render_report(records, "md", None, "test")
    assert SCRIPT not in text and "<b>" not in text
    header = next(line for line in text.splitlines() if line.startswith("| chip | config"))
    columns = len(re.split(r"(?<!\\)\|", header))
    for line in text.splitlines():
        if line.startswith("| ") and "\\" in line:
            assert len(re.split(r"(?<!\\)\|", line)) <= columns  # no injected cell boundaries
    row = next(line for line in text.splitlines() if "HYPERLINK" in line and line.startswith("| "))
    # escaped for Markdown, not HTML (issue 14): a backslash before each bracket, no entity
    assert "\\|" in row and "\\`code\\`" in row and "\\[link\\]" in row and "\\<script\\>" in row
    assert md_cell("a\nb|c") == "a b\\|c"


def test_csv_guards_formulas_and_round_trips(records):
    text = render_report(records, "csv", None, "test")
    rows = list(csv.DictReader(io.StringIO(text)))
    (hostile,) = [r for r in rows if "HYPERLINK" in r["chip"]]
    assert hostile["chip"] == "'" + HOSTILE_CHIP
    assert hostile["engine"] == "'" + HOSTILE_ENGINE
    for row in rows:
        for value in row.values():
            assert not value.startswith(("=", "+", "@")), value
    assert csv_cell(-1.5) == -1.5 and csv_cell("-1+2") == "'-1+2" and csv_cell("+x") == "'+x"
    m5max = next(r for r in rows if r["chip"] == "M5 Max" and r["workload"] == "llama_lm_head")
    assert m5max["concurrency_verdict"] == "inconclusive"  # copies were threads of one process
    assert [r["chip"] for r in rows if r["flags"] == "no data"][:2] == ["M3 Pro", "H100 SXM"]
    assert {r["section"] for r in rows if r["flags"] == "no data"} == {"coverage"}


def test_json_report_round_trips_hostile_strings(records):
    document = json.loads(render_report(records, "json", None, "test"))
    chips = {row["chip"] for row in document["matrix"]}
    assert HOSTILE_CHIP in chips
    assert document["rules"]["tiers"].startswith("per workload")
    m5max = {c["chip"]: c for c in document["concurrency"]}["M5 Max"]
    assert (
        m5max["verdict"] == "inconclusive" and m5max["combined_gbps"] == 147.62 and m5max["mode"] == "threads"
    )
    assert any(flag.startswith("copies were threads of one process: predict() holds the GIL")
               for flag in m5max["flags"])
    assert len(document["excluded"]) == 13


def test_markdown_writes_its_charts_beside_it(tmp_path, records):
    out = tmp_path / "report.md"
    text = render_report(records, "md", out, "test")
    # issue 14: the figures go in a folder beside the report (report.md + report_files/), not loose beside it
    pngs = sorted(p.name for p in (tmp_path / "report_files").glob("*.png"))
    assert out.read_text() == text and pngs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "report_files"]
    assert all(f"](report_files/{name})" in text for name in pngs)
    assert all((tmp_path / "report_files" / name).read_bytes().startswith(b"\x89PNG") for name in pngs)


def test_cli_report_from_the_store(tmp_path, capsys):
    db = tmp_path / "db.sqlite"
    with pytest.raises(SystemExit) as info:
        main(["report", "--db", str(db)])
    assert info.value.code == 2 and "no such database" in capsys.readouterr().err
    assert not db.exists()  # a reader never creates a database
    main(["ingest", "--published", "--db", str(db)])
    capsys.readouterr()
    main(["report", "--db", str(db), "--format", "json"])
    document = json.loads(capsys.readouterr().out)
    assert len(document["matrix"]) == 22  # M6 16 GB and 32 GB are rows of their own; M2 Pro from the README
    main(["report", "--db", str(db), "--format", "html", "--out", str(tmp_path / "r.html")])
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")


def test_run_comparison_shows_the_same_family_and_workload_only():
    mine = make_record(chip="Apple M4 Pro", gbps=111, engine="coreml", device="ane")  # as published
    rows, notes = family_comparison([mine])
    assert rows[0].yours and rows[0].gbps == 111
    assert {r.chip for r in rows[1:]} == {"M4", "M4 Pro", "M4 Max"} and not notes
    assert {r.statistic for r in rows[1:]} == {"mean"}  # published latencies are means; ours a median
    rows, notes = family_comparison([make_record(chip="Apple M4 Pro", gbps=111)])  # mlx:gpu: another unit
    assert len(rows) == 1 and "no published figure" in notes[0] and "on mlx:gpu" in notes[0]
    lut6 = make_record(chip="Apple M4", gbps=111, workload="DeepHermes_lm_head")
    rows, notes = family_comparison([lut6])
    assert (
        len(rows) == 1
        and "no published figure of the same fingerprint" in notes[0]
        and "M4 family" in notes[0]
    )
    rows, notes = family_comparison([make_record(chip=None)])
    assert rows == [] and "not in the chip catalog" in notes[0]


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_html_report_renders_its_rows_in_headless_chromium(tmp_path, records):
    page = tmp_path / "report.html"
    render_report(records, "html", page, "test")
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        check=False, capture_output=True, text=True, timeout=90,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    dom = _cells(result.stdout)
    assert dom.scripts == 0
    rendered = {tuple(row[:3]) for row in dom.rows}
    # every results-matrix row of the llama_lm_head table, as the browser built the DOM
    expected = {
        ("M1", "-", "60.87"),
        ("M5 Max", "-", "148.40"),
        ("M6", "16 GB", "133.92"),
        ("M6", "32 GB", "152.05"),
        ("M4 Pro", "24 GB Mac mini", "126.36"),
        (HOSTILE_CHIP, "-", "77.00"),
    }
    assert expected <= rendered
    verdicts = {(row[0], row[8]) for row in dom.rows if len(row) == 10}
    assert ("M5 Max", "inconclusive") in verdicts


def _batched(record, batch: int):
    """The same head at another batch: same name, another fingerprint (other bytes per call)."""
    fingerprint = resolve_workload("llama_lm_head").with_batch(batch).fingerprint
    workload = record.workload.model_copy(update={"batch": batch, "fingerprint": fingerprint})
    return record.model_copy(update={"workload": workload, "id": None}).with_id()


def test_a_batched_run_is_its_own_section_never_a_matrix_row_or_a_verdict():
    batched = _batched(make_record(chip="Apple M5 Max", engine="coreml", device="ane", gbps=300), 4)
    records = published_records() + [batched]
    rows = list(csv.DictReader(io.StringIO(render_report(records, "csv", None, "test"))))
    m5max = {r["fingerprint"]: r for r in rows if r["chip"] == "M5 Max" and r["workload"] == "llama_lm_head"
             and r["section"] in ("matrix", "batched")}
    plain = m5max[resolve_workload("llama_lm_head").fingerprint]
    assert plain["section"] == "matrix" and plain["concurrency_verdict"] == "inconclusive"
    batch4 = m5max[batched.workload.fingerprint]
    assert (batch4["section"], batch4["batch"], batch4["concurrency_verdict"]) == ("batched", "4", "")
    text = render_report(records, "md", None, "test")
    titles = [
        line for line in text.splitlines() if line.startswith("## Results: llama\\_lm\\_head on coreml:ane")
    ]
    assert len(titles) == 1 and "(fingerprint " not in titles[0]
    matrix = text.split(titles[0])[1].split("## ")[0]
    assert "300.00" not in matrix and "148.40" in matrix  # the batch-4 figure is not a matrix figure
    section = text.split("## Runs with batch or tokens \\> 1: llama\\_lm\\_head on coreml:ane, M5 Max")[1]
    assert "300.00" in section.split("## ")[0]


def test_every_format_says_the_published_dual_runs_are_inconclusive_and_why():
    records = published_records()
    for fmt in ("md", "html"):
        text = render_report(records, fmt, None, "test")
        assert "inconclusive" in text and "| shared ceiling |" not in text and ">shared ceiling<" not in text
        assert "copies were threads of one process" in text and "Ultra chip" in text
    rows = list(csv.DictReader(io.StringIO(render_report(records, "csv", None, "test"))))
    assert {
        r["concurrency_verdict"]
        for r in rows
        if r["chip"] in ("M5 Max", "M6", "M3 Ultra")
        and r["workload"] == "llama_lm_head"
        and r["section"] == "matrix"
        and not r["config"]
    } == {"inconclusive"}
    document = json.loads(render_report(records, "json", None, "test"))
    assert {c["verdict"] for c in document["concurrency"]} == {"inconclusive"}
