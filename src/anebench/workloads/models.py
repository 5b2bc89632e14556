"""A model's per-token decode stream from its Hugging Face config: which weights one token reads, in order.

``anebench decode MODEL`` takes a local folder with a ``config.json`` (weights optional) or a name from
``KNOWN_CONFIGS`` (config facts only, each with its source: model_config.py). From the config alone,
decode_stream.py states every weight one decode step reads and counts what is stored apart from what one
token streams; this module makes that stream a workload the timing loop runs, with the checkpoint's
weights or synthetic ones of the real shapes.

What this is not: a model. The stream omits rotary embeddings, softmax's exact numerics and sampling; its
executors (engines/decode.py) read every byte of it once per token with a cheap nonlinearity between the
matvecs so nothing can be skipped or fused away.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import UserError, setting
from .decode_stream import Matrix, head_matrix, stream_bytes
from .model_config import ModelConfig
from .spec import SyntheticWeights, WeightSource, Workload

TILE_ROWS = 64  # distinct seeded rows per synthetic matrix; rows repeat past it (see TiledWeights)
TILED_GENERATOR = "anebench-decode-tiled-v1"
MAX_DEPTH = 1 << 20
TOKEN_ID = 1  # the token whose embedding row the step reads (any row reads the same bytes)
# Each layer adds its attention and MLP outputs to a residual stream at this scale, as a trained model's
# small updates do: a chain of tanh(W x) at full gain is chaotic over tens of layers (fp32 and float64
# part after ~10), so no output check could hold; small updates keep rounding errors from growing.
RESIDUAL_SCALE = 1 / 16

@dataclass(frozen=True)
class TiledWeights:
    """Synthetic weights of a real shape that cost a memcpy to make: TILE_ROWS seeded rows (the LM head's
    generator, exact in the dtype), row i of the matrix being tile row (i * 97 + seed) % TILE_ROWS.

    Every row is read from memory on every token like any other (no engine can see that rows repeat), and
    a matvec's float64 reference costs TILE_ROWS rows: ``(tile @ x)[row_index]``.
    """

    rows: int
    cols: int
    dtype: str
    seed: int

    @cached_property
    def tile(self) -> np.ndarray:
        return SyntheticWeights(self.cols, min(TILE_ROWS, self.rows), self.dtype, self.seed).read_rows(
            0, min(TILE_ROWS, self.rows)
        )

    def row_index(self, start: int, stop: int) -> np.ndarray:
        return (np.arange(start, stop, dtype=np.int64) * 97 + self.seed) % self.tile.shape[0]

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        if not 0 <= start <= stop <= self.rows:
            raise ValueError(f"rows [{start}, {stop}) outside 0..{self.rows}")
        return np.take(self.tile, self.row_index(start, stop), axis=0)

    def description(self) -> dict:
        return {"generator": TILED_GENERATOR, "tile_rows": TILE_ROWS, "seed": self.seed}

    def provenance(self) -> dict:
        return {}


def _seed_of(*parts: object) -> int:
    digest = hashlib.sha256(json.dumps(parts).encode()).digest()
    return int.from_bytes(digest[:4], "little")


@dataclass(frozen=True)
class DecodeWorkload(Workload):
    """One decode step of ``model`` at context depth ``depth``, as a workload the timing loop can run.

    ``hidden`` x ``vocab`` is the model's LM head (the output the check compares); weight_bytes and
    bytes_as count the whole stream. Weights are the checkpoint's tensors where ``checkpoint`` is a folder
    with safetensors, else synthetic (TiledWeights) of the real shapes.
    """

    model: ModelConfig | None = None
    depth: int = 0
    checkpoint: object | None = field(default=None, compare=False, repr=False)  # checkpoints.Checkpoint

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.model is None:
            raise ValueError("a decode workload needs its model")
        if not 0 <= self.depth <= MAX_DEPTH:
            raise UserError(f"{setting('depth')} {self.depth}: give 0 to {MAX_DEPTH:,} tokens of context")

    @property
    def facts(self) -> ModelConfig:
        assert self.model is not None
        return self.model

    def matrix_source(self, matrix: Matrix, dtype: str | None = None) -> WeightSource:
        """Where one matrix's rows come from: its checkpoint tensor, or tiled synthetic rows."""
        if self.checkpoint is not None:
            from .checkpoints.weights import CheckpointWeights

            entry = self.checkpoint.tensors.get(matrix.tensor)  # type: ignore[attr-defined]
            if entry is None:
                raise UserError(
                    f"{self.checkpoint.directory}: tensor {matrix.tensor!r} is missing; the "  # type: ignore[attr-defined]
                    "checkpoint does not match its config.json"
                )
            if tuple(entry.shape) != (matrix.rows, matrix.cols):
                raise UserError(
                    f"tensor {matrix.tensor!r} is {list(entry.shape)}, config.json says "
                    f"[{matrix.rows}, {matrix.cols}]"
                )
            return CheckpointWeights(entry, self.facts.name, "decode stream")
        return TiledWeights(matrix.rows, matrix.cols, dtype or self.dtype, _seed_of(self.seed, matrix.tensor))

    def vector(self, name: str, size: int) -> np.ndarray:
        """A norm's weights or the embedding row: the checkpoint's, else seeded near-one values."""
        if self.checkpoint is not None:
            entry = self.checkpoint.tensors.get(name)  # type: ignore[attr-defined]
            if entry is not None and len(entry.shape) == 1:
                from .checkpoints.weights import CheckpointWeights

                values = CheckpointWeights(
                    replace(entry, shape=(1, entry.shape[0])), self.facts.name, "decode stream"
                ).read_rows(0, 1)[0]
                return np.asarray(values, dtype=np.float32)
        rng = np.random.default_rng(_seed_of(self.seed, name))
        return (1 + 0.25 * rng.standard_normal(size)).astype(np.float16).astype(np.float32)

    def embedding_row(self) -> np.ndarray:
        head = Matrix("embedding", None, self.facts.vocab, self.facts.hidden, "model.embed_tokens.weight")
        return np.asarray(self.matrix_source(head).read_rows(TOKEN_ID, TOKEN_ID + 1)[0], dtype=np.float32)

    @property
    def weights(self) -> WeightSource:
        return self.matrix_source(head_matrix(self.facts))

    @property
    def weight_bytes(self) -> int:
        return stream_bytes(self.facts, self.depth, self.dtype)

    @property
    def stored_bytes(self) -> int:
        return self.weight_bytes

    def bytes_as(self, dtype: str) -> int:
        return stream_bytes(self.facts, self.depth, dtype)

    def description(self) -> dict:
        weights = (
            {"checkpoint": "safetensors", "head": self.weights.description()}
            if self.checkpoint is not None
            else {"generator": TILED_GENERATOR, "tile_rows": TILE_ROWS, "seed": self.seed}
        )
        return {
            "kind": "decode",
            "model": self.facts.description(),
            "depth": self.depth,
            "dtype": self.dtype,
            "weights": weights,
        }


