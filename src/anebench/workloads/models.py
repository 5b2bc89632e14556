"""A model's per-token decode stream from its Hugging Face config: which weights one token reads, in order.

``anebench decode MODEL`` takes a local folder with a ``config.json`` (weights optional) or a name from
``KNOWN_CONFIGS`` (config facts only, each with its source). From the config alone this module states every
linear weight one decode step reads, layer by layer (q, k, v, o, gate, up, down; MoE: the router and the
active experts), the LM head (tied to the embedding or not), the norms, the embedding row and the KV cache
read at context depth D: 2 x layers x kv_heads x head_dim x D x dtype bytes. What is stored (every expert,
a tied matrix once, in the checkpoint's dtype) and what one token streams (the active experts, the head
and the embedding row, in the engine's dtype) are counted apart.

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
from .known_models import KNOWN_CONFIGS
from .spec import DTYPE_BYTES, SyntheticWeights, WeightSource, Workload

TILE_ROWS = 64  # distinct seeded rows per synthetic matrix; rows repeat past it (see TiledWeights)
TILED_GENERATOR = "anebench-decode-tiled-v1"
MAX_LAYERS = 1024
MAX_EXPERTS = 4096
MAX_DEPTH = 1 << 20
TOKEN_ID = 1  # the token whose embedding row the step reads (any row reads the same bytes)
# Each layer adds its attention and MLP outputs to a residual stream at this scale, as a trained model's
# small updates do: a chain of tanh(W x) at full gain is chaotic over tens of layers (fp32 and float64
# part after ~10), so no output check could hold; small updates keep rounding errors from growing.
RESIDUAL_SCALE = 1 / 16
CONFIG_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}

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


@dataclass(frozen=True)
class ModelConfig:
    """The facts of a config.json that decide what one decode step reads."""

    name: str
    family: str  # config's model_type
    hidden: int
    intermediate: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    tied: bool
    dtype: str = "bf16"  # the checkpoint's dtype (torch_dtype); what "as stored" counts in
    experts: int = 0  # routed experts per layer; 0: dense
    experts_per_token: int = 0
    expert_intermediate: int = 0
    shared_intermediate: int = 0  # a shared expert every token runs (Qwen2-MoE); 0: none
    qk_norm: bool = False  # per-head q/k norms (Qwen3)
    source: str = ""  # where the facts came from (a folder's config.json or a published config's URL)

    @property
    def moe(self) -> bool:
        return self.experts > 0

    def description(self) -> dict:
        """What decides the stream's bytes (not the name or where the facts came from)."""
        described = {k: v for k, v in self.__dict__.items() if k not in ("name", "source")}
        return dict(sorted(described.items()))


def _int(config: dict, key: str, where: str, default: int | None = None, upper: int = 1 << 24) -> int:
    value = config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= upper:
        if value is None:
            raise UserError(f"{where}: {key} is missing; a decoder config states it")
        raise UserError(f"{where}: {key} = {value!r} is not an integer between 1 and {upper:,}")
    return value


def config_facts(config: dict, name: str, where: str) -> ModelConfig:
    """The ModelConfig of a parsed config.json (a multimodal model's text_config where it has one)."""
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else None
    config = {**config, **text} if text else config
    hidden = _int(config, "hidden_size", where)
    heads = _int(config, "num_attention_heads", where, upper=1 << 14)
    kv_heads = _int(config, "num_key_value_heads", where, heads, upper=1 << 14)
    if heads % kv_heads:
        raise UserError(
            f"{where}: num_attention_heads {heads} is not a multiple of num_key_value_heads {kv_heads}"
        )
    head_dim = config.get("head_dim") or hidden // heads
    head_dim = _int({"head_dim": head_dim}, "head_dim", where)
    experts = config.get("num_local_experts") or config.get("num_experts") or 0
    experts = _int({"experts": experts}, "experts", where, upper=MAX_EXPERTS) if experts else 0
    per_token = _int(config, "num_experts_per_tok", where, upper=MAX_EXPERTS) if experts else 0
    if per_token > experts:
        raise UserError(f"{where}: num_experts_per_tok {per_token} is more than the {experts} experts")
    intermediate = _int(config, "intermediate_size", where)
    expert_intermediate = _int(config, "moe_intermediate_size", where, intermediate) if experts else 0
    shared = config.get("shared_expert_intermediate_size") or 0
    dtype_name = config.get("torch_dtype") or config.get("dtype") or "bfloat16"
    dtype = CONFIG_DTYPES.get(str(dtype_name))
    if dtype is None:
        raise UserError(
            f"{where}: torch_dtype {str(dtype_name)[:40]!r} is not one of {', '.join(CONFIG_DTYPES)}"
        )
    tied = config.get("tie_word_embeddings")
    return ModelConfig(
        name=name,
        family=str(config.get("model_type", "unknown"))[:40],
        hidden=hidden,
        intermediate=intermediate,
        layers=_int(config, "num_hidden_layers", where, upper=MAX_LAYERS),
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=_int(config, "vocab_size", where),
        tied=bool(tied) if tied is not None else False,
        dtype=dtype,
        experts=experts,
        experts_per_token=per_token,
        expert_intermediate=expert_intermediate,
        shared_intermediate=_int({"s": shared}, "s", where) if shared else 0,
        qk_norm=str(config.get("model_type", "")).startswith("qwen3"),
        source=where,
    )


