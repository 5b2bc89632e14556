"""Core ML decode chunks: built with reproducible bytes, the chained chunks compute numpy's stream (run by the
float64 reference executor), and a measured run (with that executor standing in for Core ML) keeps a
per-chunk timeline."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("coremltools")

from anebench.artifacts.decode_bundles import HIDDEN_OUTPUT, build_chunks, chunk_feeds, coreml_chunks  # noqa: E402
from anebench.artifacts.reference import ReferenceProgram  # noqa: E402
from anebench.engines.coreml_engine import CoreMLEngine  # noqa: E402
from anebench.engines.decode import DecodeEngine  # noqa: E402
from anebench.engines.numpy_engine import NumpyEngine  # noqa: E402
from anebench.errors import UserError  # noqa: E402
from anebench.measure.warmup import WarmupPolicy  # noqa: E402
from anebench.orchestration.session import RunOptions  # noqa: E402
from anebench.orchestration.suites.decode import DecodeTarget, run_decode  # noqa: E402
from anebench.workloads.decode_stream import stream_bytes  # noqa: E402
from anebench.workloads.model_config import config_facts  # noqa: E402
from anebench.workloads.models import decode_workload  # noqa: E402

TINY = dict(
    model_type="qwen3",
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=3,
    num_attention_heads=4,
    num_key_value_heads=2,
    head_dim=16,
    vocab_size=17000,
    tie_word_embeddings=True,
    torch_dtype="bfloat16",
)
CHUNK_BYTES = 160_000  # 2 chunks of the 3 layers: the chain crosses a bundle boundary


@pytest.fixture(scope="module")
def workload():
    return decode_workload(config_facts(TINY, "tiny", "test"), 8)


@pytest.fixture(scope="module")
def built(workload, tmp_path_factory):
    return build_chunks(workload, tmp_path_factory.mktemp("cache"), CHUNK_BYTES)


def files_digest(package) -> dict[str, str]:
    return {
        str(p.relative_to(package)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(package.rglob("*"))
        if p.is_file()
    }


def test_chunks_are_the_plan_and_rebuild_byte_exact(workload, built, tmp_path):
    assert [c.name for c, _ in built] == [c.name for c in coreml_chunks(workload, CHUNK_BYTES)]
    assert [c.kind for c, _ in built] == ["embedding", "layers", "layers", "lm_head"]
    assert built[-1][0].splits == 2  # 17000 rows: two splits of the canonical head's <= 16384
    again = build_chunks(workload, tmp_path, CHUNK_BYTES)
    for (_, first), (_, second) in zip(built, again):
        assert files_digest(first) == files_digest(second)


def test_chained_chunks_compute_the_numpy_stream(workload, built):
    hidden, outputs = None, {}
    for chunk, package in built:
        outputs = ReferenceProgram(package).predict(chunk_feeds(chunk, hidden))
        hidden = outputs.get(HIDDEN_OUTPUT)
    logits = np.concatenate([outputs[f"logits{i + 1}"].reshape(-1) for i in range(2)]).astype(np.float64)
    prepared = DecodeEngine(NumpyEngine()).prepare(workload, "cpu")
    prepared.call()
    expected = prepared.output()[0]
    assert np.linalg.norm(logits - expected) / np.linalg.norm(expected) < 5e-3  # fp16 between chunks


def test_the_chunks_stream_the_tokens_bytes(workload):
    assert sum(c.streamed_bytes for c in coreml_chunks(workload, CHUNK_BYTES)) == stream_bytes(
        workload.facts, workload.depth, "fp16"
    )


def test_a_measured_run_keeps_each_chunks_time(workload, built, tmp_path, monkeypatch):
    cache = built[0][1].parent.parent
    from fakehost import pretend_mac_host
    from fakepipeline import state_coreml

    state_coreml(monkeypatch, load_model=lambda package, units, warnings: ReferenceProgram(package))
    pretend_mac_host(monkeypatch)  # Core ML and the Neural Engine reachable
    options = RunOptions(runs=3, warmup=WarmupPolicy(fixed=1))
    suite = run_decode(
        [DecodeTarget(CoreMLEngine(cache_dir=cache), "ane")],
        [workload],
        options,
        sweep_if_missing=False,
        chunk_bytes=CHUNK_BYTES,
    )
    record = suite.records[0]
    assert record.method.output_check.passed and record.engine.run_dtype == "fp16"
    timeline = record.decode.timeline
    assert [t.name for t in timeline] == ["embedding", "chunk 1/2", "chunk 2/2", "lm_head"]
    assert sum(t.bytes for t in timeline) == record.workload.weight_bytes
    assert sum(t.median_s for t in timeline) <= record.latency_s() * 1.5


def test_moe_chunks_are_planned_not_built(tmp_path):
    model = replace(
        config_facts(TINY, "tiny", "test"),
        experts=4,
        experts_per_token=2,
        expert_intermediate=32,
        family="qwen3_moe",
    )
    moe = decode_workload(model, 0)
    assert len(coreml_chunks(moe, CHUNK_BYTES)) >= 3
    with pytest.raises(UserError, match="MoE"):
        build_chunks(moe, tmp_path, CHUNK_BYTES)
