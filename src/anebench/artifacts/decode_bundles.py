"""Core ML bundles of one decode token, partitioned as ANEMLL partitions a model: an embedding model, N chunks
of whole layers (each at most ``chunk_bytes`` of weights) and the LM head split as the canonical head is.

Each chunk computes exactly ``engines.decode_step``'s layers (1x1 convolutions for the linears, tanh
between them, the attention read of a KV cache of the real shape held as a constant, so its bytes are read
by every predict as ANEMLL's state is), in fp16, so the float64 reference executor (``reference.py``) runs
the chained chunks and a test compares them with numpy. Bundles are written with reproducible bytes (no
date, ids derived from the chunk's key). MoE chunks are planned, not built.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError, setting
from ..workloads import DTYPE_BYTES
from ..workloads.decode_stream import Matrix, head_matrix, kv_bytes, layer_matrices
from ..workloads.models import RESIDUAL_SCALE, TOKEN_ID, DecodeWorkload, kv_cache
from ._coremltools import coremltools as import_coremltools
from ._coremltools import no_pass_progress_bars
from .coreml import MAX_SPLIT_ROWS, near_equal_splits

DECODE_BUILDER_VERSION = "anebench-coreml-decode-v1"
DEFAULT_CHUNK_BYTES = 1_000_000_000  # ANEMLL keeps each chunk under the 1-2 GB file limits
COREML_DTYPE = "fp16"  # Core ML stores and computes in fp16
TOKEN_INPUT, HIDDEN_INPUT, HIDDEN_OUTPUT = "token", "hidden_states", "hidden_states_out"


@dataclass(frozen=True)
class Chunk:
    """One bundle of the token: its layers, the weight bytes it stores, what one predict reads."""

    name: str
    kind: str  # embedding, layers, lm_head
    layers: tuple[int, int] | None  # [first, last) layer of a layers chunk
    weight_bytes: int  # stored in the bundle (the embedding model stores the whole matrix)
    streamed_bytes: int  # one predict: weights + the chunk's KV cache at the depth (embedding: one row)
    splits: int = 1  # output splits of the LM head

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "layers": list(self.layers) if self.layers else None,
            "weight_bytes": self.weight_bytes,
            "streamed_bytes": self.streamed_bytes,
            "splits": self.splits,
        }


def layer_bytes(workload: DecodeWorkload, layer: int, dtype: str) -> int:
    m = workload.facts
    norms = 2 * m.hidden + (2 * m.head_dim if m.qk_norm else 0)
    return (sum(x.rows * x.cols for x in layer_matrices(m, layer)) + norms) * DTYPE_BYTES[dtype]


def stored_layer_bytes(workload: DecodeWorkload, layer: int, dtype: str) -> int:
    """A layer as a bundle stores it: every expert (a token streams only the active ones)."""
    m = workload.facts
    inactive = m.experts - m.experts_per_token if m.moe else 0
    return (
        layer_bytes(workload, layer, dtype)
        + inactive * 3 * m.hidden * m.expert_intermediate * DTYPE_BYTES[dtype]
    )


def coreml_chunks(workload: DecodeWorkload, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[Chunk]:
    """The embedding, the fewest even chunks of whole layers that keep each under ``chunk_bytes``, the
    head: N + 2 predicts per token."""
    m, width = workload.facts, DTYPE_BYTES[COREML_DTYPE]
    if chunk_bytes < 1:
        raise UserError(f"{setting('chunk_mb')}: a chunk must hold at least one byte (got {chunk_bytes})")
    stored = [stored_layer_bytes(workload, i, COREML_DTYPE) for i in range(m.layers)]
    count = max(1, math.ceil(sum(stored) / chunk_bytes))
    while True:
        per = math.ceil(m.layers / count)
        bounds = [(i, min(i + per, m.layers)) for i in range(0, m.layers, per)]
        if all(sum(stored[a:b]) <= chunk_bytes for a, b in bounds) or per == 1:
            break
        count += 1
    per_layer_kv = kv_bytes(m, workload.depth, COREML_DTYPE) // m.layers
    chunks = [Chunk("embedding", "embedding", None, m.vocab * m.hidden * width, m.hidden * width)]
    for index, (a, b) in enumerate(bounds):
        streamed = sum(layer_bytes(workload, i, COREML_DTYPE) for i in range(a, b)) + (b - a) * per_layer_kv
        chunks.append(Chunk(f"chunk {index + 1}/{len(bounds)}", "layers", (a, b), sum(stored[a:b]), streamed))
    head = (m.vocab * m.hidden + m.hidden) * width  # the final norm travels with the head
    chunks.append(
        Chunk("lm_head", "lm_head", None, head, head, len(near_equal_splits(m.vocab, MAX_SPLIT_ROWS)))
    )
    return chunks


def _fp16(values: np.ndarray, what: str) -> np.ndarray:
    if np.abs(values).max(initial=0) > 65504:
        raise UserError(f"{what}: values exceed fp16's range (65504); Core ML cannot hold them")
    return np.asarray(values, dtype=np.float32).astype(np.float16)


def _matrix(workload: DecodeWorkload, matrix: Matrix) -> np.ndarray:
    rows = workload.matrix_source(matrix).read_rows(0, matrix.rows)
    return _fp16(rows, matrix.tensor).reshape(matrix.rows, matrix.cols, 1, 1)


def _channels(values: np.ndarray, what: str) -> np.ndarray:
    return _fp16(values, what).reshape(1, -1, 1, 1)


def _layer_ops(mb, workload: DecodeWorkload, layer: int, h):
    """One layer of decode_step on NCHW [1, C, 1, 1] values."""
    m, base = workload.facts, f"model.layers.{layer}"
    weights = {x.kind: x for x in layer_matrices(m, layer)}

    def linear(kind: str, x):
        return mb.conv(
            x=x,
            weight=mb.const(val=_matrix(workload, weights[kind]), name=f"L{layer}_{kind}_w"),
            name=f"L{layer}_{kind}",
        )

    def vector(name: str, size: int, tile: int = 1):
        return mb.const(val=_channels(np.tile(workload.vector(name, size), tile), name), name=f"{name}_c")

    x = mb.tanh(x=mb.mul(x=h, y=vector(f"{base}.input_layernorm.weight", m.hidden)), name=f"L{layer}_x")
    q, k, v = (mb.tanh(x=linear(kind, x), name=f"L{layer}_{kind}_t") for kind in ("q", "k", "v"))
    if m.qk_norm:
        q = mb.mul(x=q, y=vector(f"{base}.self_attn.q_norm.weight", m.head_dim, m.heads))
        k = mb.mul(x=k, y=vector(f"{base}.self_attn.k_norm.weight", m.head_dim, m.kv_heads))
    groups = m.heads // m.kv_heads
    z = mb.add(x=q, y=mb.tile(x=mb.mul(x=k, y=v), reps=[1, groups, 1, 1]), name=f"L{layer}_z")
    if workload.depth:
        grouped = mb.reshape(x=z, shape=[m.kv_heads, groups, m.head_dim])
        k_cache = mb.const(val=_fp16(kv_cache(workload, layer, "k"), "k cache"), name=f"L{layer}_k_cache")
        v_cache = mb.const(val=_fp16(kv_cache(workload, layer, "v"), "v cache"), name=f"L{layer}_v_cache")
        scores = mb.matmul(x=grouped, y=k_cache, transpose_y=True)
        scores = mb.mul(x=scores, y=np.float16(1.0 / math.sqrt(m.head_dim * workload.depth)))
        read = mb.reshape(x=mb.matmul(x=scores, y=v_cache), shape=[1, m.heads * m.head_dim, 1, 1])
        z = mb.tanh(x=mb.add(x=z, y=read), name=f"L{layer}_attn")
    scale = np.float16(RESIDUAL_SCALE)  # a power of two: exact in fp16
    h1 = mb.add(x=h, y=mb.mul(x=linear("o", z), y=scale), name=f"L{layer}_h1")
    x2 = mb.tanh(x=mb.mul(x=h1, y=vector(f"{base}.post_attention_layernorm.weight", m.hidden)))
    gated = mb.mul(x=mb.tanh(x=linear("gate", x2)), y=linear("up", x2))
    return mb.add(x=h1, y=mb.mul(x=linear("down", gated), y=scale), name=f"L{layer}_out")


def build_program(workload: DecodeWorkload, chunk: Chunk):
    ct = import_coremltools()
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    m = workload.facts
    hidden_shape = (1, m.hidden, 1, 1)
    if chunk.kind == "embedding":
        head = head_matrix(m)
        embed = Matrix("embedding", None, head.rows, head.cols, "model.embed_tokens.weight")

        @mb.program(input_specs=[mb.TensorSpec(shape=(1,), dtype=types.int32)], opset_version=ct.target.iOS18)
        def embedding(token):
            table = mb.const(val=_matrix(workload, embed).reshape(head.rows, head.cols), name="embedding_w")
            row = mb.gather(x=table, indices=token, axis=0)
            return mb.reshape(x=row, shape=list(hidden_shape), name=HIDDEN_OUTPUT)

        return embedding
    if chunk.kind == "layers":
        assert chunk.layers is not None
        first, last = chunk.layers

        @mb.program(
            input_specs=[mb.TensorSpec(shape=hidden_shape, dtype=types.fp16)], opset_version=ct.target.iOS18
        )
        def layers(hidden_states):
            h = hidden_states
            for layer in range(first, last):
                h = _layer_ops(mb, workload, layer, h)
            return mb.identity(x=h, name=HIDDEN_OUTPUT)

        return layers
    head = head_matrix(m)

    @mb.program(
        input_specs=[mb.TensorSpec(shape=hidden_shape, dtype=types.fp16)], opset_version=ct.target.iOS18
    )
    def lm_head(hidden_states):
        norm = mb.const(
            val=_channels(workload.vector("model.norm.weight", m.hidden), "norm"), name="final_norm"
        )
        final = mb.tanh(x=mb.mul(x=hidden_states, y=norm), name="final")
        source, outputs = workload.matrix_source(head), []
        for index, (start, stop) in enumerate(near_equal_splits(m.vocab, MAX_SPLIT_ROWS)):
            rows = _fp16(source.read_rows(start, stop), head.tensor).reshape(stop - start, m.hidden, 1, 1)
            weight = mb.const(val=rows, name=f"lm_head_weight{index + 1}")
            outputs.append(mb.conv(x=final, weight=weight, name=f"logits{index + 1}"))
        return tuple(outputs)

    return lm_head


def chunk_key(workload: DecodeWorkload, chunk: Chunk) -> str:
    described = {
        "builder": DECODE_BUILDER_VERSION,
        "coremltools": import_coremltools().__version__,
        "workload": workload.description(),
        "chunk": chunk.as_dict(),
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def write_chunk(workload: DecodeWorkload, chunk: Chunk, package: Path) -> None:
    """Build and write one chunk's .mlpackage at ``package`` with reproducible bytes."""
    if workload.facts.moe:
        raise UserError(
            f"{workload.facts.name}: Core ML decode chunks of MoE models are planned, not built; "
            f"{setting('dry_run')} and {setting('predict')} show them"
        )
    ct = import_coremltools()
    program = build_program(workload, chunk)
    with no_pass_progress_bars():
        ct.convert(
            program,
            convert_to="mlprogram",
            minimum_deployment_target=ct.target.macOS15,
            compute_precision=ct.precision.FLOAT16,
            pass_pipeline=ct.PassPipeline.EMPTY,
            skip_model_load=True,
            package_dir=str(package),
        )
    _make_reproducible(package, chunk_key(workload, chunk), f"anebench decode {workload.name}: {chunk.name}")


