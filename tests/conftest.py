"""Shared fixtures; tests marked ``macos`` or ``cuda`` skip, with the reason, where they cannot run."""

from __future__ import annotations

import importlib.util
import sys

import pytest


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    skip_macos = pytest.mark.skip(reason="needs macOS: Core ML prediction runs only there")
    skip_cuda = pytest.mark.skip(reason="needs an NVIDIA GPU with torch CUDA")
    on_macos = sys.platform == "darwin"
    has_cuda = None
    for item in items:
        if "macos" in item.keywords and not on_macos:
            item.add_marker(skip_macos)
        if "cuda" in item.keywords:
            has_cuda = _cuda_available() if has_cuda is None else has_cuda
            if not has_cuda:
                item.add_marker(skip_cuda)


@pytest.fixture
def small_workload():
    from anebench.workloads import Workload

    return Workload("test_head", hidden=64, vocab=1024, dtype="fp16", seed=7)


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    """Commands that save default result files write into a temporary directory."""
    monkeypatch.chdir(tmp_path)
