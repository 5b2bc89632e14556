"""Checkpoint workloads: which tensor is chosen, the exact bytes, bf16, and a stable fingerprint."""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import shutil
import socket

import numpy as np
import pytest
from safetensors import safe_open

from anebench.errors import UserError
from anebench.util import hashing
from anebench.workloads import resolve_workload
from anebench.workloads.checkpoints import checkpoint_workload, tensor_hash
from checkpoint_builders import (
    HIDDEN,
    VOCAB,
    bf16_model,
    hub_snapshot,
    sharded_model,
    single_file_model,
    weights,
)


@pytest.fixture(autouse=True)
def _private_hash_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "anebench-cache"))


def stored_array(path, name):
    with safe_open(str(path), "numpy") as handle:
        return handle.get_tensor(name)


def expected_fingerprint(raw: bytes, shape, dtype: str) -> str:
    """The documented rule: sha256 of the tensor bytes plus shape and dtype, in the workload spec."""
    description = {
        "kind": "lm_head", "shape": list(shape), "dtype": dtype, "batch": 1, "quant": None,
        "weights": {"source": "checkpoint", "format": "safetensors", "dtype": dtype, "shape": list(shape),
                    "tensor_sha256": hashlib.sha256(raw).hexdigest()},
    }
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


# --- which tensor -----------------------------------------------------------------------------------


def test_untied_model_measures_lm_head_with_its_stored_bytes(tmp_path):
    model = single_file_model(tmp_path / "tiny-llama")
    workload = resolve_workload(f"hf:{model}")
    expected = stored_array(model / "model.safetensors", "lm_head.weight")
    assert workload.name == "hf:tiny-llama:lm_head.weight"
    assert (workload.vocab, workload.hidden, workload.dtype) == (VOCAB, HIDDEN, "fp16")
    assert workload.weight_bytes == expected.nbytes == VOCAB * HIDDEN * 2
    rows = workload.weights.read_rows(0, VOCAB)
    assert rows.dtype == np.float16 and rows.tobytes() == expected.tobytes()
    assert "output projection" in workload.note and "lm_head.weight" in workload.note
    assert workload.weights.description()["source"] == "checkpoint"


def test_tied_config_chooses_the_input_embedding_even_when_lm_head_is_stored(tmp_path):
    model = single_file_model(tmp_path / "m", tie_word_embeddings=True)
    workload = checkpoint_workload(f"hf:{model}")
    assert workload.weights.provenance()["tensor"] == "model.embed_tokens.weight"
    assert "tie_word_embeddings" in workload.weights.provenance()["chosen_because"]


@pytest.mark.parametrize("embedding", ["transformer.wte.weight", "bert.embeddings.word_embeddings.weight",
                                       "model.embed_tokens.weight"])
def test_without_lm_head_the_embedding_is_chosen_and_why_is_said(tmp_path, embedding):
    tensors = {embedding: weights(), "bert.embeddings.position_embeddings.weight": weights(64, HIDDEN),
               "ln_f.weight": np.ones(HIDDEN, np.float16)}
    model = single_file_model(tmp_path / "m", tensors, tie_word_embeddings=None)
    workload = checkpoint_workload(f"hf:{model}")
    assert workload.name.endswith(":" + embedding)
    assert "no output projection" in workload.note


def test_tie_flag_in_text_config_of_a_multimodal_model(tmp_path):
    model = single_file_model(tmp_path / "m")
    (model / "config.json").write_text(json.dumps({"text_config": {"tie_word_embeddings": True}}))
    assert checkpoint_workload(f"hf:{model}").name.endswith(":model.embed_tokens.weight")


def test_named_tensor_is_used_as_given(tmp_path):
    model = single_file_model(tmp_path / "m")
    workload = checkpoint_workload(f"hf:{model}:model.embed_tokens.weight")
    assert workload.weights.provenance()["chosen_because"] == "named in the workload spec"
    expected = stored_array(model / "model.safetensors", "model.embed_tokens.weight")
    assert workload.weights.read_rows(0, VOCAB).tobytes() == expected.tobytes()


