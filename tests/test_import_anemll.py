"""Importing anemll-bench's own result files: finding the JSON, mapping it, refusing bad files."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from anebench.errors import UserError
from anebench.results.importers import IMPORTERS
from anebench.results.importers.anemll import canonical_workload, import_file, import_text
from anebench.results.importers.embedded_json import find_json_objects
from anebench.results.validate import InvalidFile, plausibility_problems
from anebench.workloads import resolve_workload

DATA = Path(__file__).parent / "data" / "anemll"
FP16_BYTES = 128256 * 4096 * 2  # 1,050,673,152
LUT6_BYTES = 128256 * 4096 * 6 // 8 + 16032 * 64 * 2  # 6-bit indices + one 64-entry fp16 table per 8 rows


@pytest.fixture
def m4_doc() -> dict:
    return json.loads((DATA / "m4_results.json").read_text())


def write(tmp_path: Path, doc: dict, name: str = "r.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def problems_of(path: Path) -> list[str]:
    with pytest.raises(InvalidFile) as caught:
        import_file(path)
    assert "nothing from this file was stored" in str(caught.value)
    return caught.value.problems


def by_key(records):
    return {(r.workload.name, r.engine.device): r for r in records}


def test_json_file_maps_each_result_to_a_record():
    records = by_key(import_file(DATA / "m4_results.json"))
    assert set(records) == {("llama_lm_head", "ane"), ("llama_lm_head_lut6", "ane"), ("llama_lm_head", "gpu")}
    ane = records["llama_lm_head", "ane"]
    assert ane.provenance == "imported"
    assert ane.provenance_note.startswith("imported from anemll-bench")
    assert "2025-03-02 14:05:11" in ane.provenance_note
    assert (ane.engine.name, ane.engine.compute_units) == ("coreml", "CPU_AND_NE")
    assert records["llama_lm_head", "gpu"].engine.compute_units == "CPU_AND_GPU"
    assert (ane.method.statistic, ane.method.timing) == ("mean", "end-to-end predict()")
    assert (ane.method.runs, ane.method.warmup_policy, ane.method.warmup_runs) == (None, None, None)
    assert ane.summary.mean == pytest.approx(16.3707e-3)
    assert (ane.summary.n, ane.summary.median) == (None, None)
    assert ane.samples_s == []
    assert ane.latency_s() == pytest.approx(16.3707e-3)
    assert ane.id == ane.content_id()
    assert ane.warnings == []  # "not stated" lives in method (None), not in measurement warnings
    # Host from system_info, chip through the catalog.
    assert (ane.host.chip, ane.host.cpu_model, ane.host.machine_model) == ("Apple M4", "Apple M4", "Mac16,1")
    assert (ane.host.os, ane.host.os_version, ane.host.arch) == ("macOS", "15.3.1", "arm64")
    assert ane.host.memory_bytes == 16 * 1024**3
    for record in records.values():
        assert plausibility_problems(record) == []  # the store's own checks accept every record


def test_gbps_is_recomputed_from_exact_bytes_and_the_tool_size_stays_visible():
    records = by_key(import_file(DATA / "m4_results.json"))
    fp16 = records["llama_lm_head", "ane"]
    assert fp16.workload.weight_bytes == FP16_BYTES
    assert fp16.gbps == pytest.approx(FP16_BYTES / 16.3707e-3 / 1e9)
    size = fp16.facts.size_convention
    assert size["tool_model_size_mb"] == 1050.673728
    assert size["tool_weight_bytes"] - size["exact_weight_bytes"] == 576  # the blob header
    assert size["tool_over_exact"] == pytest.approx(1050673728 / FP16_BYTES)
    assert "blob headers" in fp16.workload.note
    lut6 = records["llama_lm_head_lut6", "ane"]
    assert lut6.workload.weight_bytes == LUT6_BYTES
    assert lut6.gbps == pytest.approx(LUT6_BYTES / 6.2118e-3 / 1e9)
    # weight.bin = indices + tables + 17 blob headers of 64 bytes (16 blobs and the file header)
    assert lut6.facts.size_convention["tool_weight_bytes"] - LUT6_BYTES == 17 * 64
    assert lut6.facts.tool_figures["throughput_gb_s"] == pytest.approx(396.055616 / 6.2118)


def test_workloads_are_the_canonical_ones_and_lut6_never_shares_the_fp16_fingerprint():
    records = by_key(import_file(DATA / "m4_results.json"))
    fp16, lut6 = records["llama_lm_head", "ane"], records["llama_lm_head_lut6", "ane"]
    assert fp16.workload.fingerprint == resolve_workload("llama_lm_head").fingerprint
    assert records["llama_lm_head", "gpu"].workload.fingerprint == fp16.workload.fingerprint
    assert lut6.workload.fingerprint == canonical_workload("llama_lm_head_lut6").fingerprint
    assert lut6.workload.fingerprint != fp16.workload.fingerprint
    assert (lut6.workload.quant, lut6.engine.run_dtype) == ("lut6", "lut6")


@pytest.mark.parametrize("name", ["m4_report.html", "m4_report_pre.html", "m4_report_script.html"])
def test_html_reports_give_the_same_records_as_the_json(name):
    assert [r.id for r in import_file(DATA / name)] == [r.id for r in import_file(DATA / "m4_results.json")]


def test_pasted_issue_body_with_prose_around_the_json():
    (record,) = import_file(DATA / "issue_m4pro.md")
    assert (record.host.chip, record.workload.name, record.engine.device) == (
        "Apple M4 Pro",
        "llama_lm_head",
        "ane",
    )
    assert record.gbps == pytest.approx(FP16_BYTES / 8.3149e-3 / 1e9)
    assert record.facts.tool_figures["neural_engine_cores"] == "Unknown"


def test_same_run_imported_twice_gives_the_same_ids(m4_doc, tmp_path):
    first = [r.id for r in import_file(DATA / "m4_results.json")]
    pasted = tmp_path / "mail.txt"
    pasted.write_text("Here are my benchmark results:\n\n" + json.dumps(m4_doc) + "\n\n-- \nsent from my Mac")
    assert [r.id for r in import_file(pasted)] == first
    assert [r.id for r in import_file(DATA / "m4_results.json")] == first


def test_edited_throughput_is_refused_and_names_the_result():
    (problem,) = problems_of(DATA / "m4_edited_throughput.json")
    assert "results[0]" in problem and "throughput_gb_s 65.46" in problem
    assert "edited or broken" in problem and "1.99%" in problem


def test_throughput_tolerance_is_half_a_percent(m4_doc, tmp_path):
    stated = m4_doc["results"][0]["throughput_gb_s"]
    m4_doc["results"][0]["throughput_gb_s"] = stated * 1.004
    assert len(import_file(write(tmp_path, m4_doc))) == 3
    m4_doc["results"][0]["throughput_gb_s"] = stated * 0.994
    (problem,) = problems_of(write(tmp_path, m4_doc))
    assert "0.60%" in problem


def test_a_lut6_result_labelled_fp16_is_refused():
    (problem,) = problems_of(DATA / "m4_mislabelled_lut6.json")
    assert "results[1]" in problem and "does not fit llama_lm_head" in problem


def test_truncated_paste_says_the_json_is_broken():
    (problem,) = problems_of(DATA / "issue_truncated.md")
    assert "no anemll-bench result JSON found" in problem and "broken" in problem


def test_one_bad_result_refuses_the_whole_file_with_a_line_per_problem(m4_doc, tmp_path):
    m4_doc["results"][0]["model_name"] = "qwen_lm_head"
    m4_doc["results"][2]["backend"] = "NPU"
    m4_doc["results"][1]["throughput_gb_s"] = 99.0
    problems = problems_of(write(tmp_path, m4_doc))
    assert len(problems) == 3
    assert "'qwen_lm_head'" in problems[0]
    assert "llama_lm_head, llama_lm_head_lut6, DeepHermes_lm_head" in problems[0]
    assert "throughput_gb_s 99" in problems[1]
    assert "'NPU'" in problems[2] and "ANE, GPU, CPU" in problems[2]
    assert all(p.startswith(str(tmp_path / "r.json")) for p in problems)


@pytest.mark.parametrize(("brand", "expected"), [
    ("Intel(R) Core(TM) i9-9880H CPU @ 2.30GHz", "is not an Apple chip in the catalog"),
    ("Apple M9 Ultra", "is not an Apple chip in the catalog"),
    ("NVIDIA H100 SXM", "is not Apple silicon"),
])
def test_a_brand_that_is_not_an_apple_chip_in_the_catalog_is_refused(m4_doc, tmp_path, brand, expected):
    m4_doc["system_info"]["cpu"]["brand"] = brand
    (problem,) = problems_of(write(tmp_path, m4_doc))
    assert repr(brand) in problem and expected in problem and "Apple M4 Pro" in problem


def test_schema_problems_name_the_field(m4_doc, tmp_path):
    doc = copy.deepcopy(m4_doc)
    del doc["system_info"]["cpu"]["brand"]
    doc["results"][1]["inference_time_ms"] = -3
    problems = problems_of(write(tmp_path, doc))
    assert any("system_info.cpu.brand" in p for p in problems)
    assert any("results.1.inference_time_ms" in p for p in problems)
    m4_doc["timestamp"] = "02/03/2025"
    (problem,) = problems_of(write(tmp_path, m4_doc))
    assert "timestamp '02/03/2025'" in problem


def test_missing_size_cannot_be_checked(m4_doc, tmp_path):
    m4_doc["results"][0]["model_size_mb"] = 0
    m4_doc["results"][0]["throughput_gb_s"] = 0
    (problem,) = problems_of(write(tmp_path, m4_doc))
    assert "model_size_mb is missing or 0" in problem


def test_run_count_and_warmup_are_taken_when_the_file_states_them(m4_doc, tmp_path):
    m4_doc["results"][0].update(num_runs=300, warmup_runs=5)
    record = by_key(import_file(write(tmp_path, m4_doc)))["llama_lm_head", "ane"]
    assert (record.method.runs, record.method.warmup_runs, record.summary.n) == (300, 5, 300)
    assert record.method.warmup_policy == "fixed 5"


def test_a_text_without_the_tool_json_is_refused(tmp_path):
    path = tmp_path / "notes.md"
    path.write_text('Some config: {"runs": 3, "results": []} and nothing else.')
    (problem,) = problems_of(path)
    assert "no anemll-bench result JSON found" in problem
    with pytest.raises(UserError, match="no such file"):
        import_file(tmp_path / "missing.json")
    binary = tmp_path / "x.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UserError, match="not UTF-8"):
        import_file(binary)


def test_two_runs_pasted_in_one_text_are_both_imported(m4_doc):
    other = copy.deepcopy(m4_doc)
    other["timestamp"] = "2025-03-03 08:00:00"
    text = (
        f"first run:\n{json.dumps(m4_doc)}\nsecond run:\n{json.dumps(other)}\n"
        f"same run again:\n{json.dumps(m4_doc)}"
    )
    records = import_text(text, "thread.txt")
    assert len(records) == 6 and len({r.id for r in records}) == 6


def test_the_ingest_registry_names_the_importer():
    assert IMPORTERS["anemll-bench"](DATA / "m4_results.json")


def test_embedded_json_finds_escaped_and_literal_forms():
    doc = {"system_info": {"cpu": {"brand": "Apple M1 \"x\" 'y'"}}, "results": [1]}

    def accept(value):
        return "system_info" in value

    as_js = "var a = {b: 1};\nconst jsonData = " + json.dumps(json.dumps(doc, indent=2)) + ";"
    as_py = "x = " + repr(json.dumps(doc, indent=2)) + ";"
    escaped = "<pre>" + json.dumps(doc).replace("&", "&amp;").replace('"', "&quot;") + "</pre>"
    for text, form in ((as_js, "string literal"), (as_py, "string literal"), (escaped, "html-escaped"),
                       (json.dumps(doc), "json"), ("see " + json.dumps(doc) + " there", "text")):
        search = find_json_objects(text, accept)
        assert (search.objects, search.form) == ([doc], form)
    assert find_json_objects('{"a": 1} {"b": ', accept).objects == []