def resolve_model(spec: str) -> tuple[ModelConfig, Path | None]:
    """(facts, the folder when MODEL is a local one) for a folder with config.json or a known name."""
    key = spec.strip().lower()
    if key in KNOWN_CONFIGS:
        facts = KNOWN_CONFIGS[key]
        return config_facts(facts, key, facts["_source"]), None
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise UserError(
            f"model {spec[:80]!r}: not a folder with a config.json nor a known config; known: "
            f"{', '.join(KNOWN_CONFIGS)}"
        )
    from .checkpoints.locate import read_config

    if not (path / "config.json").is_file():
        raise UserError(f"model {spec[:80]!r}: {path} has no config.json")
    return config_facts(read_config(path), path.resolve().name, str(path / "config.json")), path


@dataclass(frozen=True)
class Matrix:
    """One linear weight of the stream: ``rows`` outputs from ``cols`` inputs, with its checkpoint name."""

    kind: str  # q, k, v, o, gate, up, down, router, lm_head
    layer: int | None  # None: the LM head
    rows: int
    cols: int
    tensor: str
    expert: int | None = None  # which expert (MoE), or -1 for the shared expert


def layer_matrices(model: ModelConfig, layer: int) -> list[Matrix]:
    """The linears one token reads in ``layer``, in order (MoE: the router, then the active experts)."""
    h, base = model.hidden, f"model.layers.{layer}"
    attn = [
        Matrix("q", layer, model.heads * model.head_dim, h, f"{base}.self_attn.q_proj.weight"),
        Matrix("k", layer, model.kv_heads * model.head_dim, h, f"{base}.self_attn.k_proj.weight"),
        Matrix("v", layer, model.kv_heads * model.head_dim, h, f"{base}.self_attn.v_proj.weight"),
        Matrix("o", layer, h, model.heads * model.head_dim, f"{base}.self_attn.o_proj.weight"),
    ]
    if not model.moe:
        return attn + mlp(model.intermediate, h, layer, f"{base}.mlp")
    mixtral = model.family == "mixtral"
    moe = f"{base}.block_sparse_moe" if mixtral else f"{base}.mlp"
    found = [*attn, Matrix("router", layer, model.experts, h, f"{moe}.gate.weight")]
    for expert in active_experts(model, layer):
        found += mlp(model.expert_intermediate, h, layer, f"{moe}.experts.{expert}", expert, mixtral)
    if model.shared_intermediate:
        found += mlp(model.shared_intermediate, h, layer, f"{moe}.shared_expert", -1)
    return found


def mlp(
    inter: int, hidden: int, layer: int, prefix: str, expert: int | None = None, mixtral: bool = False
) -> list[Matrix]:
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    return [
        Matrix("gate", layer, inter, hidden, f"{prefix}.{names[0]}.weight", expert),
        Matrix("up", layer, inter, hidden, f"{prefix}.{names[1]}.weight", expert),
        Matrix("down", layer, hidden, inter, f"{prefix}.{names[2]}.weight", expert),
    ]


def active_experts(model: ModelConfig, layer: int) -> list[int]:
    """The experts one token runs in ``layer``: a fixed rotation (a router picks others, of the same size)."""
    k = model.experts_per_token
    return [(layer * k + i) % model.experts for i in range(k)]


