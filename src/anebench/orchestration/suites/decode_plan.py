"""How each engine dispatches one decode token: matvec by matvec (numpy, torch, MLX), or as the chunks an
engine chains (``Engine.decode_chunks``).

An engine that chains bundles runs a token as ANEMLL does: an embedding model (one row read), N chunks of
whole layers (each at most ``chunk_bytes`` of weights, the layers spread evenly over the fewest chunks that
fit) and the LM head split as the canonical head is (1x1 convolutions of at most 16,384 output rows, one
predict): N + 2 predicts per token. A plan is known before anything is built, so ``--dry-run`` works on
any OS.
"""

from __future__ import annotations

from ...artifacts.decode_bundles import DEFAULT_CHUNK_BYTES, Chunk
from ...engines.base import Engine
from ...engines.decode import Dispatch, dispatches
from ...workloads.models import DecodeWorkload

__all__ = ["DEFAULT_CHUNK_BYTES", "Chunk", "token_dispatches"]

def token_dispatches(
    workload: DecodeWorkload, engine: Engine, run_dtype: str, chunk_bytes: int = DEFAULT_CHUNK_BYTES
) -> list[Dispatch]:
    """What one token issues on ``engine``: the predicts of its chunks, or every matvec and attention
    read."""
    chunks = engine.decode_chunks(workload, chunk_bytes)
    if chunks is not None:
        return [Dispatch(c.name, c.streamed_bytes) for c in chunks]
    return dispatches(workload, run_dtype)
