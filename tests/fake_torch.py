"""A fake multi-GPU torch for CPU tests of the CUDA path: numpy tensors, one timeline per device.

It models what makes CUDA timing go wrong: work runs on its tensor's device whatever the current device is;
an event is stamped when *its stream* reaches it (``record()`` without a stream uses the current device's);
``synchronize`` waits only for the event's own device. The host clock (``clock``) moves by a dispatch cost
per launch and jumps to the device's time when it synchronises, so wall time and event time behave as on
a GPU. Every launch and event is logged with its device.
"""

from __future__ import annotations

import types
from contextlib import contextmanager

import numpy as np

from anebench.measure.clock import Clock

DISPATCH_S = 20e-6  # host cost of launching one kernel
GRAPH_DISPATCH_S = 2e-6


def _index(device) -> int:
    if isinstance(device, int):
        return device
    _, _, idx = str(device).partition(":")
    return int(idx) if idx else 0


class FakeTensor:
    def __init__(self, array: np.ndarray, device: str, dtype: type):
        self.a, self.device, self.dtype = array, device, dtype

    def __getitem__(self, key):
        return FakeTensor(self.a[key], self.device, self.dtype)

    def copy_(self, other: FakeTensor) -> FakeTensor:
        self.a[...] = np.asarray(other.a, dtype=self.dtype).astype(np.float32)  # rounded to this dtype
        return self

    def numel(self) -> int:
        return self.a.size

    def element_size(self) -> int:
        return np.dtype(self.dtype).itemsize

    def to(self, device=None, dtype=None) -> FakeTensor:
        dtype = dtype or self.dtype
        return FakeTensor(np.asarray(self.a, dtype=dtype).astype(np.float32), device or self.device, dtype)

    def contiguous(self) -> FakeTensor:
        return self

    def float(self) -> FakeTensor:
        pending, self.pending = getattr(self, "pending", None), None
        if pending is not None:  # the last launch into this tensor, computed when read: calls stay cheap
            pending()
        return FakeTensor(self.a, self.device, np.float32)

    def cpu(self) -> FakeTensor:
        return FakeTensor(self.a, "cpu", self.dtype)

    def numpy(self) -> np.ndarray:
        return self.a

    @property
    def T(self) -> FakeTensor:
        return FakeTensor(self.a.T, self.device, self.dtype)


class FakeStream:
    def __init__(self, gpu: FakeTorch, device: int):
        self.gpu, self.device = gpu, device

    def wait_stream(self, other: FakeStream) -> None:
        pass


class FakeEvent:
    def __init__(self, gpu: FakeTorch, enable_timing: bool = False):
        self.gpu, self.t, self.device = gpu, None, None

    def record(self, stream: FakeStream | None = None) -> None:
        gpu = self.gpu
        self.device = stream.device if stream is not None else gpu.current
        gpu.host += 1e-6
        self.t = max(gpu.busy_until[self.device], gpu.host)
        gpu.log.append(("event", self.device, gpu.current))

    def synchronize(self) -> None:
        self.gpu.host = max(self.gpu.host, self.t)

    def elapsed_time(self, end: FakeEvent) -> float:
        return (end.t - self.t) * 1e3


class FakeGraph:
    def __init__(self, gpu: FakeTorch):
        self.gpu, self.ops = gpu, []

    def replay(self) -> None:
        for op in self.ops:
            self.gpu.launch(*op, dispatch_s=GRAPH_DISPATCH_S)


class FakeTorch(types.SimpleNamespace):
    """``FakeTorch(devices=2, bandwidth=3e12)``: pass as ``TorchEngine(torch_module=...)``."""

    def __init__(self, devices: int = 2, bandwidth: float = 3e12, name: str = "NVIDIA H200",
                 l2_bytes: int = 64 * 1024, dispatch_s: float = DISPATCH_S):
        super().__init__()
        self.dispatch_s = dispatch_s
        self.__version__ = "9.9.9+fake"
        self.float32, self.float16, self.bfloat16 = np.float32, np.float16, np.float32
        self.version = types.SimpleNamespace(cuda="12.8")
        self.backends = types.SimpleNamespace(cudnn=types.SimpleNamespace(is_available=lambda: False))
        self.bandwidth, self.host, self.current = bandwidth, 0.0, 0
        self.busy_until = [0.0] * devices
        self.log: list[tuple] = []
        self.capturing: FakeGraph | None = None
        self.uuids = [f"{i:08x}-0000-4000-8000-00000000000{i}" for i in range(devices)]
        props = [types.SimpleNamespace(name=name, uuid=u, L2_cache_size=l2_bytes, total_memory=141 << 30)
                 for u in self.uuids]
        gpu = self

        @contextmanager
        def device_guard(index):
            before, gpu.current = gpu.current, _index(index)
            try:
                yield
            finally:
                gpu.current = before

        @contextmanager
        def use_stream(stream):
            yield

        @contextmanager
        def capture(graph):
            gpu.capturing = graph
            try:
                yield
            finally:
                gpu.capturing = None

        def stream_of(device=None) -> FakeStream:
            return FakeStream(gpu, gpu.current if device is None else _index(device))

        self.cuda = types.SimpleNamespace(
            is_available=lambda: True,
            device_count=lambda: devices,
            current_device=lambda: gpu.current,
            device=device_guard,
            current_stream=stream_of,
            Stream=stream_of,
            stream=use_stream,
            Event=lambda enable_timing=False: FakeEvent(gpu, enable_timing),
            CUDAGraph=lambda: FakeGraph(gpu),
            graph=capture,
            get_device_name=lambda device=None: props[_index(device or 0)].name,
            get_device_properties=lambda device: props[_index(device)],
            mem_get_info=lambda device=None: (100 << 30, 141 << 30),
            empty_cache=lambda: None,
        )

    @property
    def clock(self) -> Clock:
        def now_ns() -> int:
            self.host += 1e-9
            return round(self.host * 1e9)
        return Clock("fake-gpu-host", now_ns)

    def empty(self, shape, dtype, device) -> FakeTensor:
        return FakeTensor(np.zeros(shape, dtype=np.float32), device, dtype)

    def from_numpy(self, array: np.ndarray) -> FakeTensor:
        return FakeTensor(np.asarray(array, dtype=np.float32), "cpu", array.dtype.type)

    def get_num_threads(self) -> int:
        return 1

    def launch(self, device: int, seconds: float, compute, dispatch_s: float | None = None) -> None:
        self.host += self.dispatch_s if dispatch_s is None else dispatch_s
        start = max(self.busy_until[device], self.host)
        self.busy_until[device] = start + seconds
        compute()  # cheap: it only marks its output tensor as pending
        self.log.append(("work", device, self.current))

    def _issue(self, weights: FakeTensor, compute) -> None:
        device = _index(weights.device)
        seconds = weights.numel() * weights.element_size() / self.bandwidth
        if self.capturing is not None:
            self.capturing.ops.append((device, seconds, compute))
            return
        self.launch(device, seconds, compute)

    def mv(self, w: FakeTensor, x: FakeTensor, out: FakeTensor) -> None:
        def compute():
            out.a[...] = w.a @ x.a
        self._issue(w, lambda: setattr(out, "pending", compute))

    def matmul(self, x: FakeTensor, wt: FakeTensor, out: FakeTensor) -> None:
        def compute():
            out.a[...] = x.a @ wt.a
        self._issue(wt, lambda: setattr(out, "pending", compute))
