"""The decode step as a program over array operations: the backend interface, the float64 reference
backend, and the step itself (``decode_step``), which numpy, torch, MLX and the reference all run.

Below ``decode`` (the engine that wraps another engine's decode step) and its backends
(``decode_backends``, ``coreml_decode``), which all import it: none of them imports ``decode``, so the
engine's choice of backend at ``prepare`` closes no import cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..workloads.decode_stream import active_experts, head_matrix, layer_matrices
from ..workloads.models import RESIDUAL_SCALE, DecodeWorkload, TiledWeights, kv_cache

FILL_ROWS = 4096  # rows copied into a device buffer at a time
TOLERANCE_16BIT = 0.1
 # a 16-bit chain compounds rounding over its layers; a wrong stream gives ~1


class Backend:
    """The few array operations the step needs; numpy's by default (float32 or float64)."""

    def __init__(self, dtype: Any = np.float32):
        self.dtype = dtype

    def matrix(self, source, rows: int, cols: int) -> Any:
        out = np.empty((rows, cols), dtype=self.dtype)
        for lo in range(0, rows, FILL_ROWS):
            hi = min(rows, lo + FILL_ROWS)
            out[lo:hi] = source.read_rows(lo, hi)
        return out

    def vector(self, values: np.ndarray) -> Any:
        return np.ascontiguousarray(values, dtype=self.dtype)

    def matvec(self, w: Any, x: Any) -> Any:
        return w @ x

    def tanh(self, x: Any) -> Any:
        return np.tanh(x)

    def tile(self, x: Any, reps: int) -> Any:
        return np.tile(x, reps)

    def take(self, x: Any, index: list[int]) -> Any:
        return x[index]

    def attend(self, z: Any, k_cache: Any, v_cache: Any, kv_heads: int, head_dim: int) -> Any:
        """(kv_heads, groups, hd) queries against (kv_heads, D, hd) keys, then values: every byte read."""
        depth = k_cache.shape[1]
        grouped = z.reshape(kv_heads, -1, head_dim)
        scores = (grouped @ k_cache.transpose(0, 2, 1)) * (1.0 / math.sqrt(head_dim * depth))
        return (scores @ v_cache).reshape(-1)

    def cache(self, values: np.ndarray) -> Any:
        return np.ascontiguousarray(values, dtype=self.dtype)

    def finish(self, x: Any) -> Any:
        return x

    def host(self, x: Any) -> np.ndarray:
        return np.asarray(x, dtype=np.float64)


class ReferenceBackend(Backend):
    """float64 on the host, matrices read lazily: a tiled synthetic matrix costs its tile, a checkpoint
    tensor is streamed in row blocks (no float64 copy of a whole model is ever held)."""

    def __init__(self) -> None:
        super().__init__(np.float64)

    def matrix(self, source, rows: int, cols: int) -> Any:
        return (source, rows)

    def matvec(self, w: Any, x: Any) -> Any:
        source, rows = w
        if isinstance(source, TiledWeights):
            return (source.tile.astype(np.float64) @ x)[source.row_index(0, rows)]
        out = np.empty(rows)
        for lo in range(0, rows, FILL_ROWS):
            hi = min(rows, lo + FILL_ROWS)
            out[lo:hi] = np.asarray(source.read_rows(lo, hi), dtype=np.float64) @ x
        return out


@dataclass
class LoadedStream:
    """The step's arrays on the backend, in the order the step reads them."""

    layers: list[dict[str, Any]] = field(default_factory=list)
    head: Any = None
    embedding_row: Any = None
    final_norm: Any = None


def load_stream(backend: Backend, workload: DecodeWorkload, dtype: str) -> LoadedStream:
    m = workload.facts
    loaded = LoadedStream()
    for layer in range(m.layers):
        arrays: dict[str, Any] = {"experts": []}
        for matrix in layer_matrices(m, layer):
            handle = backend.matrix(workload.matrix_source(matrix), matrix.rows, matrix.cols)
            if matrix.expert is None or matrix.kind == "router":
                arrays[matrix.kind] = handle
            else:
                arrays["experts"].append(handle)
        base = f"model.layers.{layer}"
        arrays["norm1"] = backend.vector(workload.vector(f"{base}.input_layernorm.weight", m.hidden))
        arrays["norm2"] = backend.vector(workload.vector(f"{base}.post_attention_layernorm.weight", m.hidden))
        if m.qk_norm:
            arrays["q_norm"] = backend.vector(
                np.tile(workload.vector(f"{base}.self_attn.q_norm.weight", m.head_dim), m.heads)
            )
            arrays["k_norm"] = backend.vector(
                np.tile(workload.vector(f"{base}.self_attn.k_norm.weight", m.head_dim), m.kv_heads)
            )
        if workload.depth:
            arrays["k_cache"] = backend.cache(kv_cache(workload, layer, "k"))
            arrays["v_cache"] = backend.cache(kv_cache(workload, layer, "v"))
        loaded.layers.append(arrays)
    head = head_matrix(m)
    loaded.head = backend.matrix(workload.matrix_source(head), head.rows, head.cols)
    loaded.embedding_row = backend.vector(workload.embedding_row())
    loaded.final_norm = backend.vector(workload.vector("model.norm.weight", m.hidden))
    return loaded


def decode_step(b: Backend, w: LoadedStream, workload: DecodeWorkload) -> tuple[Any, Any]:
    """(the head's input, logits) of one step: every weight and cache byte read once, in layer order."""
    m = workload.facts
    groups = m.heads // m.kv_heads
    h = w.embedding_row
    for layer, a in enumerate(w.layers):
        x = b.tanh(h * a["norm1"])
        q, k, v = (b.tanh(b.matvec(a[kind], x)) for kind in ("q", "k", "v"))
        if m.qk_norm:
            q, k = q * a["q_norm"], k * a["k_norm"]
        z = q + b.tile(k * v, groups)
        if workload.depth:
            z = b.tanh(z + b.attend(z, a["k_cache"], a["v_cache"], m.kv_heads, m.head_dim))
        h1 = h + b.matvec(a["o"], z) * RESIDUAL_SCALE
        x2 = b.tanh(h1 * a["norm2"])
        if not m.moe:
            mixed = b.matvec(a["down"], b.tanh(b.matvec(a["gate"], x2)) * b.matvec(a["up"], x2))
        else:
            weights = b.tanh(b.take(b.matvec(a["router"], x2), active_experts(m, layer)))
            mixed = None
            experts = a["experts"]
            for i in range(len(experts) // 3):
                gate, up, down = experts[3 * i : 3 * i + 3]
                out = b.matvec(down, b.tanh(b.matvec(gate, x2)) * b.matvec(up, x2))
                out = out * weights[i] if i < m.experts_per_token else out  # the shared expert: unweighted
                mixed = out if mixed is None else mixed + out
        h = h1 + mixed * RESIDUAL_SCALE
    final = b.tanh(h * w.final_norm)
    return final, None if w.head is None else b.finish(b.matvec(w.head, final))


def reference_head_input(workload: DecodeWorkload) -> np.ndarray:
    """The head's input, (1, hidden), computed in float64 from the workload's weights: what the output
    check multiplies with rows of the head (the head's own matvec is the check's)."""
    reference = ReferenceBackend()
    stream = load_stream(reference, workload, "fp32")
    stream.head = None
    final, _ = decode_step(reference, stream, workload)
    return np.asarray(final, dtype=np.float64).reshape(1, -1)
