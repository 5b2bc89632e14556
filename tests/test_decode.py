"""The decode stream: byte accounting from a config (per family), the KV formula, the executors, the
Core ML chunk plan and the prediction."""

from __future__ import annotations

import json
from dataclasses import replace

import numpy as np
import pytest

from anebench.artifacts.decode_bundles import coreml_chunks
from anebench.engines.decode import DecodeEngine, dispatches
from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import UserError
from anebench.measure.check import check_output
from anebench.measure.decode_predict import SweepCurve, seconds_per_token
from anebench.workloads import DTYPE_BYTES
from anebench.workloads.decode_stream import accounting, kv_bytes, linear_bytes, stream_bytes
from anebench.workloads.model_config import config_facts, resolve_model
from anebench.workloads.models import decode_workload


def folder_with(tmp_path, **config):
    (tmp_path / "config.json").write_text(json.dumps(config))
    return str(tmp_path)


LLAMA_GQA = dict(
    model_type="llama",
    hidden_size=4096,
    intermediate_size=14336,
    num_hidden_layers=32,
    num_attention_heads=32,
    num_key_value_heads=8,
    vocab_size=128256,
    tie_word_embeddings=False,
    torch_dtype="bfloat16",
)


def dense_linear_elements(h, inter, layers, heads, kv, d, vocab):
    per_layer = h * heads * d + 2 * h * kv * d + heads * d * h + 3 * h * inter
    return layers * per_layer + vocab * h


def test_dense_gqa_untied_linear_bytes_are_the_config_arithmetic(tmp_path):
    model, folder = resolve_model(folder_with(tmp_path, **LLAMA_GQA))
    assert folder is not None and model.head_dim == 128 and not model.tied
    elements = dense_linear_elements(4096, 14336, 32, 32, 8, 128, 128256)
    assert linear_bytes(model, "bf16") == 2 * elements  # Llama-3-8B: 7.50 B linear weights + head
    rows = {r.kind: r for r in accounting(model, 0, "bf16")}
    assert rows["k"].streamed_bytes == 32 * 4096 * 8 * 128 * 2
    assert rows["lm_head"].stored_bytes == rows["lm_head"].streamed_bytes == 128256 * 4096 * 2
    assert rows["embedding row"].streamed_bytes == 4096 * 2  # one row per token, the matrix stored


def test_tied_head_is_streamed_every_token_but_stored_once(tmp_path):
    config = dict(LLAMA_GQA, tie_word_embeddings=True, num_hidden_layers=2, head_dim=96)
    model, _ = resolve_model(folder_with(tmp_path, **config))
    assert model.tied and model.head_dim == 96
    assert linear_bytes(model, "fp16") == 2 * dense_linear_elements(4096, 14336, 2, 32, 8, 96, 128256)
    rows = {r.kind: r for r in accounting(model, 0, "fp16")}
    head = rows["lm_head (tied: the embedding)"]
    assert (head.stored_bytes, head.streamed_bytes) == (0, 128256 * 4096 * 2)
    assert rows["embedding row"].stored_bytes == 128256 * 4096 * 2


def test_moe_streams_the_active_experts_and_stores_them_all(tmp_path):
    model, _ = resolve_model("mixtral-8x7b")
    h, inter, layers, experts, k = 4096, 14336, 32, 8, 2
    attention = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h
    streamed = layers * (attention + experts * h + k * 3 * h * inter) + 32000 * h
    assert linear_bytes(model, "bf16") == 2 * streamed
    rows = {r.kind: r for r in accounting(model, 0, "bf16")}
    assert rows["gate"].stored_count == layers * experts and rows["gate"].streamed_count == layers * k
    assert rows["down"].stored_bytes == layers * experts * h * inter * 2
    assert rows["router"].streamed_bytes == layers * experts * h * 2
    total_stored = sum(r.stored_bytes for r in accounting(model, 0, "bf16"))
    assert 46.6e9 < total_stored / 2 < 46.8e9  # Mixtral-8x7B's published 46.7 B parameters


@pytest.mark.parametrize("depth", [0, 1, 2048])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_kv_bytes_follow_the_formula(depth, dtype):
    model, _ = resolve_model("qwen3-0.6b")
    expected = 2 * model.layers * model.kv_heads * model.head_dim * depth * DTYPE_BYTES[dtype]
    assert kv_bytes(model, depth, dtype) == expected
    rows = {r.kind: r for r in accounting(model, depth, dtype)}
    assert rows["kv cache"].streamed_bytes == expected
    assert sum(r.streamed_bytes for r in accounting(model, depth, dtype)) == stream_bytes(model, depth, dtype)


@pytest.mark.parametrize(
    "bad, why",
    [
        ({"hidden_size": 0}, "hidden_size"),
        ({"num_key_value_heads": 5}, "multiple"),
        ({"torch_dtype": "int4"}, "torch_dtype"),
        ({"num_hidden_layers": "32"}, "num_hidden_layers"),
    ],
)
def test_a_bad_config_is_one_line_naming_the_key(tmp_path, bad, why):
    with pytest.raises(UserError, match=why):
        resolve_model(folder_with(tmp_path, **{**LLAMA_GQA, **bad}))


def test_a_missing_folder_names_the_known_configs(tmp_path):
    with pytest.raises(UserError, match="qwen3-0.6b"):
        resolve_model(str(tmp_path / "nope"))


