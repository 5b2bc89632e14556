"""One decode step's weight + KV stream run as numpy, torch and MLX run it: a chain of matvecs in layer order.

The same program (``decode_step``) runs on every array backend, and in float64 on the host as the
reference the output check compares with. Between the matvecs a cheap nonlinearity (tanh) and the
activations fed forward make every matvec's result needed by the next, so no engine (not even MLX's lazy
graph) can skip or fuse a weight read away; the attention read touches every K and V byte at depth D.
It is not the model: no rotary, no softmax, no sampling, no exact numerics (the record says so).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..workloads import DTYPE_BYTES
from ..workloads.decode_stream import head_matrix, layer_matrices
from ..workloads.models import DecodeWorkload
from .base import DtypeChoice, Engine, Prepared
from .decode_step import (
    TOLERANCE_16BIT,
    Backend,
    LoadedStream,
    decode_step,
    load_stream,
    reference_head_input,
)


class DecodePrepared(Prepared):
    """One decode step loaded on a device; ``call()`` runs it and waits for the logits."""

    workload: DecodeWorkload

    def __init__(self, workload: DecodeWorkload, device: str, choice: DtypeChoice, backend: Backend):
        super().__init__()
        self.workload = workload
        self.device = self.compute_units = device
        self.run_dtype, self.dtype_note = choice.run_dtype, choice.note
        self.backend = backend
        self.stream = load_stream(backend, workload, choice.run_dtype)
        self.weight_bytes = workload.bytes_as(choice.run_dtype)
        self.output_tolerance = None if choice.run_dtype == "fp32" else TOLERANCE_16BIT
        self._logits: Any = None
        self._reference: np.ndarray | None = None
        self.details["decode_step"] = "weight + KV stream of one token (not a full model)"
        self.details["dispatches"] = len(dispatches(workload, choice.run_dtype))

    def call(self) -> None:
        _, self._logits = decode_step(self.backend, self.stream, self.workload)

    def output(self) -> np.ndarray:
        return self.backend.host(self._logits).reshape(1, self.workload.vocab)

    def reference_inputs(self) -> np.ndarray:
        if self._reference is None:
            self._reference = reference_head_input(self.workload)
        return self._reference

    def close(self) -> None:
        self.stream = LoadedStream()
        self._logits = None


@dataclass(frozen=True)
class Dispatch:
    """One unit of work an engine issues per token (a matvec, an attention read): what the prediction sums."""

    label: str
    bytes: int


def dispatches(workload: DecodeWorkload, run_dtype: str) -> list[Dispatch]:
    """numpy/torch/MLX: one dispatch per matvec and one attention read per layer at depth > 0."""
    m, width = workload.facts, DTYPE_BYTES[run_dtype]
    found = []
    for layer in range(m.layers):
        for matrix in layer_matrices(m, layer):
            found.append(Dispatch(f"L{layer}.{matrix.kind}", matrix.rows * matrix.cols * width))
        if workload.depth:
            found.append(
                Dispatch(f"L{layer}.attention", 2 * m.kv_heads * m.head_dim * workload.depth * width)
            )
    head = head_matrix(m)
    found.append(Dispatch("lm_head", head.rows * head.cols * width))
    return found


class DecodeEngine(Engine):
    """An engine's decode step: everything as the engine it wraps, except what ``prepare`` loads."""

    def __init__(self, inner: Engine, chunk_bytes: int | None = None):
        self.inner = inner
        self.name = inner.name
        self.chunk_bytes = chunk_bytes  # Core ML: the most weight bytes per chunk (None: the default)

    def thread_limit(self, threads: int):
        return self.inner.thread_limit(threads)

    def available(self):
        return self.inner.available()

    def devices(self) -> list[str]:
        return self.inner.devices()

    def version(self) -> str:
        return self.inner.version()

    def dtype_for(self, workload, device: str) -> DtypeChoice:
        return self.inner.dtype_for(workload, device)

    def free_memory(self, device: str) -> int | None:
        return self.inner.free_memory(device)

    def cache_bytes(self, device: str) -> int | None:
        return self.inner.cache_bytes(device)

    def prepare(self, workload, device: str) -> Prepared:
        if self.inner.name == "coreml":
            from .coreml_decode import CoreMLDecodePrepared

            return CoreMLDecodePrepared(workload, device, getattr(self.inner, "cache_dir", None),
                                        self.chunk_bytes)
        from .decode_backends import backend_for

        choice = self.dtype_for(workload, device)
        return DecodePrepared(workload, device, choice, backend_for(self.inner, device, choice.run_dtype))
