"""torch: CPU, CUDA (timed with CUDA events as well as the wall clock) and MPS on a Mac."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import numpy as np

from ..workloads import Workload
from .base import Availability, DtypeChoice, Engine, Prepared, upcast_when_compute_bound

_TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _torch():
    import torch

    return torch


class TorchPrepared(Prepared):
    def __init__(self, workload: Workload, device: str, choice: DtypeChoice):
        super().__init__()
        torch = _torch()
        self.workload, self.device = workload, device
        self.run_dtype, self.dtype_note = choice.run_dtype, choice.note
        self.compute_units = device
        dtype = getattr(torch, _TORCH_DTYPES[choice.run_dtype])
        self.weights = torch.empty(workload.shape, dtype=dtype, device=device)
        for lo, hi, rows in workload.row_blocks():
            self.weights[lo:hi].copy_(torch.from_numpy(np.asarray(rows, dtype=np.float32)))
        self.weight_bytes = self.weights.numel() * self.weights.element_size()
        inputs = torch.from_numpy(workload.inputs()).to(device=device, dtype=dtype)
        self._x = inputs[0].contiguous() if workload.batch == 1 else inputs.contiguous()
        out_shape = (workload.vocab,) if workload.batch == 1 else (workload.batch, workload.vocab)
        self._y = torch.empty(out_shape, dtype=dtype, device=device)
        self._cuda = device.startswith("cuda")
        self._mps = device == "mps"
        if self._cuda:
            # A stream of its own: copies on one GPU (threads of one process) never share the default
            # stream, so each copy's events time its own work. Work and events run under the device.
            torch.cuda.synchronize(device)  # the weights were filled on the default stream
            self._stream = torch.cuda.Stream(device=device)
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self.device_time_note = "CUDA events around each call"
            self.details["gpu"] = torch.cuda.get_device_name(device)
        self._last_device_s: float | None = None
        self.details["torch_threads"] = torch.get_num_threads()

    def call(self) -> None:
        torch = _torch()
        if self._cuda:
            with torch.cuda.device(self.device), torch.cuda.stream(self._stream):
                self._start.record(self._stream)
                self._matvec(torch)
                self._end.record(self._stream)
            self._end.synchronize()
            self._last_device_s = self._start.elapsed_time(self._end) / 1e3
        else:
            self._matvec(torch)
            if self._mps:
                torch.mps.synchronize()

    def _matvec(self, torch) -> None:
        if self.workload.batch == 1:
            torch.mv(self.weights, self._x, out=self._y)
        else:
            torch.matmul(self._x, self.weights.T, out=self._y)

    def device_seconds(self) -> float | None:
        return self._last_device_s

    def output(self) -> np.ndarray:
        host = self._y.float().cpu().numpy()
        return host.reshape(self.workload.batch, self.workload.vocab)

    def close(self) -> None:
        self.weights = self._x = self._y = None
        torch = _torch()
        if self._cuda:
            torch.cuda.empty_cache()


class TorchEngine(Engine):
    name = "torch"
    thread_control: ClassVar[str | None] = "torch.set_num_threads"

    @contextmanager
    def thread_limit(self, threads: int) -> Iterator[bool]:
        torch = _torch()
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield True
        finally:
            torch.set_num_threads(before)

    def available(self) -> Availability:
        if importlib.util.find_spec("torch") is None:
            return Availability(False, "torch is not installed (pip install 'anebench[torch]')")
        return Availability(True)

    def devices(self) -> list[str]:
        if not self.available():
            return []
        torch = _torch()
        found = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            found.append("mps")
        return found + ["cpu"]

    def version(self) -> str:
        return _torch().__version__

    def cache_bytes(self, device: str) -> int | None:
        """On CUDA the 4x rule must use the GPU's L2, not the host CPU's last-level cache."""
        if device.startswith("cuda"):
            return int(_torch().cuda.get_device_properties(device).L2_cache_size) or None
        return super().cache_bytes(device)

    def free_memory(self, device: str) -> int | None:
        """Free device memory for CUDA (the weights live there); None: host memory decides."""
        if device.startswith("cuda"):
            free, _total = _torch().cuda.mem_get_info(device)
            return free
        return None

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        if device == "cpu":
            return upcast_when_compute_bound(workload, "torch's 16-bit CPU matvec is compute-bound")
        return DtypeChoice(workload.dtype)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        return TorchPrepared(workload, device, self.dtype_for(workload, device))
