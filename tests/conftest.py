"""Shared fixtures; tests marked ``macos`` or ``cuda`` skip, with the reason, where they cannot run."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest


def _cuda_available() -> bool:
    if importlib.util.find_spec("torch") is None:
        return False
    import torch

    return torch.cuda.is_available()


PLATFORMS = ("host", "mac")


def pytest_addoption(parser):
    parser.addoption(
        "--platform", choices=PLATFORMS, default=os.environ.get("ANEBENCH_TEST_PLATFORM", "host"),
        help="the platform facts every test sees: 'host' (this machine's) or 'mac' (a native Apple-silicon "
             "Mac on macOS 15.5 with an Apple M4 Pro, stated through the host seams; the native Core ML and "
             "IOReport bindings stay as absent as they are here). Default: $ANEBENCH_TEST_PLATFORM or host")


def pytest_report_header(config):
    if config.getoption("--platform") == "mac":
        return "platform facts: a Mac (macOS 15.5, arm64, native, Apple M4 Pro) through the host seams"
    return None


@pytest.fixture(autouse=True)
def _platform_facts(request, monkeypatch):
    """Under --platform=mac every test sees a Mac's facts; a test that depends on Linux facts states them
    itself (fakehost.pretend_linux_host), which overrides these."""
    if request.config.getoption("--platform") == "mac":
        from fakehost import pretend_mac_host

        pretend_mac_host(monkeypatch)


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
