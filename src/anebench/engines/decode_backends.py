"""The decode step's array operations on torch (CPU, CUDA, MPS) and MLX (GPU, CPU).

numpy's are the default (engines/decode.py)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .base import Engine
from .decode_step import FILL_ROWS, Backend

_NAMES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


class TorchBackend(Backend):
    def __init__(self, torch: Any, device: str, run_dtype: str):
        super().__init__()
        self.torch, self.device = torch, device
        self.dtype = getattr(torch, _NAMES[run_dtype])

    def _to(self, values: np.ndarray) -> Any:
        return self.torch.from_numpy(np.asarray(values, dtype=np.float32)).to(self.device, self.dtype)

    def matrix(self, source, rows: int, cols: int) -> Any:
        out = self.torch.empty((rows, cols), dtype=self.dtype, device=self.device)
        for lo in range(0, rows, FILL_ROWS):
            hi = min(rows, lo + FILL_ROWS)
            out[lo:hi].copy_(self._to(source.read_rows(lo, hi)))
        return out

    def vector(self, values: np.ndarray) -> Any:
        return self._to(values).contiguous()

    cache = vector

    def matvec(self, w: Any, x: Any) -> Any:
        return self.torch.mv(w, x)

    def tanh(self, x: Any) -> Any:
        return self.torch.tanh(x)

    def tile(self, x: Any, reps: int) -> Any:
        return x.repeat(reps)

    def attend(self, z: Any, k_cache: Any, v_cache: Any, kv_heads: int, head_dim: int) -> Any:
        depth = k_cache.shape[1]
        grouped = z.reshape(kv_heads, -1, head_dim)
        scores = self.torch.bmm(grouped, k_cache.transpose(1, 2)) * (1.0 / math.sqrt(head_dim * depth))
        return self.torch.bmm(scores, v_cache).reshape(-1)

    def finish(self, x: Any) -> Any:
        if self.device.startswith("cuda"):
            self.torch.cuda.synchronize(self.device)
        elif self.device == "mps":
            self.torch.mps.synchronize()
        return x

    def host(self, x: Any) -> np.ndarray:
        return x.float().cpu().numpy().astype(np.float64)


class MlxBackend(Backend):
    def __init__(self, device: str, run_dtype: str):
        super().__init__()
        import mlx.core as mx

        self.mx = mx
        self.stream = mx.gpu if device == "gpu" else mx.cpu
        self.dtype = getattr(mx, _NAMES[run_dtype])

    def _to(self, values: np.ndarray) -> Any:
        with self.mx.stream(self.stream):
            array = self.mx.array(np.asarray(values, dtype=np.float32)).astype(self.dtype)
            self.mx.eval(array)
        return array

    def matrix(self, source, rows: int, cols: int) -> Any:
        blocks = [
            self._to(source.read_rows(lo, min(rows, lo + FILL_ROWS))) for lo in range(0, rows, FILL_ROWS)
        ]
        with self.mx.stream(self.stream):
            out = blocks[0] if len(blocks) == 1 else self.mx.concatenate(blocks)
            self.mx.eval(out)
        return out

    def vector(self, values: np.ndarray) -> Any:
        return self._to(values)

    cache = vector

    def matvec(self, w: Any, x: Any) -> Any:
        return self.mx.matmul(w, x, stream=self.stream)

    def tanh(self, x: Any) -> Any:
        return self.mx.tanh(x, stream=self.stream)

    def tile(self, x: Any, reps: int) -> Any:
        return self.mx.tile(x, [reps], stream=self.stream)

    def take(self, x: Any, index: list[int]) -> Any:
        return self.mx.take(x, self.mx.array(index), stream=self.stream)

    def attend(self, z: Any, k_cache: Any, v_cache: Any, kv_heads: int, head_dim: int) -> Any:
        mx, depth = self.mx, k_cache.shape[1]
        grouped = z.reshape(kv_heads, -1, head_dim)
        scores = mx.matmul(grouped, k_cache.transpose(0, 2, 1), stream=self.stream)
        scores = scores * (1.0 / math.sqrt(head_dim * depth))
        return mx.matmul(scores, v_cache, stream=self.stream).reshape(-1)

    def finish(self, x: Any) -> Any:
        self.mx.eval(x)  # the whole step is one lazy graph: evaluating the logits reads every weight
        return x

    def host(self, x: Any) -> np.ndarray:
        return np.array(x.astype(self.mx.float32)).astype(np.float64)


def backend_for(engine: Engine, device: str, run_dtype: str) -> Backend:
    if engine.name == "numpy":
        return Backend(np.float32)
    if engine.name == "torch":
        return TorchBackend(getattr(engine, "torch_module", None) or __import__("torch"), device, run_dtype)
    if engine.name == "mlx":
        return MlxBackend(device, run_dtype)
    from ..errors import UserError, setting

    raise UserError(f"engine {engine.name}: decode runs as chunked bundles (see decode's "
                    f"{setting('dry_run')})")