def _make_reproducible(package: Path, key: str, description: str) -> None:
    import uuid

    from coremltools.proto import Model_pb2

    manifest_path = package / "Manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entries = manifest["itemInfoEntries"]
    root_path = entries[manifest["rootModelIdentifier"]]["path"]
    model_file = package / "Data" / root_path
    model = Model_pb2.Model()
    model.ParseFromString(model_file.read_bytes())
    model.description.metadata.userDefined.pop("com.github.apple.coremltools.conversion_date", None)
    model.description.metadata.userDefined["com.github.anemll.anebench.build_key"] = key
    model.description.metadata.shortDescription = description
    model_file.write_bytes(model.SerializeToString(deterministic=True))
    namespace = uuid.UUID(key[:32])
    manifest["itemInfoEntries"] = dict(
        sorted({str(uuid.uuid5(namespace, e["path"])): e for e in entries.values()}.items())
    )
    manifest["rootModelIdentifier"] = str(uuid.uuid5(namespace, root_path))
    manifest_path.write_text(json.dumps(manifest, indent=4, sort_keys=True) + "\n")


def build_chunks(
    workload: DecodeWorkload,
    cache_dir: Path,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> list[tuple[Chunk, Path]]:
    """Every chunk's bundle, reused from ``cache_dir`` when complete, else built beside it and renamed in."""
    built = []
    for chunk in coreml_chunks(workload, chunk_bytes):
        entry = Path(cache_dir) / f"decode-{chunk_key(workload, chunk)}"
        package = entry / "chunk.mlpackage"
        if not package.is_dir():
            Path(cache_dir).mkdir(parents=True, exist_ok=True)
            staging = Path(tempfile.mkdtemp(prefix=".decode-", dir=cache_dir))
            try:
                write_chunk(workload, chunk, staging / "chunk.mlpackage")
                shutil.rmtree(entry, ignore_errors=True)
                os.rename(staging, entry)
            finally:
                shutil.rmtree(staging, ignore_errors=True)
        built.append((chunk, package))
    return built


def chunk_feeds(chunk: Chunk, hidden: np.ndarray | None) -> dict[str, np.ndarray]:
    """One predict's input: the token for the embedding, the previous chunk's hidden state otherwise."""
    if chunk.kind == "embedding":
        return {TOKEN_INPUT: np.array([TOKEN_ID], dtype=np.int32)}
    assert hidden is not None
    return {HIDDEN_INPUT: np.asarray(hidden, dtype=np.float16)}
