"""benchmarks/device_check.sh: a clean "no GPU here" without a GPU; its figures step on a fake GPU record."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from anebench.engines.torch_engine import TorchEngine
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.results.files import save_records
from anebench.workloads import Workload
from fake_torch import FakeTorch

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "device_check.sh"


def run_script(tmp_path: Path, nvidia_smi: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "OUT": str(tmp_path / "out"), "PYTHON": sys.executable, "NVIDIA_SMI": nvidia_smi,
           "CUDA_VISIBLE_DEVICES": ""}  # on a GPU machine too: torch then sees no device
    return subprocess.run(["bash", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120,
                          check=False)


def test_without_a_gpu_the_script_reports_the_machine_and_says_no_gpu_here(tmp_path):
    done = run_script(tmp_path, str(tmp_path / "no-nvidia-smi"))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1].startswith("no GPU here: nvidia-smi lists no GPU and torch sees no CUDA device")
    assert any(line.startswith("python: ") for line in lines)
    assert any(line.startswith("torch") for line in lines)
    assert (tmp_path / "out" / "summary.txt").read_text().splitlines()[-1] == lines[-1]


def test_a_gpu_without_cuda_torch_is_said_clearly(tmp_path):
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA H200 (UUID: GPU-00000000-0000-4000-8000-000000000000)'\n")
    smi.chmod(0o755)
    done = run_script(tmp_path, str(smi))
    assert done.returncode == 0, done.stderr
    assert "GPUs listed by nvidia-smi: 1" in done.stdout
    assert "torch with CUDA is missing: 1 GPU(s) listed by nvidia-smi" in done.stdout


def test_the_figures_step_compares_per_call_streaming_ceiling_and_datasheet(tmp_path, monkeypatch):
    fake = FakeTorch(devices=2, bandwidth=4e12)
    workload = Workload("t", hidden=64, vocab=4096, dtype="fp16", seed=3)
    record = measure_workload(TorchEngine(torch_module=fake), "cuda:1", workload,
                              RunOptions(runs=10, clock=fake.clock))
    save_records(tmp_path / "run_cuda1.json", [record])
    ceiling = record.gbps / 0.95
    (tmp_path / "read_ceiling.json").write_text(json.dumps({"cuda:1": {"gbps_median": ceiling}}))
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    import device_figures

    assert device_figures.main(["device_figures", str(tmp_path)]) == 0
    row = json.loads((tmp_path / "figures.json").read_text())[0]
    assert row["device"] == "cuda:1" and row["datasheet_gbps"] == 4800
    assert row["per_call_over_ceiling"] == pytest.approx(0.95)
    assert set(row["streaming_gbps"]) == {"back-to-back", "cuda-graph"}
    assert row["verdicts"][0] == "per-call/ceiling 0.950 (ok)" and row["verdicts"][1].endswith("(ok)")
