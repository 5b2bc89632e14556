"""The facts of a model's Hugging Face config.json that decide what one decode step reads: from a local
folder with a ``config.json`` or a name from ``KNOWN_CONFIGS`` (config facts only, each with its source)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from .known_models import KNOWN_CONFIGS

MAX_LAYERS = 1024
MAX_EXPERTS = 4096
CONFIG_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


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
