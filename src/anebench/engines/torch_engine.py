"""torch: CPU, CUDA (timed with CUDA events as well as the wall clock) and MPS on a Mac.

On CUDA every call, and the events that time it, run under the weights' device: a device guard and that
device's current stream. Without them the events of a ``cuda:1`` call land on ``cuda:0`` (the current
device), the end event's synchronise returns at once, and each sample times only the queueing of the work.
The torch module is injectable (``TorchEngine(torch_module=...)``) so CPU tests can prove this with a fake
multi-device module.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..workloads import Workload
from .base import Availability, DensePrepared, DtypeChoice, Engine, Prepared, upcast_when_compute_bound

_TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
GRAPH_WARMUP_CALLS = 3  # torch's CUDA-graph recipe: warm up on a side stream before capture


def _torch() -> Any:
    import torch

    return torch


def cuda_index(torch: Any, device: str) -> int:
    """The CUDA ordinal of ``device`` ("cuda:1" -> 1; bare "cuda" is the current device)."""
    _, _, index = device.partition(":")
    return int(index) if index else int(torch.cuda.current_device())


class TorchPrepared(DensePrepared):
    def __init__(self, workload: Workload, device: str, choice: DtypeChoice, torch: Any = None):
        super().__init__(workload, device, choice)
        torch = torch or _torch()
        self._torch = torch
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
        self._graph: Any = None
        if self._cuda:
            self._index = cuda_index(torch, device)
            # A stream of its own: copies on one GPU (threads of one process) never share the default
            # stream, so each copy's events time its own work; it waits for the weights' fill first.
            self._stream = torch.cuda.Stream(self._index)
            self._stream.wait_stream(torch.cuda.current_stream(self._index))
            self._start = torch.cuda.Event(enable_timing=True)
            self._end = torch.cuda.Event(enable_timing=True)
            self.device_time_note = "CUDA events around each call"  # on the weights' device's current stream
            self.details.update(cuda_details(torch, self._index))
        self._last_device_s: float | None = None
        self.details["torch_threads"] = torch.get_num_threads()

    def call(self) -> None:
        torch = self._torch
        if self._cuda:
            with torch.cuda.device(self._index), torch.cuda.stream(self._stream):
                self._start.record(self._stream)
                self._matvec(torch)
                self._end.record(self._stream)
                self._end.synchronize()
            self._last_device_s = self._start.elapsed_time(self._end) / 1e3
        else:
            self._matvec(torch)
            if self._mps:
                torch.mps.synchronize()

    def _matvec(self, torch: Any) -> None:
        if self.workload.batch == 1:
            torch.mv(self.weights, self._x, out=self._y)
        else:
            torch.matmul(self._x, self.weights.T, out=self._y)

    def device_seconds(self) -> float | None:
        return self._last_device_s

    def stream_seconds(self, n: int, graph: bool = False) -> float | None:
        """Device seconds per call of ``n`` back-to-back calls between one event pair (CUDA only).

        With ``graph``, one call captured as a CUDA graph is replayed ``n`` times, so host dispatch is
        one graph launch per call. None where the device has no events or graphs are unsupported.
        """
        if not self._cuda or n < 1:
            return None
        torch = self._torch
        with torch.cuda.device(self._index):
            stream = torch.cuda.current_stream(self._index)
            step = self._matvec_step(torch) if not graph else self._graph_step(torch, stream)
            if step is None:
                return None
            self._start.record(stream)
            for _ in range(n):
                step()
            self._end.record(stream)
            self._end.synchronize()
        return self._start.elapsed_time(self._end) / 1e3 / n

    def _matvec_step(self, torch: Any):
        return lambda: self._matvec(torch)

    def _graph_step(self, torch: Any, stream: Any):
        if self._graph is None:
            if not hasattr(torch.cuda, "CUDAGraph"):
                self.details["cuda_graph"] = "unsupported by this torch"
                return None
            try:
                side = torch.cuda.Stream(self._index)
                side.wait_stream(stream)
                with torch.cuda.stream(side):
                    for _ in range(GRAPH_WARMUP_CALLS):
                        self._matvec(torch)
                stream.wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    self._matvec(torch)
            except RuntimeError as exc:  # capture refused (e.g. an op that cannot be captured)
                self.details["cuda_graph"] = f"capture failed: {exc}"[:200]
                return None
            self._graph = graph
            self.details["cuda_graph"] = "one call captured, replayed back to back"
        return self._graph.replay

    def host_logits(self) -> np.ndarray:
        return self._y.float().cpu().numpy()

    def close(self) -> None:
        super().close()
        self._graph = None
        if self._cuda:
            self._torch.cuda.empty_cache()


def cuda_details(torch: Any, index: int) -> dict[str, str | int | float | bool | None]:
    """The GPU's name and UUID (to find it in NVML) and the CUDA stack torch runs on."""
    props = torch.cuda.get_device_properties(index)
    found: dict[str, str | int | float | bool | None] = {
        "gpu": torch.cuda.get_device_name(index),
        "gpu_uuid": str(props.uuid) if getattr(props, "uuid", None) is not None else None,
        "cuda_runtime": getattr(torch.version, "cuda", None),
        "cublas": cublas_version(),
    }
    cudnn = getattr(torch.backends, "cudnn", None)
    if cudnn is not None and cudnn.is_available():
        found["cudnn"] = cudnn.version()
    return found


def cublas_version() -> str | None:
    """cuBLAS as installed beside torch (the nvidia-cublas wheel); None where it is not a wheel."""
    from importlib import metadata

    for dist in ("nvidia-cublas-cu13", "nvidia-cublas-cu12", "nvidia-cublas-cu11", "nvidia-cublas"):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return None


@dataclass
class TorchEngine(Engine):
    runs_decode: ClassVar[bool] = True
    torch_module: Any = field(default=None, repr=False, compare=False)  # None: import torch

    def __post_init__(self) -> None:
        self.name = "torch"

    def _t(self) -> Any:
        return self.torch_module or _torch()

    thread_control: ClassVar[str | None] = "torch.set_num_threads"

    @contextmanager
    def thread_limit(self, threads: int) -> Iterator[bool]:
        torch = self._t()
        before = torch.get_num_threads()
        torch.set_num_threads(threads)
        try:
            yield True
        finally:
            torch.set_num_threads(before)

    def available(self) -> Availability:
        if self.torch_module is None and importlib.util.find_spec("torch") is None:
            return Availability(False, "torch is not installed (pip install 'anebench[torch]')")
        return Availability(True)

    def devices(self) -> list[str]:
        if not self.available():
            return []
        torch = self._t()
        found = [f"cuda:{i}" for i in range(torch.cuda.device_count())] if torch.cuda.is_available() else []
        if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
            found.append("mps")
        return found + ["cpu"]

    def version(self) -> str:
        return str(self._t().__version__)

    def cache_bytes(self, device: str) -> int | None:
        """On CUDA the 4x rule must use the GPU's L2, not the host CPU's last-level cache."""
        if device.startswith("cuda"):
            return int(self._t().cuda.get_device_properties(device).L2_cache_size) or None
        return super().cache_bytes(device)

    def free_memory(self, device: str) -> int | None:
        """Free device memory for CUDA (the weights live there); None: host memory decides."""
        if device.startswith("cuda"):
            free, _total = self._t().cuda.mem_get_info(device)
            return int(free)
        return None

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        if device == "cpu":
            return upcast_when_compute_bound(workload, "torch's 16-bit CPU matvec is compute-bound")
        return DtypeChoice(workload.dtype)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        return TorchPrepared(workload, device, self.dtype_for(workload, device), self.torch_module)
