"""MLX: Metal GPU on a Mac, CPU everywhere (``mlx[cpu]`` on Linux tests the code path, not bandwidth)."""

from __future__ import annotations

import importlib.util
from typing import ClassVar

import numpy as np

from ..workloads import Workload
from .base import Availability, DensePrepared, DtypeChoice, Engine, Prepared, upcast_when_compute_bound

_MLX_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _mx():
    import mlx.core as mx

    return mx


class MlxPrepared(DensePrepared):
    def __init__(self, workload: Workload, device: str, choice: DtypeChoice):
        super().__init__(workload, device, choice)
        mx = _mx()
        self._stream = mx.gpu if device == "gpu" else mx.cpu
        dtype = getattr(mx, _MLX_DTYPES[choice.run_dtype])
        with mx.stream(self._stream):
            # Filled block by block into one buffer so no second full-size copy is ever held.
            self.weights = mx.zeros(workload.shape, dtype=dtype)
            for lo, hi, rows in workload.row_blocks():
                self.weights[lo:hi] = mx.array(np.asarray(rows, dtype=np.float32)).astype(dtype)
                mx.eval(self.weights)
            inputs = mx.array(workload.inputs()).astype(dtype)
            self._x = inputs[0] if workload.batch == 1 else inputs
            mx.eval(self._x)
        self.weight_bytes = self.weights.nbytes
        self._y = None

    def call(self) -> None:
        mx = _mx()
        if self.workload.batch == 1:
            y = mx.matmul(self.weights, self._x, stream=self._stream)
        else:
            y = mx.matmul(self._x, self.weights.T, stream=self._stream)
        mx.eval(y)
        self._y = y

    def host_logits(self) -> np.ndarray:
        return np.array(self._y.astype(_mx().float32))


class MlxEngine(Engine):
    runs_decode: ClassVar[bool] = True
    name = "mlx"
    thread_safe: ClassVar[bool] = False  # MLX is not thread-safe: copies run as processes only

    def available(self) -> Availability:
        if importlib.util.find_spec("mlx") is None:
            return Availability(False, "mlx is not installed (pip install 'anebench[mlx]')")
        try:
            _mx()
        except Exception as exc:  # noqa: BLE001 - a broken wheel must not take the other engines down
            return Availability(False, f"mlx failed to import: {exc}")
        return Availability(True)

    def devices(self) -> list[str]:
        if not self.available():
            return []
        mx = _mx()
        return (["gpu"] if mx.metal.is_available() else []) + ["cpu"]

    def version(self) -> str:
        return _mx().__version__

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        if device == "cpu":
            return upcast_when_compute_bound(workload, "MLX's 16-bit CPU matmul is compute-bound")
        return DtypeChoice(workload.dtype)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        return MlxPrepared(workload, device, self.dtype_for(workload, device))
