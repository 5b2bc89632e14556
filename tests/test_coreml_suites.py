"""The Core ML suites (token roofline, compute, quant, sweep): the inference rule, the dry run, the refusal
off macOS, and every suite end to end with Core ML's predict replaced by the float64 reference."""

from __future__ import annotations

import json

import pytest

from anebench.artifacts import BuildSpec, build_or_reuse
from anebench.engines import get_engine
from anebench.measure.quant import (
    COMPRESSED,
    COMPUTE_BOUND,
    DECOMPRESSED,
    INCONCLUSIVE,
    TOLERANCE,
    VariantPoint,
    infer_streaming,
    variant_verdict,
)
from anebench.model import ResultRecord
from anebench.orchestration.suites.quant import as_stored, measurable, variant_workload
from anebench.workloads import resolve_workload
from clitools import document_results, run_cli
from fake_coreml import FakeMLModel
from fakehost import pretend_linux_host, pretend_mac_host
from fakepipeline import state_coreml

FP16 = 1_050_673_152
LUT6 = 396_054_528
INT8 = 525_593_088
LUT4 = 263_181_312
QUICK = ("--runs", "3", "--warmup", "1", "--time-budget", "0.5")


# --- the inference rule --------------------------------------------------------------------------------


def test_published_lut6_figures_say_compressed():
    # M-series published: fp16 at 134 GB/s (7.84 ms), lut6 396 MB in 3.27 ms.
    result = infer_streaming(
        [VariantPoint("fp16", FP16, FP16 / 134e9), VariantPoint("lut6", LUT6, 3.27e-3)], FP16
    )
    lut6 = result.variants[1]
    assert lut6.verdict == COMPRESSED and result.inference == COMPRESSED
    assert lut6.gbps_as_stored == pytest.approx(121.1, abs=0.1)
    assert lut6.gbps_fp16_equivalent == pytest.approx(FP16 / 3.27e-3 / 1e9)
    assert result.variants[0].verdict is None and "within 15%" in result.rule


def test_decompressed_compute_bound_inconclusive_and_mixed():
    fp16 = VariantPoint("fp16", FP16, 8e-3)
    same = infer_streaming(
        [fp16, VariantPoint("int8", INT8, 8.3e-3), VariantPoint("lut4", LUT4, 7.5e-3)], FP16
    )
    assert [v.verdict for v in same.variants[1:]] == [
        DECOMPRESSED,
        DECOMPRESSED,
    ] and same.inference == DECOMPRESSED
    slow = infer_streaming([fp16, VariantPoint("lut4", LUT4, 12e-3)], FP16)
    assert slow.inference == COMPUTE_BOUND
    between = infer_streaming([fp16, VariantPoint("lut4", LUT4, 5e-3)], FP16)  # 0.625: neither 0.25 nor 1
    assert between.inference == INCONCLUSIVE
    mixed = infer_streaming(
        [fp16, VariantPoint("int8", INT8, 4.1e-3), VariantPoint("lut4", LUT4, 8e-3)], FP16
    )
    assert mixed.inference == f"mixed: int8 {COMPRESSED}, lut4 {DECOMPRESSED}"


@pytest.mark.parametrize(
    "latency_ratio,bytes_ratio,expected",
    [
        (0.5, 0.5, COMPRESSED),
        (0.5 * (1 + TOLERANCE) - 1e-9, 0.5, COMPRESSED),
        (0.5 * (1 + TOLERANCE) + 1e-3, 0.5, INCONCLUSIVE),
        (1.0, 0.5, DECOMPRESSED),
        (1 + TOLERANCE - 1e-9, 0.25, DECOMPRESSED),
        (1 + TOLERANCE + 1e-3, 0.25, COMPUTE_BOUND),
        (0.1, 0.5, INCONCLUSIVE),
    ],
)
def test_variant_verdict_boundaries(latency_ratio, bytes_ratio, expected):
    assert variant_verdict(latency_ratio, bytes_ratio) == expected


def test_inference_needs_fp16_and_a_quantised_variant():
    with pytest.raises(ValueError, match="fp16"):
        infer_streaming([VariantPoint("lut6", LUT6, 1e-3)], FP16)
    with pytest.raises(ValueError, match="at least one quantised"):
        infer_streaming([VariantPoint("fp16", FP16, 1e-3)], FP16)


