"""Which weights one decode step of a model reads, in order, from its config facts alone: every linear layer
by layer (q, k, v, o, gate, up, down; MoE: the router and the active experts), the LM head (tied to the
embedding or not), the norms, the embedding row and the KV cache read at context depth D:
2 x layers x kv_heads x head_dim x D x dtype bytes. What is stored (every expert, a tied matrix once, in the
checkpoint's dtype) and what one token streams (the active experts, the head and the embedding row, in the
engine's dtype) are counted apart (``accounting``)."""

from __future__ import annotations

from dataclasses import dataclass

from .model_config import ModelConfig
from .spec import DTYPE_BYTES


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