def decode_workload(
    model: ModelConfig, depth: int, folder: Path | None = None, seed: int = 0
) -> DecodeWorkload:
    """The decode step of ``model`` at ``depth``: the folder's safetensors where it has them."""
    checkpoint = None
    if folder is not None and any(folder.glob("*.safetensors")):
        from .checkpoints.locate import open_checkpoint

        checkpoint = open_checkpoint(str(folder))
    source = "checkpoint" if checkpoint is not None else "synthetic"
    note = (
        f"decode step of {model.name} ({model.family}) at depth {depth}: the weight + KV stream of one "
        f"token, not a full model; weights {source}; config from {model.source}"
    )
    return DecodeWorkload(
        f"decode:{model.name}@{depth}",
        model.hidden,
        model.vocab,
        model.dtype,
        seed=seed,
        note=note[:2000],
        model=model,
        depth=depth,
        checkpoint=checkpoint,
    )


def kv_cache(workload: DecodeWorkload, layer: int, which: str) -> np.ndarray:
    """A layer's K or V cache at the workload's depth, (kv_heads, D, head_dim): seeded tiled values in the
    model's dtype (so every engine, fp32 or fp16, holds the same values), also beside a checkpoint."""
    m = workload.facts
    rows = m.kv_heads * workload.depth
    source = TiledWeights(rows, m.head_dim, workload.dtype, _seed_of(workload.seed, f"kv.{layer}.{which}"))
    return np.asarray(source.read_rows(0, rows)).reshape(m.kv_heads, workload.depth, m.head_dim)