def test_sharded_model_finds_lm_head_in_its_shard(tmp_path):
    head = weights(dtype=np.float32, seed=9)
    model = sharded_model(
        tmp_path / "sharded",
        [{"model.embed_tokens.weight": weights(dtype=np.float32)},
         {"model.norm.weight": np.ones(HIDDEN, np.float32), "lm_head.weight": head}],
    )
    workload = checkpoint_workload(f"hf:{model}")
    assert workload.dtype == "fp32" and workload.weight_bytes == head.nbytes
    assert workload.weights.provenance()["file"].endswith("model-00002-of-00002.safetensors")
    assert "sharded with index (2 shards)" in workload.note
    np.testing.assert_array_equal(workload.weights.read_rows(0, VOCAB), head)


def test_a_single_safetensors_file_can_be_given_directly(tmp_path):
    model = single_file_model(tmp_path / "m")
    workload = checkpoint_workload(f"hf:{model / 'model.safetensors'}")
    assert workload.name == "hf:m:lm_head.weight"


# --- bytes and dtypes -------------------------------------------------------------------------------


def test_bf16_rows_are_exact_float32_of_the_stored_values(tmp_path):
    import torch

    model, embedding = bf16_model(tmp_path / "bf16")
    workload = checkpoint_workload(f"hf:{model}")
    assert workload.dtype == "bf16" and workload.weight_bytes == VOCAB * HIDDEN * 2
    assert "exact float32" in workload.note
    for start, stop in [(0, VOCAB), (7, 300), (VOCAB - 1, VOCAB), (10, 10)]:
        rows = workload.weights.read_rows(start, stop)
        assert rows.dtype == np.float32 and rows.shape == (stop - start, HIDDEN)
        np.testing.assert_array_equal(rows, embedding[start:stop].float().numpy())
        # The low 16 bits are zero: the values are bf16 values, converted without rounding.
        assert not np.any(rows.view(np.uint32) & 0xFFFF)
    raw = embedding.view(torch.int16).numpy().tobytes()
    assert workload.weights.description()["tensor_sha256"] == hashlib.sha256(raw).hexdigest()


@pytest.mark.parametrize("start, stop", [(0, 1), (1, 256), (256, 515), (100, 100), (514, 515)])
def test_read_rows_returns_any_row_range_mapped_from_the_file(tmp_path, start, stop):
    model = single_file_model(tmp_path / "m")
    expected = stored_array(model / "model.safetensors", "lm_head.weight")
    rows = checkpoint_workload(f"hf:{model}").weights.read_rows(start, stop)
    assert rows.tobytes() == expected[start:stop].tobytes()
    assert not rows.flags.writeable  # a view of the read-only mapping, not a copy


def test_read_rows_outside_the_tensor_is_refused(tmp_path):
    weights_source = checkpoint_workload(f"hf:{single_file_model(tmp_path / 'm')}").weights
    with pytest.raises(ValueError):
        weights_source.read_rows(0, VOCAB + 1)
    with pytest.raises(ValueError):
        weights_source.read_rows(5, 4)


def test_fill_rows_gives_engines_the_real_weights_in_their_dtype(tmp_path):
    model = single_file_model(tmp_path / "m")
    workload = checkpoint_workload(f"hf:{model}")
    out = np.empty(workload.shape, np.float32)
    workload.fill_rows(out)
    expected = stored_array(model / "model.safetensors", "lm_head.weight").astype(np.float32)
    np.testing.assert_array_equal(out, expected)


def test_weights_pickle_without_their_data_and_map_again(tmp_path):
    source = checkpoint_workload(f"hf:{single_file_model(tmp_path / 'm')}").weights
    source.read_rows(0, 1)  # maps the file
    blob = pickle.dumps(source)
    assert len(blob) < VOCAB * HIDDEN  # not a copy of the tensor
    assert pickle.loads(blob).read_rows(3, 9).tobytes() == source.read_rows(3, 9).tobytes()


# --- fingerprint ------------------------------------------------------------------------------------


