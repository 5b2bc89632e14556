"""`anebench run --workload hf:...` end to end, and every bad checkpoint: one line, exit 2."""

from __future__ import annotations

import hashlib
import json
import pickle
import struct

import numpy as np
import pytest
from safetensors import safe_open

from anebench.workloads import resolve_workload
from checkpoint_builders import HIDDEN, VOCAB, bf16_model, sharded_model, single_file_model, weights
from clitools import run_cli


@pytest.fixture(autouse=True)
def _private_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "anebench-cache"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "empty-hub"))




def run_numpy(capsys, spec, *extra):
    return run_cli(capsys, "run", "--engine", "numpy", "--workload", spec, "--runs", "5", *extra)


def test_run_on_a_checkpoint_passes_the_output_check_on_the_real_weights(capsys, tmp_path):
    model = single_file_model(tmp_path / "tiny-llama")
    code, stdout, stderr = run_numpy(capsys, f"hf:{model}", "--json")
    assert code == 0, stderr
    (record,) = json.loads(stdout)["results"]  # exactly one JSON document on stdout
    workload = record["workload"]
    assert workload["name"] == "hf:tiny-llama:lm_head.weight"
    assert workload["source"] == "checkpoint"
    assert workload["shape"] == [VOCAB, HIDDEN] and workload["dtype"] == "fp16"
    assert record["method"]["output_check"]["passed"] is True
    assert record["method"]["output_check"]["rows_checked"] == VOCAB
    with safe_open(str(model / "model.safetensors"), "numpy") as handle:
        raw = handle.get_tensor("lm_head.weight").tobytes()
    assert workload["origin"]["tensor_sha256"] == hashlib.sha256(raw).hexdigest()
    assert workload["origin"]["tensor"] == "lm_head.weight"
    assert "output projection" in workload["origin"]["chosen_because"]
    # numpy streams the fp16 tensor as fp32 upcasts: the fingerprint names that variant of the same tensor
    streamed = resolve_workload(f"hf:{model}").streamed_fingerprint(record["engine"]["run_dtype"])
    assert workload["fingerprint"] == streamed
    # numpy streams fp32 and says so; the tensor chosen, and why, is printed on stderr.
    assert (
        record["engine"]["run_dtype"] == "fp32"
        and "fp16 weights streamed as fp32" in record["engine"]["dtype_note"]
    )
    assert "lm_head.weight" in stderr and "chosen because" in stderr


def test_bf16_tied_checkpoint_runs_and_says_what_was_converted(capsys, tmp_path):
    model, _ = bf16_model(tmp_path / "bf16-model")
    code, stdout, stderr = run_numpy(capsys, f"hf:{model}", "--json", "--no-save")
    assert code == 0, stderr
    (record,) = json.loads(stdout)["results"]
    assert record["workload"]["dtype"] == "bf16" and record["workload"]["weight_bytes"] == VOCAB * HIDDEN * 4
    assert record["method"]["output_check"]["passed"] is True
    assert "tie_word_embeddings" in record["workload"]["note"]
    assert "bf16 weights streamed as fp32" in record["engine"]["dtype_note"]


def test_two_runs_record_the_same_fingerprint(capsys, tmp_path):
    model = sharded_model(tmp_path / "sharded", [{"model.embed_tokens.weight": weights(seed=1)},
                                                  {"lm_head.weight": weights(seed=2)}])
    fingerprints = []
    for _ in range(2):
        code, stdout, stderr = run_numpy(capsys, f"hf:{model}", "--json", "--no-save")
        assert code == 0, stderr
        fingerprints.append(json.loads(stdout)["results"][0]["workload"]["fingerprint"])
    assert fingerprints[0] == fingerprints[1]


def test_names_with_colons_print_as_written(capsys, tmp_path):
    # ":m:" in hf:m:lm_head.weight must not become an emoji in the progress, the table or the notes.
    model = single_file_model(tmp_path / "m")
    code, stdout, stderr = run_numpy(capsys, f"hf:{model}", "--no-save")
    assert code == 0, stderr
    assert "hf:m:lm_head.weight: checkpoint m" in stderr  # the chosen-tensor note
    assert "numpy:cpu hf:m:lm_head.weight:" in stderr  # progress and per-record notes
    assert "hf:m:" in stdout  # the results table


@pytest.mark.parametrize("hidden", [576, 1248])  # SmolLM's and just below coremltools' kmeans1d size
def test_build_lut6_kmeans_from_a_small_checkpoint(capsys, tmp_path, monkeypatch, hidden):
    """k-means tables for groups of 8 x hidden < 10,000 values, where coremltools needs scikit-learn."""
    import sys

    from anebench.artifacts import MLProgramBundle
    from anebench.artifacts.quant import kmeans_available

    if not kmeans_available():
        pytest.skip(reason="k-means palettisation needs kmeans1d (anebench[coreml])")
    monkeypatch.setitem(sys.modules, "sklearn", None)  # importing it fails here, installed or not
    head = weights(16, hidden, seed=4)
    model = single_file_model(tmp_path / f"small-{hidden}", {
        "model.embed_tokens.weight": weights(16, hidden, seed=3), "lm_head.weight": head})
    code, stdout, stderr = run_cli(capsys, "build", f"hf:{model}", "--quant", "lut6", "--json")
    assert code == 0, stderr
    document = json.loads(stdout)
    assert document["quant"] == "lut6" and document["lut_mode"] == "kmeans" and document["group_size"] == 8
    bundle = MLProgramBundle(document["bundle"])
    decoded = np.concatenate([bundle.weight_of(conv).decode() for conv in bundle.convs()])
    exact = head.astype(np.float32)
    assert decoded.shape == (16, hidden)
    assert np.abs(decoded - exact).max() < 0.02  # values of sd 0.05, 64 levels per group of 8 rows
    assert np.sqrt(np.mean((decoded - exact) ** 2)) < 0.0015  # a linear table of these weights: 0.0017