def test_variants_keep_the_catalog_fingerprints_and_engines_say_what_they_store():
    llama = resolve_workload("llama_lm_head")
    assert variant_workload(llama, "fp16").fingerprint == llama.fingerprint
    assert variant_workload(llama, "lut6").fingerprint == resolve_workload("llama_lm_head_lut6").fingerprint
    assert variant_workload(resolve_workload("llama_lm_head_lut6"), "fp16").fingerprint == llama.fingerprint
    assert [variant_workload(llama, v).stored_bytes for v in ("int8", "lut6", "lut4")] == [INT8, LUT6, LUT4]
    coreml = as_stored(get_engine("coreml"), "ane", llama)
    assert all(why is None for why in coreml.values()) and measurable(coreml) == [
        "fp16",
        "int8",
        "lut6",
        "lut4",
    ]
    numpy = as_stored(get_engine("numpy"), "cpu", llama)
    assert numpy["fp16"] == "streams fp32" and numpy["lut6"] == "numpy has no lut6 weight storage"
    assert measurable(numpy) == []


# --- the dry run and the refusal off macOS -------------------------------------------------------------


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_roofline_dry_run_lists_bundles_and_says_which_are_cached(capsys, cache):
    head = resolve_workload("lm_head:64x1024")
    build_or_reuse(BuildSpec.for_workload(head.with_tokens(4)), cache)
    code, out, err = run_cli(capsys, "roofline", "-e", "coreml", "-w", "lm_head:64x1024", "--max-tokens", "8",
                             "--dry-run", "--json")
    assert code == 0, err
    plan = json.loads(out)
    assert plan["suite"] == "roofline" and plan["device"] == "ane"
    assert [(b["tokens"], b["quant"], b["weight_bytes"], b["cached"]) for b in plan["bundles"]] == [
        (1, "fp16", 131072, False),
        (2, "fp16", 131072, False),
        (4, "fp16", 131072, True),
        (8, "fp16", 131072, False),
    ]
    assert all("timed predicts" in b["calls"] for b in plan["bundles"])
    assert "4 bundle(s), 3 to build" in err
    assert sorted(p.name for p in cache.iterdir()) == [BuildSpec.for_workload(head.with_tokens(4)).key]


def test_published_head_dry_runs_plan_the_published_bytes(capsys, cache):
    code, out, err = run_cli(capsys, "quant", "-e", "coreml", "--dry-run", "--json")
    assert code == 0, err
    bundles = json.loads(out)["bundles"]
    assert [(b["workload"], b["quant"], b["weight_bytes"]) for b in bundles] == [
        ("llama_lm_head", "fp16", FP16), ("llama_lm_head_int8", "int8", INT8),
        ("llama_lm_head_lut6", "lut6", LUT6), ("llama_lm_head_lut4", "lut4", LUT4)]
    code, out, err = run_cli(capsys, "roofline", "-e", "coreml", "--dry-run", "--json")
    tokens = [b["tokens"] for b in json.loads(out)["bundles"]]
    assert tokens == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512] or tokens[:1] == [
        1
    ]  # fewer when memory is short
    code, out, err = run_cli(capsys, "sweep", "-e", "coreml", "--dry-run", "--json")
    sizes = [b["weight_bytes"] for b in json.loads(out)["bundles"]]
    assert sizes[-1] == FP16 and 4 << 20 <= sizes[0] < 5 << 20 and len(sizes) == 8
    assert "Orion" in err and "0.095 ms" in err
    code, out, err = run_cli(capsys, "compute", "-e", "coreml", "--dry-run", "--json")
    assert [b["tokens"] for b in json.loads(out)["bundles"]] == [256, 512]
    assert not cache.exists()  # a dry run builds nothing


@pytest.mark.parametrize("suite", ["roofline", "quant", "sweep", "compute"])
def test_off_macos_the_suites_refuse_in_one_line_before_building(capsys, cache, suite, monkeypatch):
    pretend_linux_host(monkeypatch)  # Core ML prediction needs macOS
    code, out, err = run_cli(capsys, suite, "-e", "coreml", "-w", "lm_head:64x1024", "--no-save")
    assert code == 2 and out == ""
    assert (
        err.strip().count("\n") == 0
        and f"{suite} -e coreml cannot measure here" in err
        and "--dry-run" in err
    )
    assert not cache.exists()


def test_dry_run_needs_core_ml_alone(capsys, cache):
    code, _, err = run_cli(capsys, "compute", "-e", "numpy", "--dry-run")
    assert code == 2 and "give -e coreml alone" in err
    code, out, _ = run_cli(capsys, "roofline", "-e", "numpy", "--dry-run")  # the CPU first look's plan
    assert code == 0 and "a first look on the CPU" in out