def test_fingerprint_is_the_tensor_sha256_plus_shape_and_dtype(tmp_path):
    model = single_file_model(tmp_path / "m")
    raw = stored_array(model / "model.safetensors", "lm_head.weight").tobytes()
    workload = checkpoint_workload(f"hf:{model}")
    assert workload.fingerprint == expected_fingerprint(raw, (VOCAB, HIDDEN), "fp16")


def test_fingerprint_is_the_same_between_runs_and_places_and_changes_with_the_bytes(tmp_path):
    first = single_file_model(tmp_path / "a")
    moved = tmp_path / "elsewhere" / "renamed"
    shutil.copytree(first, moved)
    fingerprints = {
        checkpoint_workload(f"hf:{first}", use_hash_cache=False).fingerprint,
        checkpoint_workload(f"hf:{first}").fingerprint,
        checkpoint_workload(f"hf:{first}").fingerprint,  # from the hash cache
        checkpoint_workload(f"hf:{moved}").fingerprint,
    }
    assert len(fingerprints) == 1
    changed = weights(seed=2)
    changed[100, 7] += np.float16(0.5)
    other = single_file_model(tmp_path / "b", {"lm_head.weight": changed})
    assert checkpoint_workload(f"hf:{other}").fingerprint not in fingerprints


def test_hash_cache_is_reused_and_invalidated_when_the_file_changes(tmp_path, monkeypatch):
    model = single_file_model(tmp_path / "m")
    reference = checkpoint_workload(f"hf:{model}").weights.sha256
    calls = []
    real_stream = tensor_hash.stream_sha256
    monkeypatch.setattr(tensor_hash, "stream_sha256", lambda *a: calls.append(a) or real_stream(*a))
    assert checkpoint_workload(f"hf:{model}").weights.sha256 == reference and calls == []
    file = model / "model.safetensors"
    stat = file.stat()
    os.utime(file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
    assert checkpoint_workload(f"hf:{model}").weights.sha256 == reference and len(calls) == 1
    for entry in tensor_hash.cache_dir().iterdir():  # a damaged cache entry is re-hashed, not trusted
        entry.write_text("{not json")
    assert checkpoint_workload(f"hf:{model}").weights.sha256 == reference and len(calls) == 2


def test_streamed_hash_crosses_chunk_boundaries(tmp_path, monkeypatch):
    monkeypatch.setattr(hashing, "CHUNK_BYTES", 1000)  # many chunks, the last one partial
    model = single_file_model(tmp_path / "m")
    raw = stored_array(model / "model.safetensors", "lm_head.weight").tobytes()
    source = checkpoint_workload(f"hf:{model}", use_hash_cache=False).weights
    assert source.sha256 == hashlib.sha256(raw).hexdigest()


# --- the Hugging Face cache -------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("checkpoint lookup tried to open a network socket")

    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize("variable, hub_subdir", [("HF_HUB_CACHE", ""), ("HF_HOME", "hub"),
                                                   ("HOME", ".cache/huggingface/hub")])
def test_org_name_is_found_in_the_local_hub_cache(tmp_path, monkeypatch, no_network, variable, hub_subdir):
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    root = tmp_path / "root"
    monkeypatch.setenv(variable, str(root))
    snapshot = hub_snapshot(root / hub_subdir, "acme/tiny-lm")
    workload = resolve_workload("hf:acme/tiny-lm")
    assert workload.name == "hf:acme/tiny-lm:lm_head.weight"
    provenance = workload.weights.provenance()
    assert provenance["revision"] == snapshot.name and provenance["file"].startswith(str(snapshot))


def test_refs_main_picks_the_snapshot_among_several(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    hub_snapshot(tmp_path, "acme/tiny-lm", revision="a" * 40, set_main=False)
    hub_snapshot(tmp_path, "acme/tiny-lm", revision="b" * 40)
    assert checkpoint_workload("hf:acme/tiny-lm").weights.revision == "b" * 40


def test_a_model_missing_from_the_cache_says_how_to_download_it(tmp_path, monkeypatch, no_network):
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(UserError) as info:
        checkpoint_workload("hf:acme/absent:lm_head.weight")
    message = str(info.value)
    assert "acme/absent" in message and "huggingface-cli download acme/absent" in message
    assert str(tmp_path) in message