# --- bad input: one clear line naming the input, exit 2 ----------------------------------------------


def corrupt_header(directory):
    single_file_model(directory)
    file = directory / "model.safetensors"
    data = bytearray(file.read_bytes())
    data[8:20] = b"#not json at"
    file.write_bytes(bytes(data))
    return file


def truncated_header(directory):
    single_file_model(directory)
    file = directory / "model.safetensors"
    header_len = struct.unpack("<Q", file.read_bytes()[:8])[0]
    file.write_bytes(file.read_bytes()[: 8 + header_len // 2])
    return file


def truncated_data(directory):
    single_file_model(directory)
    file = directory / "model.safetensors"
    file.write_bytes(file.read_bytes()[:-100])
    return file


def tiny_file(directory):
    directory.mkdir()
    (directory / "model.safetensors").write_bytes(b"\x01\x02")
    return directory / "model.safetensors"


def missing_shard(directory):
    sharded_model(directory, [{"model.embed_tokens.weight": weights()}, {"lm_head.weight": weights()}])
    (directory / "model-00002-of-00002.safetensors").unlink()
    return "model-00002-of-00002.safetensors"


def empty_model(directory):
    directory.mkdir()
    (directory / "config.json").write_text("{}")
    return "no safetensors files"


BAD_CHECKPOINTS = {
    "corrupt header": (corrupt_header, "", "corrupt safetensors header"),
    "truncated header": (truncated_header, "", "truncated safetensors header"),
    "truncated data": (truncated_data, "", "truncated safetensors file"),
    "shorter than the length": (tiny_file, "", "truncated safetensors file"),
    "missing shard": (missing_shard, "", "listed in model.safetensors.index.json but missing"),
    "no safetensors": (empty_model, "", "no safetensors files"),
    "not 2-D": (lambda d: single_file_model(d), ":model.norm.weight", "[48], not 2-D [vocab, hidden]"),
    "unknown tensor": (
        lambda d: single_file_model(d),
        ":lm_head.wieght",
        "2-D tensors there: lm_head.weight [515, 48]",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_CHECKPOINTS))
def test_bad_checkpoints_exit_2_with_one_line_naming_the_input(capsys, tmp_path, case):
    build, tensor_suffix, expected = BAD_CHECKPOINTS[case]
    model = tmp_path / "bad-model"
    build(model)
    code, stdout, stderr = run_numpy(capsys, f"hf:{model}{tensor_suffix}")
    assert code == 2
    assert stdout == ""
    (line,) = stderr.strip().splitlines()
    assert str(model) in line and expected in line, line
    assert not list(tmp_path.glob("anebench-run-*.json"))  # nothing half-written


def test_missing_directory_exits_2(capsys, tmp_path):
    code, _, stderr = run_numpy(capsys, f"hf:{tmp_path / 'nowhere'}")
    (line,) = stderr.strip().splitlines()
    assert code == 2 and str(tmp_path / "nowhere") in line and "does not exist" in line


def test_model_not_in_the_hub_cache_exits_2_and_says_how_to_download(capsys):
    code, _, stderr = run_numpy(capsys, "hf:acme/not-downloaded")
    (line,) = stderr.strip().splitlines()
    assert code == 2 and "acme/not-downloaded" in line and "huggingface-cli download" in line


class _Trap:
    """Unpickling this runs code; the checkpoint reader must never unpickle anything."""

    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('UNPICKLED').write_text('ran')",))


def test_pickle_weights_are_explained_not_loaded(capsys, tmp_path):
    model = tmp_path / "pickled"
    model.mkdir()
    (model / "config.json").write_text("{}")
    (model / "pytorch_model.bin").write_bytes(pickle.dumps(_Trap()))
    code, _, stderr = run_numpy(capsys, f"hf:{model}")
    (line,) = stderr.strip().splitlines()
    assert code == 2 and "pytorch_model.bin" in line and "safetensors" in line and str(model) in line
    assert not (tmp_path / "UNPICKLED").exists()


def test_unsupported_tensor_dtype_exits_2(capsys, tmp_path):
    model = single_file_model(tmp_path / "int8", {"lm_head.weight": np.ones((8, 4), np.int8)})
    code, _, stderr = run_numpy(capsys, f"hf:{model}")
    (line,) = stderr.strip().splitlines()
    assert code == 2 and "lm_head.weight" in line and "I8" in line
