"""Suite-aware reports: the matrix holds single-call results; every suite has its own section in all
formats."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from pathlib import Path

import pytest

from anebench.cli import main
from anebench.model import LatencyResult
from anebench.report.build import render_report
from anebench.results.files import save_records
from anebench.results.published import published_records
from test_store import make_record

V1 = Path(__file__).parent / "data" / "v1"
SUITES = ("sweep", "roofline", "latency", "compute", "concurrency")
HEADINGS = {"sweep": "Sweep:", "roofline": "Roofline:", "latency": "Latency:", "compute": "Compute:",
            "concurrency": "Concurrency:"}


def _report(db: Path, fmt: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["report", "--db", str(db), "--format", fmt])
    return out.getvalue()


@pytest.fixture(scope="module")
def db(tmp_path_factory) -> Path:
    """One real record file of each suite (schema /1, loaded through the upgrader), plus a latency record."""
    root = tmp_path_factory.mktemp("suites")
    latency = make_record(chip=None, engine="numpy", device="cpu", workload="lm_head:64x1024:fp32", gbps=5,
                          suite="latency", latency=LatencyResult(median_us=3.5, p95_us=4.0))
    save_records(root / "latency.json", [latency])
    path = root / "db.sqlite"
    files = [str(V1 / f"{name}.json") for name in ("run", "sweep", "roofline", "compute", "concurrent")]
    main(["ingest", *files, str(root / "latency.json"), "--db", str(path)])
    return path


def test_the_json_matrix_holds_only_the_run_results_and_each_suite_has_its_group(db):
    document = json.loads(_report(db, "json"))
    run = json.loads((V1 / "run.json").read_text())["results"]
    assert [(r["workload"], r["engine"]) for r in document["matrix"]] == [
        (r["workload"]["name"], r["engine"]["name"]) for r in run]
    assert set(document["suites"]) == set(SUITES)
    (roofline,) = document["suites"]["roofline"]
    assert [p["batch"] for p in roofline["points"]] == [1, 2, 4]
    (concurrency,) = document["suites"]["concurrency"]
    assert {(p["copy"], p["phase"]) for p in concurrency["points"]} == {
        (0, "solo"), (1, "solo"), (0, "together"), (1, "together")}
    assert concurrency["figures"]["verdict"] and "scaling" in concurrency["result"]
    for group in (g for groups in document["suites"].values() for g in groups):
        for point in group["points"]:
            assert {"suite", "batch", "tokens", "copy", "phase", "threads"} <= set(point)


def test_a_stored_sweep_fit_that_fails_the_gates_is_reported_as_failed_with_no_bandwidth(db):
    (sweep,) = json.loads(_report(db, "json"))["suites"]["sweep"]
    # the /1 file's fit: R² 0.42, 36.2 GB/s above its own cache-resident peak of 28.5 GB/s
    assert sweep["result"].startswith("fit failed: R² 0.42 is below 0.9")
    assert "bandwidth_gbps" not in sweep["figures"] and "overhead_us" not in sweep["figures"]
    assert "36.1" not in sweep["result"]


@pytest.mark.parametrize("fmt", ["md", "html"])
def test_each_suite_has_its_own_section_in_md_and_html(db, fmt):
    text = _report(db, fmt)
    for suite, heading in HEADINGS.items():
        marker = f"## {heading}" if fmt == "md" else f"<h2>{heading}"
        assert text.count(marker) == 1, suite
    results = [line for line in text.splitlines() if line.startswith(("## Results:", "<h2>Results:"))]
    assert len(results) == 1 and "64x1024" in results[0]


def test_each_suite_has_its_rows_in_the_csv_with_suite_batch_tokens_copy_phase_threads(db):
    rows = list(csv.DictReader(io.StringIO(_report(db, "csv"))))
    assert {"suite", "batch", "tokens", "copy", "phase", "threads"} <= set(rows[0])
    assert {r["section"] for r in rows} >= {"matrix", *SUITES}
    assert [r["batch"] for r in rows if r["section"] == "roofline"] == ["1", "2", "4"]
    assert len([r for r in rows if r["section"] == "matrix"]) == 1
    together = [r for r in rows if r["section"] == "concurrency" and r["phase"] == "together"]
    assert sorted(r["copy"] for r in together) == ["0", "1"]


def test_published_data_and_one_run_make_no_suite_sections():
    records = published_records() + [make_record(chip="Apple M4 Pro", gbps=111)]
    document = json.loads(render_report(records, "json", None, "test"))
    assert set(document["suites"]) == {"concurrency"}  # only the published dual-model rows
    text = render_report(records, "md", None, "test")
    assert "(none)" not in text
    for heading in ("Sweep:", "Roofline:", "Latency:", "Compute:", "Runs with batch"):
        assert f"## {heading}" not in text


def token_roofline_records():
    """A Core ML token roofline as the suite stores it: batch 1, T tokens per predict, the ridge at 4."""
    from anebench.measure.roofline import analyse_roofline
    from anebench.orchestration.suites.roofline import roofline_sections

    tokens, latencies = [1, 2, 4, 8, 16], [1e-3, 1e-3, 1.5e-3, 3e-3, 6e-3]
    records = []
    for count, latency in zip(tokens, latencies):
        base = make_record(chip="Apple M4 Pro", engine="coreml", device="ane", workload="lm_head:64x1024",
                           suite="roofline", runs=5)
        workload = base.workload.model_copy(update={"tokens": count})
        records.append(base.rebuilt(workload=workload, samples_s=[latency] * 5))
    analysis = analyse_roofline(tokens, latencies, 1024, 64, records[0].workload.weight_bytes, 2)
    assert analysis.ridge_batch == 4 and analysis.ridge_error is None
    return [record.rebuilt(roofline=section) for record, section in zip(records, roofline_sections(analysis))]


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_a_token_roofline_shows_its_tokens_and_keeps_its_ridge_in_every_format(fmt):
    text = render_report(token_roofline_records(), fmt, None, "test")
    if fmt == "json":
        (group,) = json.loads(text)["suites"]["roofline"]
        assert group["figures"]["ridge_batch"] == 4 and group["result"].startswith("ridge at 4 tokens")
        assert [p["tokens"] for p in group["points"]] == [1, 2, 4, 8, 16]
        return
    assert "ridge at 4 tokens" in text  # the rule names 'ridge not found: <reason>'; no result does
    for count in (2, 4, 8, 16):
        assert f"{count} tokens" in text


def test_a_stored_token_ridge_is_regated_on_its_tokens_not_on_batch_1():
    """A ridge stored at the last token count (before the gates existed) has nothing after it to confirm it:
    re-gated on the workloads' batch (1 on every row) it passed."""
    stored = [r.model_copy(update={"roofline": r.roofline.model_copy(update={"ridge_batch": 16})})
              for r in token_roofline_records()]
    (group,) = json.loads(render_report(stored, "json", None, "test"))["suites"]["roofline"]
    assert group["figures"]["ridge_batch"] is None
    assert group["result"].startswith("ridge not found: batch 16 is the last measured")


