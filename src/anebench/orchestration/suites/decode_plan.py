"""How each engine dispatches one decode token: matvec by matvec (numpy, torch, MLX), or Core ML's chunks.

Core ML runs a token as ANEMLL does: an embedding model (one row read), N chunks of whole layers (each at
most ``chunk_bytes`` of weights, the layers spread evenly over the fewest chunks that fit) and the LM head
split as the canonical head is (1x1 convolutions of at most 16,384 output rows, one predict): N + 2
predicts per token. A plan is known before anything is built, so ``--dry-run`` works on any OS.
"""

from __future__ import annotations

from ...artifacts.decode_bundles import COREML_DTYPE, DEFAULT_CHUNK_BYTES, Chunk, coreml_chunks
from ...engines.decode import Dispatch, dispatches
from ...workloads.models import DecodeWorkload

__all__ = ["COREML_DTYPE", "DEFAULT_CHUNK_BYTES", "Chunk", "coreml_chunks", "token_dispatches"]

def token_dispatches(
    workload: DecodeWorkload, engine: str, run_dtype: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> list[Dispatch]:
    """What one token issues on ``engine``: Core ML's predicts, or every matvec and attention read."""
    if engine == "coreml":
        return [Dispatch(c.name, c.streamed_bytes) for c in coreml_chunks(workload, chunk_bytes)]
    return dispatches(workload, run_dtype)