# --- end to end on a "Mac" whose predict is the float64 reference ---------------------------------------


def ReferenceModel(package) -> FakeMLModel:  # noqa: N802 - the former class
    """MLModel as coremltools' binding behaves (tests/fake_coreml.py), computing the bundle's program."""
    return FakeMLModel(package)


@pytest.fixture
def stand_in_mac(monkeypatch, cache):
    pretend_mac_host(monkeypatch)
    state_coreml(monkeypatch, load_model=lambda package, units, warnings_out=None: ReferenceModel(package),
                 query_placement=lambda model, units: [])
    return cache


def records_of(out: str) -> list[ResultRecord]:
    return [ResultRecord.model_validate(r) for r in document_results(json.loads(out))]


def test_token_roofline_end_to_end(capsys, stand_in_mac):
    code, out, err = run_cli(
        capsys,
        "roofline",
        "-e",
        "coreml",
        "-w",
        "lm_head:256x2048",
        "--max-tokens",
        "8",
        *QUICK,
        "--no-save",
        "--json",
    )
    # 8 tokens rarely confirm a ridge: then the analysis fails (exit 3) and the records are all there
    assert code == 0 or (code == 3 and "analysis failed: ridge not found" in err), err
    records = records_of(out)
    assert [r.workload.tokens for r in records] == [1, 2, 4, 8][:len(records)] and len(records) >= 3
    assert all(r.workload.batch == 1 and r.method.output_check.passed for r in records)
    assert len({r.workload.fingerprint for r in records}) == len(records)
    assert {r.workload.weight_bytes for r in records} == {256 * 2048 * 2}  # the tokens share one read
    assert [r.roofline.batch for r in records] == [r.workload.tokens for r in records]
    assert "tokens per predict" in records[0].roofline.rule
    assert all(r.engine.details["tokens"] == r.workload.tokens for r in records)


def test_token_compute_end_to_end(capsys, stand_in_mac):
    code, out, err = run_cli(
        capsys,
        "compute",
        "-e",
        "coreml",
        "-w",
        "lm_head:256x2048",
        "--max-tokens",
        "16",
        *QUICK,
        "--no-save",
        "--json",
    )
    assert code == 0 or (code == 3 and "analysis failed: no compute peak" in err), err
    (record,) = records_of(out)
    assert record.workload.tokens == 16 and record.compute.half_batch == 8
    assert "16 tokens" in err and "tokens per predict" in record.compute.rule


def test_quant_end_to_end_records_each_variant_with_the_inference(capsys, stand_in_mac):
    code, out, err = run_cli(capsys, "quant", "-e", "coreml", "-w", "lm_head:256x2048", *QUICK, "--no-save",
                             "--json")
    assert code in (0, 3), err  # 3: the stand-in's timings may leave a variant inconclusive
    records = records_of(out)
    assert [r.quant.variant for r in records] == ["fp16", "int8", "lut6", "lut4"]
    assert [r.engine.run_dtype for r in records] == ["fp16", "int8", "lut6", "lut4"]
    fp16 = 256 * 2048 * 2
    assert [r.quant.stored_bytes for r in records] == [fp16, 256 * 2048 + 2048 * 2,
                                                       256 * 2048 * 6 // 8 + 2048 // 8 * 64 * 2,
                                                       256 * 2048 // 2 + 2048 // 8 * 16 * 2]
    for r in records:
        assert r.quant.fp16_bytes == fp16 and r.quant.inference == records[0].quant.inference
        assert r.quant.gbps_fp16_equivalent == pytest.approx(fp16 / r.latency_s() / 1e9)
        assert r.id == r.content_id()
    assert records[0].quant.verdict is None and all(r.quant.verdict for r in records[1:])
    assert "what is streamed" in err and "rule:" in err


def test_coreml_sweep_end_to_end_reports_orion_beside_the_fit(capsys, stand_in_mac):
    code, out, err = run_cli(capsys, "sweep", "-e", "coreml", "-w", "lm_head:256x8192", "--min-mb", "0.5",
                             "--points", "4", *QUICK, "--no-save", "--json")
    assert code == 0 or "fit failed" in err, err
    records = records_of(out)
    assert len(records) == 4 and records[-1].workload.weight_bytes == 256 * 8192 * 2  # the full head
    assert all(r.engine.name == "coreml" and r.sweep is not None for r in records)
    assert "Orion" in err
