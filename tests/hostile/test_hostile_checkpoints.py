"""Hostile checkpoints and saved files: one line naming the checkpoint's fault, never the engine's."""

from __future__ import annotations

import json
import os
import struct
import time
from pathlib import Path

import numpy as np
import pytest

from anebench.errors import UserError
from checkpoint_builders import hub_snapshot, single_file_model, weights
from clitools import run_cli
from conftest import one_line_error


def raw_safetensors(path: Path, header: dict, data: bytes, pad_to: int = 8) -> Path:
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % pad_to) if pad_to else b""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def test_a_shape_of_booleans_is_a_corrupt_header(tmp_path, capsys):
    model = tmp_path / "m"
    raw_safetensors(
        model / "model.safetensors",
        {"lm_head.weight": {"dtype": "F16", "shape": [True, 64], "data_offsets": [0, 128]}},
        b"\0" * 128,
    )
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}", "--runs", "5")
    assert code == 2
    one_line_error(err, "corrupt safetensors header", "is not a list of sizes")


def test_a_deeply_nested_header_and_config_are_refused(tmp_path, capsys):
    model = tmp_path / "m"
    path = model / "model.safetensors"
    path.parent.mkdir(parents=True)
    nested = ("[" * 5000 + "]" * 5000).encode()
    path.write_bytes(struct.pack("<Q", len(nested)) + nested)
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}", "--runs", "5")
    assert code == 2
    one_line_error(err, "nested 5000 levels")
    other = single_file_model(tmp_path / "m2")
    (other / "config.json").write_text("[" * 5000 + "]" * 5000)
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{other}", "--runs", "5")
    assert code == 2
    one_line_error(err, "config.json", "nested")


def test_misaligned_weights_are_the_checkpoints_fault(tmp_path, capsys):
    rows = weights(64, 32, np.float32)
    # One F16 scalar first, so the F32 tensor starts 2 bytes in: not aligned to its 4-byte elements.
    header = {"pad": {"dtype": "F16", "shape": [1], "data_offsets": [0, 2]},
              "lm_head.weight": {"dtype": "F32", "shape": [64, 32], "data_offsets": [2, 2 + rows.nbytes]}}
    model = tmp_path / "m"
    raw_safetensors(model / "model.safetensors", header, b"\0\0" + rows.tobytes())
    code, _, err = run_cli(
        capsys, "run", "--engine", "numpy", "-w", f"hf:{model}:lm_head.weight", "--runs", "5"
    )
    assert code == 2
    one_line_error(err, "not aligned", "checkpoint is malformed")


def test_nan_weights_are_the_checkpoints_fault_not_the_engines(tmp_path, capsys):
    bad = weights(256, 64, np.float32)
    bad[3, 5] = np.nan
    model = single_file_model(tmp_path / "m", {"lm_head.weight": bad})
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}", "--runs", "5")
    assert code == 2
    line = one_line_error(err, "NaN or infinite", "the checkpoint is broken")
    assert "did not compute" not in line


def test_a_checkpoint_truncated_under_the_tool_is_an_error_not_sigbus(tmp_path):
    from anebench.workloads.checkpoints import checkpoint_workload

    model = single_file_model(tmp_path / "m", {"lm_head.weight": weights(512, 64)})
    workload = checkpoint_workload(f"hf:{model}", use_hash_cache=False)
    workload.weights.read_rows(0, 8)
    file = model / "model.safetensors"
    os.truncate(file, file.stat().st_size // 2)
    with pytest.raises(UserError, match="shrank"):
        workload.weights.read_rows(400, 512)


def test_a_checkpoint_too_large_for_memory_is_refused_before_hashing(tmp_path, capsys, monkeypatch):
    from anebench.system.host import Host
    from anebench.workloads.checkpoints import tensor_hash

    model = single_file_model(tmp_path / "m", {"lm_head.weight": weights(512, 64)})
    hashed = []
    monkeypatch.setattr(tensor_hash, "stream_sha256", lambda *a: hashed.append(a) or "0" * 64)
    monkeypatch.setattr(Host, "available_memory_bytes", lambda self: 1000)  # the CLI's system host
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}", "--runs", "5")
    assert code == 2
    one_line_error(err, "is free")
    assert hashed == []


def test_the_tensor_hash_cache_sees_bytes_changed_with_the_mtime_kept(tmp_path, monkeypatch):
    from anebench.workloads.checkpoints import checkpoint_workload

    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache"))
    model = single_file_model(tmp_path / "m", {"lm_head.weight": weights(64, 32)})
    file = model / "model.safetensors"
    first = checkpoint_workload(f"hf:{model}").weights.sha256
    info = file.stat()
    data = bytearray(file.read_bytes())
    data[-1] ^= 0xFF  # same size
    with open(file, "r+b") as handle:  # same inode
        handle.write(data)
    os.utime(file, ns=(info.st_atime_ns, info.st_mtime_ns))  # same mtime
    assert file.stat().st_mtime_ns == info.st_mtime_ns
    second = checkpoint_workload(f"hf:{model}").weights.sha256
    assert second != first


@pytest.mark.parametrize("ref", ["../../../../etc", "/etc", "..", "main/../../x"])
def test_refs_main_is_confined_to_the_cache(tmp_path, capsys, monkeypatch, ref):
    cache = tmp_path / "hub"
    hub_snapshot(cache, "org/model")
    (cache / "models--org--model" / "refs" / "main").write_text(ref)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", "hf:org/model", "--runs", "5")
    assert code == 2
    one_line_error(err, "refs/main")


@pytest.mark.parametrize(
    "sweep",
    [
        {"fit": 1},
        {"fit": {}, "overhead_us": "x", "bandwidth_gbps": 1},
        ["fit"],
        {"fit": 1, "overhead_us": 1e308 * 10},
        {"fit": {}, "overhead_us": 1.0, "bandwidth_gbps": 2.0, "overhead_se_us": "nan"},
    ],
)
def test_latency_with_a_crafted_sweep_file(tmp_path, capsys, sweep):
    from anebench.results.files import document_json
    from test_store import make_record

    document = json.loads(document_json([make_record(gbps=100, engine="numpy", device="cpu")]))
    document["results"][0]["sweep"] = sweep  # a typed section no anebench writes: only a crafted file has it
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps(document))
    started = time.perf_counter()
    code, _, err = run_cli(capsys, "latency", "--engine", "numpy", "--sweep", str(path), "--runs", "5",
                           "--time-budget", "0.2", "--no-save")
    assert code == 2 and time.perf_counter() - started < 30
    one_line_error(err, "--sweep", "malformed")


def test_latency_sweep_from_a_fifo_or_deep_file(tmp_path, capsys):
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 5000 + "]" * 5000)
    for path, phrase in ((fifo, "FIFO"), (deep, "nested")):
        code, _, err = run_cli(capsys, "latency", "--engine", "numpy", "--sweep", str(path), "--no-save")
        assert code == 2
        one_line_error(err, phrase)
