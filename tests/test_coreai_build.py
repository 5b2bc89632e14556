"""`anebench build --engine coreai`: real .aimodel assets written by coreai-core here, read back by
coreai-core (its summary), compared byte for byte with the Core ML bundle of the same workload, and run
through coreai-core's own in-package runtime (Linux CPU) against the decoded weights."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import pytest

pytest.importorskip("coreai", reason="coreai-core is not installed (pip install 'anebench[coreai]')")

from anebench.artifacts import BuildSpec, build_or_reuse  # noqa: E402
from anebench.artifacts.coreai import (  # noqa: E402
    PROGRAM_FILE,
    AssetSpec,
    bundle_weights_sha256,
    locate_blobs,
    write_asset,
)
from anebench.artifacts.coreai_cache import build_or_reuse_asset, check_summary, lookup_asset  # noqa: E402
from anebench.artifacts.quant import encode  # noqa: E402
from anebench.errors import UserError  # noqa: E402
from anebench.workloads import resolve_workload  # noqa: E402
from clitools import run_cli  # noqa: E402

HEAD = "lm_head:64x1024"


def asset_outputs(package, inputs: np.ndarray) -> dict[str, np.ndarray]:
    """Run the asset with coreai-core's in-package runtime (AIModelAsset.executable: Linux's CPU)."""
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    async def run():
        async with AIModelAsset.load(package).executable() as model:
            function = model.load_function("main")
            results = await function({"hidden_states": NDArray(inputs)})
            return {name: value.numpy().copy() for name, value in results.items()}

    return asyncio.run(run())


def decoded(workload, quant: str) -> np.ndarray:
    rows = workload.weights.read_rows(0, workload.vocab)
    return encode(lambda lo, hi: rows[lo:hi], workload.vocab, workload.hidden, quant).decode()


@pytest.mark.parametrize("quant", ["fp16", "int8"])
def test_the_asset_holds_the_core_ml_bundles_bytes_with_its_fingerprint(tmp_path, quant):
    workload = resolve_workload(HEAD)
    asset = build_or_reuse_asset(AssetSpec.for_workload(workload, quant, max_split_rows=400), tmp_path)
    bundle = build_or_reuse(BuildSpec.for_workload(workload, quant, max_split_rows=400), tmp_path)
    manifest = asset.manifest
    assert manifest["workload_fingerprint"] == bundle.manifest["workload_fingerprint"] == workload.fingerprint
    assert manifest["weights_sha256"] == bundle_weights_sha256(bundle.open())
    assert asset.weight_bytes == bundle.weight_bytes == AssetSpec(workload, quant).expected_weight_bytes()
    assert manifest["splits"] == bundle.manifest["splits"] == [342, 341, 341]
    outputs = manifest["summary"]["functions"]["main"]["outputs"]
    assert [name for name, _ in outputs] == [o["name"] for o in bundle.manifest["outputs"]]
    stored = manifest["summary"]["storage_types"]
    if quant == "fp16":
        assert stored == {"Float16": 1024 * 64}
        assert manifest["summary"]["operation_distribution"] == {"batch_matmul": 3, "constant": 3}
    else:  # int8 values (and the zero offsets, splats) plus fp16 scales
        assert 1024 * 64 <= stored["Int8"] <= 1024 * 65 and 1024 <= stored["Float16"] <= 2048
        assert manifest["summary"]["operation_distribution"]["blockwise_shift_scale"] == 3


def test_a_different_weight_is_a_different_digest(tmp_path):
    one = build_or_reuse_asset(AssetSpec(resolve_workload(HEAD)), tmp_path)
    other = build_or_reuse_asset(AssetSpec(resolve_workload("lm_head:64x1024:fp32")), tmp_path)
    bundle = build_or_reuse(BuildSpec.for_workload(resolve_workload("lm_head:64x1024:fp32")), tmp_path)
    digest = other.manifest["weights_sha256"]
    assert one.manifest["weights_sha256"] != digest == bundle_weights_sha256(bundle.open())
    assert other.manifest["notes"] == ["fp32 weights converted to fp16 for Core AI (stored as the Core ML "
                                       "bundle's)"]


@pytest.mark.parametrize("quant, tokens", [("fp16", 1), ("fp16", 3), ("int8", 2)])
def test_the_written_asset_computes_w_at_x_in_coreai_cores_own_runtime(tmp_path, quant, tokens):
    workload = resolve_workload(HEAD).with_tokens(tokens)
    asset = build_or_reuse_asset(AssetSpec.for_workload(workload, quant, max_split_rows=400), tmp_path)
    inputs = workload.inputs().astype(np.float16)  # (T, hidden)
    results = asset_outputs(asset.package, np.ascontiguousarray(inputs.T))
    logits = np.concatenate([results[f"logits{i}"] for i in (1, 2, 3)], axis=0)  # (vocab, T)
    assert logits.shape == (1024, tokens) and logits.dtype == np.float16
    expected = decoded(workload, quant).astype(np.float64) @ inputs.T.astype(np.float64)
    error = np.linalg.norm(logits - expected) / np.linalg.norm(expected)
    assert error < 5e-3  # fp16 accumulation; a wrong layout or wrong weights give ~1


def test_lut_quants_are_refused_saying_why():
    workload = resolve_workload(HEAD)
    with pytest.raises(UserError, match="one byte per index"):
        AssetSpec(workload, "lut4")
    with pytest.raises(UserError, match="no 6-bit integer type"):
        AssetSpec.for_workload(resolve_workload("llama_lm_head_lut6"))


def test_the_byte_check_finds_a_changed_weight(tmp_path):
    spec = AssetSpec(resolve_workload(HEAD), max_split_rows=512)
    package = tmp_path / spec.asset_name()
    digests = write_asset(spec, package)
    program = package / PROGRAM_FILE
    offsets = locate_blobs(program, digests)
    assert len(offsets) == 2 and len(set(offsets)) == 2
    data = bytearray(program.read_bytes())
    data[offsets[1] + 1000] ^= 0x01  # one bit of the second split's weights, past the searched prefix
    program.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="weight blob 2 of 2 .* not stored byte for byte"):
        locate_blobs(program, digests)


def test_the_summary_check_refuses_storage_that_is_not_the_weights():
    spec = AssetSpec(resolve_workload(HEAD))
    good = {"storage_types": {"Float16": 65536}, "functions": {"main": {"outputs": [["logits1", "x"]]}}}
    check_summary(spec, good)
    for storage in ({"Float16": 32768}, {"Float16": 65536, "Float32": 4}):  # merged, or re-typed constants
        with pytest.raises(ValueError, match="elements by type"):
            check_summary(spec, {**good, "storage_types": storage})


def test_the_cache_reuses_a_complete_asset_and_rebuilds_a_broken_one(tmp_path):
    spec = AssetSpec(resolve_workload(HEAD))
    assert lookup_asset(spec, tmp_path) is None
    first = build_or_reuse_asset(spec, tmp_path)
    again = build_or_reuse_asset(spec, tmp_path)
    assert not first.reused and again.reused and again.manifest == first.manifest
    assert [p.name for p in tmp_path.iterdir()] == [spec.key]  # no staging folder left
    program = first.package / PROGRAM_FILE
    program.write_bytes(program.read_bytes()[:-10])
    assert lookup_asset(spec, tmp_path) is None
    rebuilt = build_or_reuse_asset(spec, tmp_path)
    assert not rebuilt.reused and rebuilt.manifest["weights_sha256"] == first.manifest["weights_sha256"]


def test_build_engine_coreai_from_the_command_line(capsys, tmp_path):
    cache = str(tmp_path / "cache")
    code, out, err = run_cli(capsys, "build", HEAD, "--engine", "coreai", "--cache-dir", cache,
                             "--out", str(tmp_path / "out"), "--json")
    assert code == 0, err
    document = json.loads(out)
    assert document["reused"] is False and document["summary"]["storage_types"] == {"Float16": 65536}
    assert (tmp_path / "out" / "lm_head_64x1024_fp16.aimodel" / PROGRAM_FILE).is_file()
    assert "stored (asset summary)" in err and "Float16 x 65,536" in err
    code, out, _ = run_cli(capsys, "build", HEAD, "-e", "coreai", "--cache-dir", cache, "--json")
    assert code == 0 and json.loads(out)["reused"] is True


@pytest.mark.parametrize("argv, message", [
    (("--quant", "lut6"), "quant 'lut6' cannot be built as a Core AI asset"),
    (("--repeat", "2"), "--repeat 2: weight sets per predict are a Core ML bundle option"),
])
def test_build_engine_coreai_refuses_in_one_line(capsys, tmp_path, argv, message):
    code, out, err = run_cli(capsys, "build", HEAD, "-e", "coreai", "--cache-dir", str(tmp_path), *argv)
    assert code == 2 and message in err and out == "" and len(err.strip().splitlines()) <= 3
    assert not any(tmp_path.iterdir())


@pytest.mark.slow
def test_a_4096_wide_head_stores_every_fp16_element_as_the_core_ml_bundle(tmp_path):
    workload = resolve_workload("lm_head:4096x16384")
    asset = build_or_reuse_asset(AssetSpec(workload), tmp_path)
    bundle = build_or_reuse(BuildSpec.for_workload(workload), tmp_path)
    assert asset.manifest["summary"]["storage_types"] == {"Float16": 16384 * 4096}
    assert asset.manifest["weights_sha256"] == bundle_weights_sha256(bundle.open())
    assert asset.weight_bytes == bundle.weight_bytes == 16384 * 4096 * 2


def test_a_checkpoint_head_is_built_with_the_core_ml_bundles_bytes(tmp_path):
    from checkpoint_builders import VOCAB, single_file_model, weights

    model = single_file_model(tmp_path / "model")
    workload = resolve_workload(f"hf:{model}")
    asset = build_or_reuse_asset(AssetSpec.for_workload(workload), tmp_path / "cache")
    bundle = build_or_reuse(BuildSpec.for_workload(workload), tmp_path / "cache")
    assert asset.manifest["workload_fingerprint"] == bundle.manifest["workload_fingerprint"]
    assert asset.manifest["weights_sha256"] == bundle_weights_sha256(bundle.open())
    results = asset_outputs(asset.package, np.ascontiguousarray(workload.inputs().astype(np.float16).T))
    expected = weights(seed=2).astype(np.float64) @ workload.inputs()[0].astype(np.float64)
    assert results["logits1"].shape == (VOCAB, 1)
    assert np.linalg.norm(results["logits1"][:, 0] - expected) / np.linalg.norm(expected) < 5e-3


def test_without_coreai_core_build_says_how_to_install_it(capsys, tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "coreai.authoring", None)  # as if not installed
    code, out, err = run_cli(capsys, "build", HEAD, "-e", "coreai", "--cache-dir", str(tmp_path))
    assert code == 2 and out == "" and "coreai-core is not installed" in err and "anebench[coreai]" in err
    assert not any(tmp_path.iterdir())
