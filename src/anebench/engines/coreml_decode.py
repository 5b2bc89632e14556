"""Core ML decode: a token as chained predicts of its chunk bundles (embedding, layer chunks, LM head), each
predict timed, so a record carries the per-token timeline. Building works on any OS; loading and predicting
need macOS (``load_chunk`` is the one function to stand in for elsewhere)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np

from ..artifacts.decode_bundles import (
    COREML_DTYPE,
    DEFAULT_CHUNK_BYTES,
    HIDDEN_OUTPUT,
    Chunk,
    build_chunks,
    chunk_feeds,
)
from ..errors import UserError
from ..system import preflight
from ..workloads.models import DecodeWorkload
from .base import Prepared
from .coreml_engine import COMPUTE_UNITS, CoreMLEngine
from .coreml_runtime import active_binding
from .decode_step import TOLERANCE_16BIT, reference_head_input


def load_chunk(package: Path, compute_units: str, warnings_out: list[str]) -> Any:
    """The loaded model of one chunk (macOS); tests stand in a float64 executor of the same bundle."""
    return active_binding().load_model(package, compute_units, warnings_out)


def platform_problem(device: str) -> str | None:
    """Why this host cannot load and predict on ``device`` (None: it can)."""
    framework = CoreMLEngine.label
    return preflight.ane_problem(framework) if device == "ane" else preflight.prediction_problem(framework)


class CoreMLDecodePrepared(Prepared):
    """The token's bundles loaded on the compute units; ``call()`` chains their predicts."""

    workload: DecodeWorkload

    def __init__(
        self, workload: DecodeWorkload, device: str, cache_dir: Path | None, chunk_bytes: int | None = None
    ):
        super().__init__()
        if device not in COMPUTE_UNITS:
            raise UserError(f"device {device!r} is not a Core ML device; valid: {', '.join(COMPUTE_UNITS)}")
        problem = platform_problem(device)
        if problem:
            raise UserError(problem)
        from ..artifacts.cache import default_cache_dir

        self.workload = workload
        self.run_dtype = COREML_DTYPE
        self.dtype_note = (
            None if workload.dtype == "fp16" else f"{workload.dtype} weights stored by Core ML as fp16"
        )
        self.compute_units = COMPUTE_UNITS[device]
        self.output_tolerance = TOLERANCE_16BIT
        built = build_chunks(
            workload, Path(cache_dir or default_cache_dir()), chunk_bytes or DEFAULT_CHUNK_BYTES
        )
        self.chunks: list[Chunk] = [chunk for chunk, _ in built]
        self.models = [load_chunk(package, self.compute_units, self.warnings) for _, package in built]
        self.weight_bytes = sum(chunk.streamed_bytes for chunk in self.chunks)
        self.chunk_seconds: list[list[float]] = [[] for _ in self.chunks]  # every call's, warmup included
        self.details["decode_step"] = "weight + KV stream of one token (not a full model)"
        self.details["predicts_per_token"] = len(self.chunks)
        self._outputs: dict[str, np.ndarray] = {}
        self._reference: np.ndarray | None = None

    def call(self) -> None:
        hidden = None
        for index, (chunk, model) in enumerate(zip(self.chunks, self.models)):
            started = time.perf_counter()
            outputs = model.predict(chunk_feeds(chunk, hidden))
            self.chunk_seconds[index].append(time.perf_counter() - started)
            hidden = outputs.get(HIDDEN_OUTPUT)
        self._outputs = outputs

    def output(self) -> np.ndarray:
        splits = [
            np.asarray(self._outputs[f"logits{i + 1}"], dtype=np.float32).reshape(-1)
            for i in range(len(self._outputs))
        ]
        return np.concatenate(splits).reshape(1, self.workload.vocab)

    def reference_inputs(self) -> np.ndarray:
        if self._reference is None:
            self._reference = reference_head_input(self.workload)
        return self._reference

    def timeline(self, calls: int) -> list[tuple[str, int, float]]:
        """(chunk, bytes per predict, median seconds) over the last ``calls`` calls (the timed ones)."""
        found = []
        for chunk, seconds in zip(self.chunks, self.chunk_seconds):
            timed = sorted(seconds[-calls:]) if calls else []
            if timed:
                found.append((chunk.name, chunk.streamed_bytes, float(np.median(timed))))
        return found

    def close(self) -> None:
        self.models = []