TINY = dict(
    model_type="qwen3",
    hidden_size=128,
    intermediate_size=256,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=32,
    vocab_size=1000,
    tie_word_embeddings=True,
    torch_dtype="bfloat16",
)


@pytest.mark.parametrize("moe", [False, True])
@pytest.mark.parametrize("depth", [0, 16])
def test_the_numpy_stream_computes_the_float64_reference(moe, depth):
    model = config_facts(TINY, "tiny", "test")
    if moe:
        model = replace(model, experts=4, experts_per_token=2, expert_intermediate=64, family="qwen3_moe")
    prepared = DecodeEngine(NumpyEngine()).prepare(decode_workload(model, depth), "cpu")
    prepared.call()
    check = check_output(prepared)
    assert check.passed and check.relative_error < 1e-5
    assert prepared.weight_bytes == stream_bytes(model, depth, "fp32")


def test_the_check_fails_when_a_weight_is_not_read():
    model = config_facts(TINY, "tiny", "test")
    prepared = DecodeEngine(NumpyEngine()).prepare(decode_workload(model, 16), "cpu")
    prepared.stream.layers[1]["up"] = np.zeros_like(prepared.stream.layers[1]["up"])  # a skipped matvec
    prepared.call()
    assert not check_output(prepared).passed


def test_torch_runs_the_same_stream():
    pytest.importorskip("torch")
    from anebench.engines.torch_engine import TorchEngine

    model = config_facts(TINY, "tiny", "test")
    prepared = DecodeEngine(TorchEngine()).prepare(decode_workload(model, 16), "cpu")
    prepared.call()
    assert check_output(prepared).passed


def test_coreml_chunks_partition_the_layers_under_the_chunk_size():
    model, _ = resolve_model("llama-3.1-8b")
    workload = decode_workload(model, 2048)
    chunks = coreml_chunks(workload, 1_000_000_000)
    body = chunks[1:-1]
    assert chunks[0].name == "embedding" and chunks[-1].name == "lm_head"
    assert all(c.weight_bytes <= 1_000_000_000 for c in body)
    assert [c.layers for c in body][0][0] == 0 and body[-1].layers[1] == 32  # every layer, in order
    assert all(a.layers[1] == b.layers[0] for a, b in zip(body, body[1:]))
    assert chunks[-1].splits == 8  # 128256 rows as the canonical head: 8 x 16032
    weights = sum(c.streamed_bytes for c in chunks)
    assert weights == stream_bytes(model, 2048, "fp16")  # the chunks stream exactly the token's bytes


def test_prediction_is_the_sum_over_dispatches():
    model = config_facts(TINY, "tiny", "test")
    workload = decode_workload(model, 0)
    sent = dispatches(workload, "fp32")
    curve = SweepCurve(overhead_s=2e-6, bandwidth_bps=10e9)
    expected = len(sent) * 2e-6 + sum(d.bytes for d in sent) / 10e9
    assert seconds_per_token([d.bytes for d in sent], curve) == pytest.approx(expected)
    # past the knee the measured rate at that size is used, interpolated in log size
    measured = SweepCurve(0.0, 10e9, ((1_000_000, 1e-4), (4_000_000, 2e-4)))
    assert measured.rate_at(1_000_000) == pytest.approx(1e10)
    assert measured.rate_at(2_000_000) == pytest.approx(1.5e10)
    assert measured.rate_at(100) == 10e9  # below the measured points: the fit's memory bandwidth


def test_a_stored_sweep_predicts_beside_the_measurement():
    from anebench.measure.warmup import WarmupPolicy
    from anebench.model import LineFitInfo, SweepPoint
    from anebench.orchestration.session import RunOptions
    from anebench.orchestration.suites.decode import DecodeTarget, run_decode
    from anebench.report.decode_tables import decode_table
    from test_store import make_record

    fit = LineFitInfo(
        overhead_s=5e-6,
        overhead_resolved=True,
        bandwidth_gbps=20.0,
        r_squared=0.999,
        median_abs_rel_residual=0.01,
        max_abs_rel_residual=0.02,
        points=4,
        method="ols",
    )
    sweep = make_record(
        engine="numpy",
        device="cpu",
        workload="lm_head:4096x2048:fp32",
        gbps=20.0,
        sweep=SweepPoint(point=0, points=4, in_fit=True, fit=fit),
    ).model_copy(update={"suite": "sweep"})
    workload = decode_workload(config_facts(TINY, "tiny", "test"), 16)
    suite = run_decode(
        [DecodeTarget(NumpyEngine(), "cpu")],
        [workload],
        RunOptions(runs=3, warmup=WarmupPolicy(fixed=1)),
        saved=[sweep],
        saved_from="the test store",
    )
    record = suite.records[0]
    prediction = record.decode.prediction
    sent = dispatches(workload, "fp32")
    expected = len(sent) * 5e-6 + sum(d.bytes for d in sent) / 20e9
    assert prediction.seconds_per_token == pytest.approx(expected)  # no points past the knee: the fit's line
    assert "the test store" in prediction.source and any("prediction from" in n for n in suite.notes)
    row = decode_table([record]).rows[0]
    measured = 1 / record.latency_s()
    assert row[-1] == f"{(prediction.tokens_per_s - measured) / measured:+.0%}"