def quant_records():
    """A quant run as the suite stores it: the fp16 head and its lut6 variant, with the inference."""
    from anebench.model.quant import QuantSection

    fp16 = make_record(chip="Apple M4 Pro", engine="coreml", device="ane", workload="llama_lm_head", gbps=100,
                       suite="quant")
    lut6 = make_record(chip="Apple M4 Pro", engine="coreml", device="ane", workload="llama_lm_head_lut6",
                       gbps=60, suite="quant")
    common = {"fp16_bytes": fp16.workload.weight_bytes, "inference": "streams compressed weights (lut6)",
              "rule": "the stated rule", "tolerance": 0.15}
    records = []
    for record, variant, verdict in ((fp16, "fp16", None), (lut6, "lut6", "streams compressed weights")):
        latency = record.latency_s()
        section = QuantSection(
            variant=variant, stored_bytes=record.workload.weight_bytes, gbps_as_stored=record.gbps,
            gbps_fp16_equivalent=common["fp16_bytes"] / latency / 1e9,
            latency_ratio=latency / fp16.latency_s(),
            bytes_ratio=record.workload.weight_bytes / common["fp16_bytes"], verdict=verdict, **common)
        records.append(record.model_copy(update={"quant": section}).with_id())
    return records


@pytest.mark.parametrize("fmt", ["md", "html", "json"])
def test_quant_records_are_a_quant_section_with_the_verdict_not_batched_runs(fmt):
    text = render_report(quant_records(), fmt, None, "test")
    if fmt == "json":
        suites = json.loads(text)["suites"]
        assert set(suites) == {"quant"}
        (group,) = suites["quant"]
        assert group["result"] == "streams compressed weights (lut6)"
        assert [(p["variant"], p["quant_verdict"]) for p in group["points"]] == [
            ("fp16", None), ("lut6", "streams compressed weights")]
        return
    assert "Runs with batch or tokens" not in text
    assert "Quantisation: llama_lm_head on coreml:ane" in text.replace("\\_", "_")
    assert "streams compressed weights (lut6)" in text and "(reference)" in text