def head_matrix(model: ModelConfig) -> Matrix:
    name = "model.embed_tokens.weight" if model.tied else "lm_head.weight"
    return Matrix("lm_head", None, model.vocab, model.hidden, name)


def stream_matrices(model: ModelConfig) -> list[Matrix]:
    """Every linear one decode step reads, in order: the layers, then the LM head."""
    return [m for layer in range(model.layers) for m in layer_matrices(model, layer)] + [head_matrix(model)]


def norm_elements(model: ModelConfig) -> int:
    """RMSNorm weights: two per layer and the final one (Qwen3: plus per-head q and k norms)."""
    per_layer = 2 * model.hidden + (2 * model.head_dim if model.qk_norm else 0)
    return model.layers * per_layer + model.hidden


def kv_bytes(model: ModelConfig, depth: int, dtype: str) -> int:
    """The KV cache one token reads at context depth ``depth``:
    2 x layers x kv_heads x head_dim x D x dtype bytes."""
    return 2 * model.layers * model.kv_heads * model.head_dim * depth * DTYPE_BYTES[dtype]


@dataclass(frozen=True)
class AccountRow:
    """One kind of weight: how many matrices are stored and streamed per token, and their bytes."""

    kind: str
    shape: str  # rows x cols of one matrix (or what the row counts)
    stored_count: int
    streamed_count: int
    stored_bytes: int  # in the checkpoint's dtype, every matrix stored (all experts; a tied head once)
    streamed_bytes: int  # in the engine's dtype, what one token reads


def accounting(model: ModelConfig, depth: int, run_dtype: str) -> list[AccountRow]:
    """Per-token bytes by kind, stored and streamed; the rows sum to the stream's bytes."""
    stored_b, run_b = DTYPE_BYTES[model.dtype], DTYPE_BYTES[run_dtype]
    rows: list[AccountRow] = []
    streamed = stream_matrices(model)[:-1]
    for kind in ("q", "k", "v", "o", "router", "gate", "up", "down"):
        found = [m for m in streamed if m.kind == kind]
        if not found:
            continue
        shapes = sorted({(m.rows, m.cols) for m in found}, reverse=True)
        stored = found
        routed = [m for m in found if m.expert is not None and m.expert >= 0]
        if routed:  # every expert is stored; a token streams the active ones (and the shared one)
            shared = [m for m in found if m.expert == -1]
            stored = [m for m in routed if m.layer == 0][:1] * (model.layers * model.experts) + shared
        rows.append(
            AccountRow(
                kind,
                " + ".join(f"{r}x{c}" for r, c in shapes),
                len(stored),
                len(found),
                sum(m.rows * m.cols for m in stored) * stored_b,
                sum(m.rows * m.cols for m in found) * run_b,
            )
        )
    head = model.vocab * model.hidden
    rows.append(
        AccountRow(
            "lm_head (tied: the embedding)" if model.tied else "lm_head",
            f"{model.vocab}x{model.hidden}",
            0 if model.tied else 1,
            1,
            0 if model.tied else head * stored_b,
            head * run_b,
        )
    )
    rows.append(
        AccountRow(
            "embedding row", f"1 of {model.vocab}x{model.hidden}", 1, 1, head * stored_b, model.hidden * run_b
        )
    )
    norms = norm_elements(model)
    rows.append(AccountRow("norms", f"{norms} weights", 1, 1, norms * stored_b, norms * run_b))
    rows.append(
        AccountRow(
            "kv cache",
            f"2x{model.layers}x{model.kv_heads}x{model.head_dim}x{depth}",
            0,
            1 if depth else 0,
            0,
            kv_bytes(model, depth, run_dtype),
        )
    )
    return rows


def linear_bytes(model: ModelConfig, dtype: str) -> int:
    """Bytes of every linear one token reads (layers and head), in ``dtype``."""
    return sum(m.rows * m.cols for m in stream_matrices(model)) * DTYPE_BYTES[dtype]


def stream_bytes(model: ModelConfig, depth: int, dtype: str) -> int:
    """Everything one decode step reads: linears, KV cache at ``depth``, norms and the embedding row."""
    return (
        linear_bytes(model, dtype)
        + kv_bytes(model, depth, dtype)
        + (norm_elements(model) + model.hidden) * DTYPE_BYTES[dtype]
    )


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
