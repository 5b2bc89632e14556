"""Issue 14, the report half: Markdown without HTML entities and with its figures in a folder, natural
order, the HTML page's contents and responsive layout (measured in headless Chromium at 1400 and 420 px),
one unit per quantity in CSV and JSON, and plots a reader could put in a paper."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
from matplotlib.colors import to_hex

from anebench.errors import UserError
from anebench.model import RecordWarning
from anebench.report import suite_plots
from anebench.report.build import render_report
from anebench.report.escape import csv_cell, md_text
from anebench.report.plots import ENGINE_COLOURS, bar_chart, engine_colour
from anebench.report.tables import natural_key, sig3, time_unit
from anebench.results.aggregate import aggregate
from anebench.results.files import load_result_file
from anebench.results.published import published_records
from test_report import CHROMIUM, HOSTILE_CHIP, SCRIPT
from test_store import make_record

V1 = Path(__file__).parent / "data" / "v1"
ENTITY = re.compile(r"&(#\d+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")
SMALL, LARGE = "lm_head:64x12221:fp32", "lm_head:64x116055:fp32"


@pytest.fixture(scope="module")
def records():
    hostile = make_record(chip=HOSTILE_CHIP, engine="@SUM(1+1)|<b>bold</b> &amp; &#x27;", gbps=77)
    hostile = hostile.model_copy(
        update={"warnings": [RecordWarning.of(f"note {SCRIPT} > 1 & 2"), RecordWarning.of("# not a heading")],
                "id": None}
    ).with_id()
    named = [make_record(chip=None, engine="numpy", device="cpu", workload=w, gbps=5) for w in (LARGE, SMALL)]
    suites = [
        r
        for name in ("sweep", "roofline", "compute", "concurrent")
        for r in load_result_file(V1 / f"{name}.json")
    ]
    return published_records() + [hostile, *named, *suites]


# --- Markdown: escaped for Markdown, figures in a folder ------------------------------------------------


def test_markdown_has_no_html_entities_and_nothing_hostile_takes_effect(records):
    text = render_report(records, "md", None, "test")
    unescaped = text.replace("\\&", "")  # a contributor's own "&amp;", shown as written
    assert not ENTITY.findall(unescaped), ENTITY.findall(unescaped)[:5]
    assert "&#x27;" not in unescaped and "&gt;" not in unescaped and "&amp;" not in unescaped
    assert SCRIPT not in text and "<b>" not in text
    assert "\\&amp; \\&#x27;" in text  # a contributor's literal "&amp;" stays literal, not "&"
    assert md_text("# not a heading") == "\\# not a heading" and md_text("1. no list") == "1\\. no list"
    assert md_text("- x > 1 & 2") == "\\- x \\> 1 & 2"


def test_markdown_figures_go_in_a_folder_beside_the_report(tmp_path, records):
    out = tmp_path / "my report.md"
    text = render_report(records, "md", out, "test")
    folder = tmp_path / "my report_files"
    pngs = sorted(p.name for p in folder.iterdir())
    assert pngs and all(name.endswith(".png") for name in pngs)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["my report.md", "my report_files"]
    links = re.findall(r"!\[[^\n]*?\]\(([^)\s]+)\)", text)
    assert sorted(links) == sorted(f"my%20report_files/{name}" for name in pngs)  # a space cannot end a link


def test_a_refused_markdown_report_writes_no_figure(tmp_path, records):
    (tmp_path / "report_files").write_text("a file where the folder would go")
    with pytest.raises(UserError, match="report_files exists and is not a directory"):
        render_report(records, "md", tmp_path / "report.md", "test")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report_files"]
    locked = tmp_path / "locked.md"
    locked.write_text("keep")
    locked.chmod(0o444)
    with pytest.raises(UserError, match="read-only"):
        render_report(records, "md", locked, "test")
    assert not (tmp_path / "locked_files").exists() and locked.read_text() == "keep"  # checked before writing
    store = tmp_path / "db.md"
    store.write_text("x")
    with pytest.raises(UserError, match="the results store"):
        render_report(records, "md", tmp_path / "db.md", "test", protected=[(store, "the results store")])
    assert not (tmp_path / "db_files").exists()


# --- natural order ---------------------------------------------------------------------------------


def test_sections_sort_numbers_by_value(records):
    assert sorted(["x116055", "x12221", "x9"], key=natural_key) == ["x9", "x12221", "x116055"]
    for fmt, marker in (("md", "## Results: lm\\_head:64x"), ("html", "<h2>Results: lm_head:64x")):
        text = render_report(records, fmt, None, "test")
        small, large = text.index(marker + "12221"), text.index(marker + "116055")
        assert small < large, fmt
    page = render_report(records, "html", None, "test")
    toc = page.split('<nav class="toc"')[1].split("</nav>")[0]
    assert toc.index("64x12221") < toc.index("64x116055")


# --- the HTML page -----------------------------------------------------------------------------------


def test_the_html_page_has_contents_viewport_themes_and_scrolling_tables(records):
    page = render_report(records, "html", None, "test")
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "prefers-color-scheme:dark" in page and "color-scheme:light dark" in page
    toc = page.split('<nav class="toc" aria-label="Contents">')[1].split("</nav>")[0]
    anchors = re.findall(r'href="#([^"]+)"', toc)
    ids = re.findall(r'<section id="([^"]+)">', page)
    assert set(anchors) == set(ids) and len(ids) == page.count("<h2>")  # every section listed, no dead link
    for heading in (
        "Results by workload",
        "Suites",
        "Sweeps",
        "Rooflines",
        "Compute",
        "Concurrency runs",
        "Concurrency verdicts",
        "Coverage: catalog chips with no data",
        "Rules",
    ):
        assert f">{heading}<" in toc, heading
    tables = len(re.findall(r"<table[ >]", page))
    assert tables == page.count('<div class="scroll"')  # every table scrolls in its own box
    assert page.count('<table class="stack">') == page.count(">Results: ")  # the matrix stacks when narrow
    assert SCRIPT not in page and "<script" not in page


# The matrix columns a phone reader needs without a sideways swipe (issue 26).
KEY_COLUMNS = ["chip", "GB/s [95% range]", "utilisation", "tier"]
HARNESS = """<!DOCTYPE html><html><head><meta charset="utf-8">
<style>html,body{margin:0;overflow:hidden}iframe{border:0;display:block}</style></head><body>
<iframe id="page" src="PAGE" width="WIDTH" height="900"></iframe><pre id="measured"></pre><script>
document.getElementById('page').addEventListener('load', () => {
  const w = document.getElementById('page').contentWindow, doc = w.document, d = doc.documentElement;
  const img = doc.querySelector('figure.chart img'), toc = doc.querySelector('nav.toc');
  const out = {scrollWidth: d.scrollWidth, clientWidth: d.clientWidth, scrollHeight: d.scrollHeight,
    innerWidth: w.innerWidth, toc: doc.querySelectorAll('nav.toc a').length,
    tocVisible: !!toc && toc.getBoundingClientRect().width > 0,
    chartShown: img ? img.getBoundingClientRect().width : 0,
    chartNatural: img ? +img.getAttribute('width') : 0,
    wideTables: [...doc.querySelectorAll('.scroll')].filter(e => e.scrollWidth > e.clientWidth).length,
    matrixWide: [...doc.querySelectorAll('table.stack')].filter(
      t => t.parentElement.scrollWidth > t.parentElement.clientWidth + 1).length,
    keyCells: [...doc.querySelectorAll('table.stack td')].filter(td => KEY.includes(td.dataset.label)).map(
      td => { const r = td.getBoundingClientRect(); return [td.dataset.label, r.left, r.right, r.width]; }),
    suitePlots: [...doc.querySelectorAll('figure.chart img')].filter(i => / plot: /.test(i.alt)).length};
  document.getElementById('measured').textContent = JSON.stringify(out);
});</script></body></html>"""


def _measure(page: Path, width: int, tmp_path: Path, name: str) -> dict:
    """The page's size in Chromium in a frame ``width`` CSS pixels wide (a headless window is at least
    500 px; the report itself, unchanged, runs no script), and a screenshot of the frame."""
    harness = page.parent / f"{name}-harness.html"
    text = HARNESS.replace("PAGE", page.name).replace("WIDTH", str(width))
    harness.write_text(text.replace("KEY", json.dumps(KEY_COLUMNS)))
    common = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--virtual-time-budget=5000",
        "--allow-file-access-from-files",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--window-size={max(width, 500)},900",
    ]
    result = subprocess.run(
        [*common, "--dump-dom", harness.as_uri()], check=False, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
    found = re.search(r'<pre id="measured">(.+?)</pre>', result.stdout, re.DOTALL)
    assert found, result.stdout[-2000:]
    shot = tmp_path / f"{name}.png"
    subprocess.run(
        [*common, f"--screenshot={shot}", harness.as_uri()], check=False, capture_output=True, timeout=120
    )
    plt.imsave(shot, plt.imread(shot)[:, :width])  # the frame alone
    keep = os.environ.get("ANEBENCH_SCREENSHOTS")  # a folder to keep the screenshots in, for a reader
    if keep:
        Path(keep).mkdir(parents=True, exist_ok=True)
        shutil.copy(shot, Path(keep) / shot.name)
    return json.loads(found.group(1).replace("&quot;", '"'))


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_html_report_fits_1400_and_420_px_with_its_contents(tmp_path, records):
    page = tmp_path / "report.html"
    render_report(records, "html", page, "test")
    for width in (1400, 420):
        m = _measure(page, width, tmp_path, f"report-{width}")
        assert m["innerWidth"] == width, m
        # no horizontal overflow of the page: the wide tables scroll inside their own box
        assert m["scrollWidth"] <= m["clientWidth"] <= m["innerWidth"], m
        assert width > 1000 or m["wideTables"] > 0, m
        assert m["toc"] > 10 and m["tocVisible"], m
        # the chart keeps most of its size (its text stays readable), not a thumbnail
        assert m["chartShown"] >= 0.6 * m["chartNatural"], m
        assert m["suitePlots"] == 5, m  # the sweep, the roofline and three concurrency runs
        if width == 420:  # the matrix stacked: chip, GB/s, utilisation and tier of every row on screen
            assert m["matrixWide"] == 0, m
            assert {label for label, *_ in m["keyCells"]} == set(KEY_COLUMNS), m
            off = [cell for cell in m["keyCells"] if cell[3] <= 0 or cell[1] < -0.5 or cell[2] > width + 0.5]
            assert not off, off[:5]
        assert (tmp_path / f"report-{width}.png").read_bytes().startswith(b"\x89PNG")


# --- units in machine formats ------------------------------------------------------------------------


def test_csv_and_json_name_each_unit_and_agree(records):
    rows = list(csv.DictReader(io.StringIO(render_report(records, "csv", None, "test"))))
    assert not [c for c in rows[0] if c.endswith("_ms")]
    document = json.loads(render_report(records, "json", None, "test"))
    assert document["schema"] == "anebench.report/3" and document["units"]["_s"] == "seconds"
    by_csv = {
        (r["chip"], r["workload"], r["engine"], r["config"]): r for r in rows if r["section"] == "matrix"
    }
    compared = 0
    for row in document["matrix"]:
        cells = by_csv[tuple(csv_cell(row[k]) for k in ("chip", "workload", "engine", "config"))]
        if row["median_latency_s"] is not None:
            assert (
                float(cells["median_latency_s"]) == row["median_latency_s"]
            )  # the same unit, the same figure
            compared += 1
        assert cells["memory_bandwidth_gbps"] == row["memory_bandwidth_gbps_text"]
    assert compared > 10
    points = [p for groups in document["suites"].values() for g in groups for p in g["points"]]
    suite_rows = [r for r in rows if r["section"] not in ("matrix", "coverage")]
    assert sorted(p["latency_s"] for p in points if p["latency_s"]) == sorted(
        float(r["median_latency_s"]) for r in suite_rows if r["median_latency_s"]
    )


def test_report_tables_use_mb_and_three_significant_digits(records):
    text = render_report(records, "md", None, "test")
    sweep = text.split("## Sweep:")[1].split("## ")[0]
    table = "\n".join(line for line in sweep.splitlines() if line.startswith("|"))
    assert table.startswith("| size MB | latency ") and "MiB" not in table
    assert [sig3(v) for v in (2.8, 148.4, 60.87, 0.0123, 1050.67)] == [
        "2.80",
        "148",
        "60.9",
        "0.0123",
        "1051",
    ]
    assert time_unit([3.5e-6, 1e-3]) == ("µs", 1e-6) and time_unit([0.016]) == ("ms", 1e-3)


# --- plots ---------------------------------------------------------------------------------------------


def _overlap(a, b) -> bool:
    return (
        a.overlaps(b) and min(a.x1, b.x1) - max(a.x0, b.x0) > 0.5 and min(a.y1, b.y1) - max(a.y0, b.y0) > 0.5
    )


def _legends_clear_of_axes(fig) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()] + list(fig.legends)
    assert legends
    for legend in legends:
        box = legend.get_window_extent(renderer)
        for ax in fig.axes:
            assert not _overlap(box, ax.get_window_extent(renderer)), "a legend covers the data"


def _captured(monkeypatch) -> dict:
    seen: dict = {}
    monkeypatch.setattr(suite_plots, "save_figure", lambda fig, stem: seen.setdefault("fig", fig) and [])
    return seen


def _roofline() -> dict:
    """A 1 GB head: memory-bound up to batch 16, then compute-bound (the published shape of the curve)."""
    weights, flops1 = 1.05e9, 2 * 128256 * 4096
    points = []
    for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        latency = max(weights / 120e9, flops1 * batch / 4e12)
        points.append(
            {
                "batch": batch,
                "latency_s": latency,
                "flop_per_s": flops1 * batch / latency,
                "bytes_per_flop": weights / (flops1 * batch),
                "gbps": weights / latency / 1e9,
                "flops": flops1 * batch,
                "bytes": weights,
            }
        )
    return {
        "points": points,
        "memory_gbps": 120.0,
        "peak_flop_per_s": 4e12,
        "ridge_batch": 32,
        "baseline_batch": 1,
        "ridge_error": None,
    }


def _clustered() -> dict:
    """A tiny head whose activations rival its weights: the points bunch up at high batch (the old
    labels overlapped there, as "B=1B=2" did on a real run)."""
    hidden, vocab = 64, 1024
    weights, activation = hidden * vocab * 4, (hidden + vocab) * 4
    points = []
    for batch in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024):
        moved, flops = weights + batch * activation, 2 * hidden * vocab * batch
        latency = max(moved / 20e9, 5e-6)
        points.append(
            {
                "batch": batch,
                "latency_s": latency,
                "flop_per_s": flops / latency,
                "bytes_per_flop": moved / flops,
                "gbps": weights / latency / 1e9,
                "flops": flops,
                "bytes": moved,
            }
        )
    return {
        "points": points,
        "memory_gbps": 13.0,
        "peak_flop_per_s": max(p["flop_per_s"] for p in points),
        "ridge_batch": None,
        "baseline_batch": 1,
        "ridge_error": "latency never stayed above 1.2x",
    }


@pytest.mark.parametrize("analysis", [_roofline(), _clustered()], ids=["published shape", "clustered"])
def test_roofline_labels_never_collide_and_legends_sit_outside(monkeypatch, analysis):
    seen = _captured(monkeypatch)
    suite_plots.plot_roofline(analysis, "roofline mlx:gpu lm_head", "unused")
    fig = seen["fig"]
    _legends_clear_of_axes(fig)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    labels = [t for t in ax.texts if t.get_text().startswith("B=")]
    assert len(labels) >= 8  # most points keep their label
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert not [
        (labels[i].get_text(), labels[j].get_text())
        for i in range(len(boxes))
        for j in range(i + 1, len(boxes))
        if _overlap(boxes[i], boxes[j])
    ]
    (measured,) = [line for line in ax.get_lines() if line.get_label().startswith("measured")]
    assert to_hex(measured.get_color()) == to_hex(ENGINE_COLOURS["mlx"])
    assert (
        not [line for line in fig.axes[1].get_lines() if line.get_label().startswith("ridge")]
        or analysis["ridge_batch"]
    )  # a failed ridge draws no line
    plt.close(fig)


def test_sweep_title_says_what_was_read_and_colours_follow_the_engine(monkeypatch):
    from anebench.measure.sweep import analyse_sweep

    base = make_record(chip=None, engine="numpy", device="cpu", workload="lm_head:64x1024:fp16", gbps=5)
    streamed = base.model_copy(update={"engine": base.engine.model_copy(update={"run_dtype": "fp32"})})
    sizes = [2**k * 2**20 for k in range(7)]
    latencies = [40e-6 + s / 20e9 for s in sizes]
    analysis = analyse_sweep(sizes, latencies, cache_bytes=2**20).as_dict()
    seen = _captured(monkeypatch)
    suite_plots.plot_sweep(
        sizes, latencies, analysis, "sweep numpy:cpu (hidden 64, fp16)", "unused", records=[streamed]
    )
    fig = seen["fig"]
    title = fig._suptitle.get_text()
    assert "fp32 weights (workload fp16, streamed as fp32)" in title and "(hidden 64, fp16)" not in title
    _legends_clear_of_axes(fig)
    (points,) = [line for line in fig.axes[1].get_lines() if line.get_label() == "median latency"]
    assert to_hex(points.get_color()) == to_hex(ENGINE_COLOURS["numpy"])
    assert fig.axes[0].get_xlabel().startswith("weight bytes read per call (MB = 10⁶ bytes)")
    plt.close(fig)
    seen.clear()  # without records the engine named in the title still picks the colour
    suite_plots.plot_sweep(sizes, latencies, analysis, "sweep numpy:cpu (hidden 64, fp16)", "unused")
    (points,) = [line for line in seen["fig"].axes[1].get_lines() if line.get_label() == "median latency"]
    assert to_hex(points.get_color()) == to_hex(ENGINE_COLOURS["numpy"])
    plt.close(seen["fig"])


def test_concurrency_bars_keep_three_digits_and_the_engine_colour(monkeypatch):
    seen = _captured(monkeypatch)
    analysis = {
        "solo_gbps": [2.8, 3.1],
        "together_gbps": [1.45, 1.5],
        "combined_gbps": 2.95,
        "scaling": 1.05,
        "verdict": "shared ceiling",
        "rule": "r",
        "combined_definition": "c",
        "together_definition": "t",
    }
    suite_plots.plot_concurrency(analysis, "concurrent torch lm_head x2 (processes)", "unused")
    fig = seen["fig"]
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"2.80", "3.10", "1.45", "2.95"} <= texts and "3" not in texts
    _legends_clear_of_axes(fig)
    together = [
        p for p in fig.axes[0].patches if to_hex(p.get_facecolor()) == to_hex(ENGINE_COLOURS["torch"])
    ]
    assert len(together) == 2
    plt.close(fig)


def test_bar_chart_labels_three_digits_in_the_engine_colour_with_the_legend_outside():
    rows = aggregate(
        [
            make_record(chip="Apple M4 Pro", engine="mlx", gbps=2.8),
            make_record(chip="Apple M1", engine="mlx", gbps=60.87),
        ]
    ).rows
    fig = bar_chart(rows, "t")
    texts = {t.get_text() for t in fig.axes[0].texts}
    assert {"2.80", "60.9"} <= texts and "3" not in texts
    colours = {to_hex(p.get_facecolor()) for p in fig.axes[0].patches}
    assert to_hex(engine_colour("mlx")) in colours
    _legends_clear_of_axes(fig)
    plt.close(fig)
    assert (
        engine_colour("mystery") == engine_colour("mystery") and engine_colour("MLX") == ENGINE_COLOURS["mlx"]
    )
