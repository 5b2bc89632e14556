"""`anebench ingest --from anemll-bench`: a bad file stores nothing, duplicates are no-ops."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from anebench.cli import main
from anebench.results.store import open_store

DATA = Path(__file__).parent / "data" / "anemll"
FP16_BYTES = 128256 * 4096 * 2


def ingest(capsys, db: Path, *files: str | Path) -> tuple[int, dict]:
    args = ["ingest", "--from", "anemll-bench", "--db", str(db), "--json", *map(str, files)]
    with pytest.raises(SystemExit) as caught:
        main(args)
        raise SystemExit(0)
    return caught.value.code, json.loads(capsys.readouterr().out)


def test_ingest_stores_good_files_refuses_bad_ones_and_repeats_are_no_ops(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    code, out = ingest(capsys, db, DATA / "m4_results.json", DATA / "m4_edited_throughput.json",
                       DATA / "issue_m4pro.md", DATA / "m4_mislabelled_lut6.json")
    assert code == 2
    assert [(i["added"], i["duplicates"]) for i in out["ingested"]] == [(3, 0), (1, 0)]
    assert out["records_in_store"] == 4
    failed = {Path(f["problems"][0].split(":")[0]).name for f in out["failed"]}
    assert failed == {"m4_edited_throughput.json", "m4_mislabelled_lut6.json"}
    assert all(len(f["problems"]) == 1 for f in out["failed"])

    code, out = ingest(
        capsys, db, DATA / "m4_results.json", DATA / "m4_report.html", DATA / "m4_report_pre.html"
    )
    assert code == 0
    assert [(i["added"], i["duplicates"]) for i in out["ingested"]] == [(0, 3), (0, 3), (0, 3)]
    assert out["records_in_store"] == 4


def test_stored_records_keep_the_fp16_figure_per_chip_apart_from_lut6(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    ingest(capsys, db, DATA / "m4_report.html", DATA / "issue_m4pro.md")
    with open_store(db) as store:
        records = store.records(provenance="imported")
    fp16_ane = {r.host.chip: r.gbps for r in records
                if (r.workload.name, r.engine.device) == ("llama_lm_head", "ane")}
    assert fp16_ane == pytest.approx({"Apple M4": FP16_BYTES / 16.3707e-3 / 1e9,
                                      "Apple M4 Pro": FP16_BYTES / 8.3149e-3 / 1e9})
    fingerprints = {r.workload.name: r.workload.fingerprint for r in records}
    assert fingerprints["llama_lm_head"] != fingerprints["llama_lm_head_lut6"]


def test_unknown_source_format_is_a_clear_error(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(
            ["ingest", "--from", "anemll", "--db", str(tmp_path / "r.sqlite"), str(DATA / "m4_results.json")]
        )
    assert caught.value.code == 2
    assert "anemll-bench" in capsys.readouterr().err


def test_report_shows_the_fp16_gbps_for_the_chip_and_keeps_lut6_apart(tmp_path, capsys):
    db = tmp_path / "r.sqlite"
    ingest(capsys, db, DATA / "m4_results.json", DATA / "m4_report.html")
    main(["report", "--db", str(db), "--format", "json"])
    matrix = json.loads(capsys.readouterr().out)["matrix"]
    rows = {(r["chip"], r["workload"], r["device"]): r for r in matrix}
    fp16 = rows["M4", "llama_lm_head", "ane"]
    assert fp16["median_gbps"] == pytest.approx(FP16_BYTES / 16.3707e-3 / 1e9)
    assert fp16["contributors"] == 1  # the HTML report of the same run added nothing
    assert fp16["median_latency_s"] == pytest.approx(16.3707e-3)
    lut6 = rows["M4", "llama_lm_head_lut6", "ane"]
    assert lut6["median_latency_s"] == pytest.approx(6.2118e-3)
    assert lut6["fingerprint"] != fp16["fingerprint"]  # latencies are only compared within one fingerprint

    main(["report", "--db", str(db), "--format", "md"])
    markdown = capsys.readouterr().out
    fp16_table = markdown.split("## Results: llama\\_lm\\_head on coreml:ane")[1].split("## ")[0]
    assert "64.18" in fp16_table and "16.37" in fp16_table
    assert "6.21" not in fp16_table and "63.43" not in fp16_table  # no lut6 figure in the fp16 table
