"""Token-batched Core ML bundles: T hidden states in one predict, the same weight bytes for every T.

The bundles are executed by the float64 reference (anebench.artifacts.reference), which runs the
program the builder wrote, op by op, from the weights as stored; so the layout (input shape, token
axis, which conv feeds which output) is checked, not assumed.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from tests.clitools import run_cli

from anebench.artifacts import BuildSpec, BundleError, build_or_reuse, lookup
from anebench.artifacts.coreml import pack_tokens, unpack_logits
from anebench.artifacts.reference import ReferenceProgram
from anebench.engines.coreml_engine import CoreMLPrepared
from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import UserError
from anebench.measure.check import check_output
from anebench.model import ResultRecord, WorkloadInfo
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.workloads import Workload, resolve_workload
from fake_coreml import FakeMLModel

HIDDEN, VOCAB, SPLIT = 64, 1024, 128
TINY = Workload("tiny_tokens", HIDDEN, VOCAB, "fp16", seed=11)
QUANTS = ("fp16", "int8", "lut4", "lut6")
TOKENS = (1, 2, 7, 32, 64)


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("coreml-tokens")


@pytest.fixture(scope="module")
def bundles(cache):
    return {(q, t): build_or_reuse(BuildSpec(TINY.with_tokens(t), q, max_split_rows=SPLIT), cache)
            for q in QUANTS for t in TOKENS}


def logits_of(artifact, x: np.ndarray, tokens: int) -> np.ndarray:
    """(tokens, vocab) logits of one predict of the reference on ``x`` (tokens, hidden)."""
    program = ReferenceProgram(artifact.package)
    result = program.predict({"hidden_states": pack_tokens(x, tokens)})
    return np.concatenate([unpack_logits(result[t.name], tokens) for t in program.bundle.outputs], axis=1)


@pytest.mark.parametrize("quant", QUANTS)
@pytest.mark.parametrize("tokens", TOKENS)
def test_every_quant_and_token_count_computes_w_at_x_for_t_columns(bundles, quant, tokens):
    artifact = bundles[(quant, tokens)]
    bundle = artifact.open()
    expected_input = (1, 1, HIDDEN) if tokens == 1 else (1, HIDDEN, 1, tokens)
    assert [(t.name, t.shape, t.dtype) for t in bundle.inputs] == [
        ("hidden_states", expected_input, "FLOAT16")
    ]
    assert all(t.shape == ((1, 1, SPLIT) if tokens == 1 else (1, SPLIT, 1, tokens)) for t in bundle.outputs)
    assert artifact.manifest["tokens"] == tokens
    x = TINY.with_tokens(tokens).inputs()
    assert x.shape == (tokens, HIDDEN)
    got = logits_of(artifact, x, tokens)
    # W as the bundle stores it, decoded independently of the reference's execution path.
    dense = np.concatenate([bundle.weight_of(c).decode() for c in bundle.convs()]).astype(np.float64)
    expected = x.astype(np.float64) @ dense.T
    assert got.shape == (tokens, VOCAB)
    assert np.linalg.norm(got - expected) / np.linalg.norm(expected) < 2e-3  # fp16 output rounding
    # Each column is its own token: the columns are W @ x_t, not one broadcast vector.
    for t in {0, tokens - 1}:
        assert np.allclose(got[t], expected[t], rtol=2e-3, atol=2e-3)
    if tokens > 1:
        assert not np.allclose(got[0], got[-1])
    # Quantized: close to the source weights, not equal.
    source = x.astype(np.float64) @ TINY.weights.read_rows(0, VOCAB).astype(np.float64).T
    assert np.linalg.norm(got - source) / np.linalg.norm(source) < (2e-3 if quant == "fp16" else 0.2)


@pytest.mark.parametrize("quant", QUANTS)
def test_weight_bin_is_byte_identical_across_t(bundles, quant):
    files = {t: next(bundles[(quant, t)].package.rglob("weight.bin")).read_bytes() for t in TOKENS}
    assert len({len(b) for b in files.values()}) == 1
    assert all(files[t] == files[1] for t in TOKENS)
    assert len({bundles[(quant, t)].weight_sha256 for t in TOKENS}) == 1
    assert len({bundles[(quant, t)].weight_bytes for t in TOKENS}) == 1
    assert len({bundles[(quant, t)].manifest["key"] for t in TOKENS}) == len(TOKENS)  # distinct programs


def test_token_batched_program_has_no_transposes_and_t1_keeps_the_published_ops(bundles):
    one, many = bundles[("fp16", 1)].open(), bundles[("fp16", 64)].open()
    assert one.op_types().count("transpose") == 1 + VOCAB // SPLIT  # input + one per output
    assert many.op_types().count("transpose") == 0 and many.op_types().count("squeeze") == 0
    assert many.op_types().count("conv") == VOCAB // SPLIT


@pytest.mark.parametrize("quant", QUANTS)
def test_expected_weight_bytes_match_the_built_program(bundles, quant):
    spec = BuildSpec(TINY.with_tokens(2), quant, max_split_rows=SPLIT)
    assert spec.expected_weight_bytes() == bundles[(quant, 2)].weight_bytes


def test_published_heads_expected_bytes_without_building():
    assert BuildSpec.for_workload(resolve_workload("llama_lm_head").with_tokens(64)).expected_weight_bytes() \
        == 1_050_673_152
    lut6 = BuildSpec.for_workload(resolve_workload("llama_lm_head_lut6").with_tokens(64))
    assert lut6.expected_weight_bytes() == 396_054_528


def test_t1_keeps_the_published_fingerprints_and_build_key():
    # The fingerprints every published and stored record carries (computed before tokens existed).
    assert resolve_workload("llama_lm_head").fingerprint == \
        "c1a4509a8cf79d7142e8d5b5476d1560dff673d17999c8a10415a2d32ad91981"
    assert resolve_workload("llama_lm_head_lut6").fingerprint == \
        "a4394a06bf043be9727be6f35834780e091f0d44a4733f6a4edddf8cacbb4886"
    assert "tokens" not in TINY.description() and "tokens" not in BuildSpec(TINY).description()
    assert TINY.with_tokens(4).fingerprint != TINY.fingerprint
    assert TINY.with_tokens(4).description()["tokens"] == 4
    assert BuildSpec(TINY.with_tokens(4)).key != BuildSpec(TINY).key
    assert BuildSpec(TINY.with_tokens(4)).bundle_name() == "tiny_tokens_fp16_t4.mlpackage"


def test_record_carries_tokens_and_old_ids_stay_valid():
    info = WorkloadInfo.of(TINY.with_tokens(8), 1000)
    assert info.tokens == 8
    assert WorkloadInfo.of(TINY, 1000).tokens == 1


def test_records_made_before_the_tokens_field_keep_their_id(tmp_path):
    from anebench.results.validate import plausibility_problems

    record = measure_workload(NumpyEngine(), "cpu", Workload("tiny_np", 64, 256, "fp32"),
                              RunOptions(runs=3))
    body = json.loads(record.model_dump_json(by_alias=True))
    del body["workload"]["tokens"]  # as a record written before the field existed
    old = ResultRecord.model_validate(body)
    assert old.id == record.id and not plausibility_problems(old)
    changed = record.model_copy(update={"workload": record.workload.model_copy(update={"tokens": 2})})
    assert changed.content_id() != record.id


def ReferenceModel(package) -> FakeMLModel:  # noqa: N802 - the former class
    """MLModel as coremltools' binding behaves (tests/fake_coreml.py), computing the bundle's program."""
    return FakeMLModel(package)


@pytest.mark.parametrize("quant", ["fp16", "lut6"])
def test_engine_feeds_t_tokens_and_joins_k_predicts(cache, quant):
    workload = TINY.with_tokens(4).with_batch(2)  # 2 predicts per call, 4 tokens each
    artifact = build_or_reuse(BuildSpec.for_workload(workload, quant, max_split_rows=SPLIT), cache)
    prepared = CoreMLPrepared(workload, "ane", artifact, ReferenceModel(artifact.package))
    prepared.call()
    assert prepared.output().shape == (8, VOCAB)
    assert check_output(prepared).passed
    assert prepared.weight_bytes == 2 * artifact.weight_bytes  # two predicts; the tokens share one read
    assert prepared.details["tokens"] == 4
    feeds = prepared._feeds
    assert [f["hidden_states"].shape for f in feeds] == [(1, HIDDEN, 1, 4)] * 2
    x = workload.inputs()
    assert np.array_equal(feeds[1]["hidden_states"][0, :, 0, :].T.astype(np.float32), x[4:8])


def test_reference_refuses_a_wrong_input_shape(bundles):
    program = ReferenceProgram(bundles[("fp16", 2)].package)
    with pytest.raises(BundleError, match=r"takes FLOAT16 \[1, 64, 1, 2\]"):
        program.predict({"hidden_states": np.zeros((1, 1, HIDDEN), dtype=np.float16)})


def test_matmul_engines_refuse_tokens():
    with pytest.raises(UserError, match="takes 4 tokens per call"):
        measure_workload(
            NumpyEngine(), "cpu", Workload("tiny_np", 64, 256, "fp32", tokens=4), RunOptions(runs=3)
        )


def test_build_cli_tokens(tmp_path, capsys):
    code, out, err = run_cli(
        capsys, "build", "lm_head:64x1024", "--tokens", "16", "--cache-dir", str(tmp_path), "--json"
    )
    assert code == 0, err
    manifest = json.loads(out)
    assert manifest["tokens"] == 16 and manifest["inputs"][0]["shape"] == [1, 64, 1, 16]
    assert manifest["package"].endswith("_t16.mlpackage") and "tokens per predict" in err
    code, out, err = run_cli(capsys, "build", "lm_head:64x1024", "--cache-dir", str(tmp_path), "--json")
    one = json.loads(out)
    assert one["weight_sha256"] == manifest["weight_sha256"] and one["inputs"][0]["shape"] == [1, 1, 64]
    base = resolve_workload("lm_head:64x1024")
    assert lookup(BuildSpec.for_workload(base.with_tokens(16)), tmp_path) is not None
    assert lookup(BuildSpec.for_workload(base.with_tokens(8)), tmp_path) is None
