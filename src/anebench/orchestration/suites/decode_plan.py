"""How each engine dispatches one decode token: matvec by matvec (numpy, torch, MLX), or Core ML's chunks.

Core ML runs a token as ANEMLL does: an embedding model (one row read), N chunks of whole layers (each at
most ``chunk_bytes`` of weights, the layers spread evenly over the fewest chunks that fit) and the LM head
split as the canonical head is (1x1 convolutions of at most 16,384 output rows, one predict): N + 2
predicts per token. A plan is known before anything is built, so ``--dry-run`` works on any OS.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...artifacts.coreml import MAX_SPLIT_ROWS, near_equal_splits
from ...engines.decode import Dispatch, dispatches
from ...errors import UserError
from ...workloads import DTYPE_BYTES
from ...workloads.models import DecodeWorkload, kv_bytes, layer_matrices

DEFAULT_CHUNK_BYTES = 1_000_000_000  # ANEMLL keeps each chunk under the 1-2 GB file limits
COREML_DTYPE = "fp16"  # Core ML stores and computes in fp16


@dataclass(frozen=True)
class Chunk:
    """One Core ML bundle of the token: its layers, the weight bytes it stores, what one predict reads."""

    name: str
    layers: tuple[int, int] | None  # [first, last) layer; None: the embedding or the head
    weight_bytes: int  # stored in the bundle (the embedding model stores the whole matrix)
    streamed_bytes: int  # one predict: weights + this chunk's KV cache at the depth (embedding: one row)
    splits: int = 1  # output splits of the LM head

    def as_dict(self) -> dict:
        return {
            "name": self.name,
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
    if not m.moe:
        return layer_bytes(workload, layer, dtype)
    inactive = m.experts - m.experts_per_token
    return (
        layer_bytes(workload, layer, dtype)
        + inactive * 3 * m.hidden * m.expert_intermediate * DTYPE_BYTES[dtype]
    )


def coreml_chunks(workload: DecodeWorkload, chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> list[Chunk]:
    """The embedding, the fewest even chunks of whole layers that keep each under
    ``chunk_bytes``, the head."""
    m, width = workload.facts, DTYPE_BYTES[COREML_DTYPE]
    if chunk_bytes < 1:
        raise UserError(f"--chunk-mb: a chunk must hold at least one byte (got {chunk_bytes})")
    stored = [stored_layer_bytes(workload, i, COREML_DTYPE) for i in range(m.layers)]
    count = max(1, math.ceil(sum(stored) / chunk_bytes))
    while True:
        per = math.ceil(m.layers / count)
        bounds = [(i, min(i + per, m.layers)) for i in range(0, m.layers, per)]
        if all(sum(stored[a:b]) <= chunk_bytes for a, b in bounds) or per == 1:
            break
        count += 1
    per_layer_kv = kv_bytes(m, workload.depth, COREML_DTYPE) // m.layers
    chunks = [Chunk("embedding", None, m.vocab * m.hidden * width, m.hidden * width)]
    for index, (a, b) in enumerate(bounds):
        streamed = sum(layer_bytes(workload, i, COREML_DTYPE) for i in range(a, b)) + (b - a) * per_layer_kv
        chunks.append(Chunk(f"chunk {index + 1}/{len(bounds)}", (a, b), sum(stored[a:b]), streamed))
    head = (m.vocab * m.hidden + m.hidden) * width  # the final norm travels with the head
    chunks.append(Chunk("lm_head", None, head, head, len(near_equal_splits(m.vocab, MAX_SPLIT_ROWS))))
    return chunks


def token_dispatches(
    workload: DecodeWorkload, engine: str, run_dtype: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> list[Dispatch]:
    """What one token issues on ``engine``: Core ML's predicts, or every matvec and attention read."""
    if engine == "coreml":
        return [Dispatch(c.name, c.streamed_bytes) for c in coreml_chunks(workload, chunk_bytes)]
    return dispatches(workload, run_dtype)
