"""Which tensor to measure: the one named, else the output projection, else the tied input embedding."""

from __future__ import annotations

from ...errors import UserError
from .locate import Checkpoint
from .safetensors_file import TensorEntry

OUTPUT_NAMES = ("lm_head.weight", "embed_out.weight", "output.weight")
OUTPUT_SUFFIXES = (".lm_head.weight",)
EMBEDDING_NAMES = (
    "model.embed_tokens.weight",
    "transformer.wte.weight",
    "gpt_neox.embed_in.weight",
    "tok_embeddings.weight",
    "embed_tokens.weight",
    "wte.weight",
)
EMBEDDING_SUFFIXES = (".embed_tokens.weight", ".word_embeddings.weight", ".wte.weight", ".embed_in.weight")
LISTED_TENSORS = 12  # keep the error to one readable line


def ties_embeddings(config: dict) -> bool:
    """tie_word_embeddings from config.json, also where a multimodal model keeps it in text_config."""
    for section in (config, config.get("text_config") or {}):
        if isinstance(section, dict) and "tie_word_embeddings" in section:
            return bool(section["tie_word_embeddings"])
    return False


def two_d_tensors(checkpoint: Checkpoint) -> list[TensorEntry]:
    return [e for e in checkpoint.tensors.values() if len(e.shape) == 2]


def list_two_d(checkpoint: Checkpoint) -> str:
    entries = sorted(two_d_tensors(checkpoint), key=lambda e: e.name)
    shown = ", ".join(f"{e.name} {e.describe_shape()}" for e in entries[:LISTED_TENSORS])
    more = f" and {len(entries) - LISTED_TENSORS} more" if len(entries) > LISTED_TENSORS else ""
    return f"2-D tensors there: {shown}{more}" if entries else "it has no 2-D tensors"


def _first_match(names: list[str], exact: tuple[str, ...], suffixes: tuple[str, ...]) -> str | None:
    for name in exact:
        if name in names:
            return name
    # Among suffix matches prefer the shortest (outermost) name, e.g. the language model's, not a tower's.
    matches = sorted((n for n in names if n.endswith(suffixes)), key=lambda n: (n.count("."), n))
    return matches[0] if matches else None


def choose_tensor(checkpoint: Checkpoint, requested: str | None, spec: str) -> tuple[TensorEntry, str]:
    """The tensor to measure and, in words, why this one."""
    if requested is not None:
        entry = checkpoint.tensors.get(requested)
        if entry is None:
            raise UserError(
                f"{spec}: no tensor {requested!r} in {checkpoint.directory}; {list_two_d(checkpoint)}"
            )
        reason = "named in the workload spec"
    else:
        entry, reason = _default_tensor(checkpoint, spec)
    if len(entry.shape) != 2:
        raise UserError(f"{spec}: tensor {entry.name!r} has shape {entry.describe_shape()}, not 2-D "
                        f"[vocab, hidden]; {list_two_d(checkpoint)}")
    if entry.dtype is None:
        raise UserError(f"{spec}: tensor {entry.name!r} is {entry.safetensors_dtype}; anebench streams "
                        "F32, F16 or BF16 weights")
    if 0 in entry.shape:
        raise UserError(f"{spec}: tensor {entry.name!r} is empty (shape {entry.describe_shape()})")
    return entry, reason


def _default_tensor(checkpoint: Checkpoint, spec: str) -> tuple[TensorEntry, str]:
    two_d = [e.name for e in two_d_tensors(checkpoint)]
    output = _first_match(two_d, OUTPUT_NAMES, OUTPUT_SUFFIXES)
    embedding = _first_match(two_d, EMBEDDING_NAMES, EMBEDDING_SUFFIXES)
    tied = ties_embeddings(checkpoint.config)
    if output and not (tied and embedding):
        return checkpoint.tensors[output], f"the output projection ({output}) computes the logits"
    if embedding:
        why = (
            "config.json sets tie_word_embeddings, so the output projection reuses the input embedding"
            if tied
            else "no output projection (lm_head) is stored, so the model ties it to the input embedding"
        )
        return checkpoint.tensors[embedding], f"{why} ({embedding})"
    raise UserError(f"{spec}: found no lm_head or input embedding in {checkpoint.directory}; "
                    f"name a tensor as hf:PATH:TENSOR; {list_two_d(checkpoint)}")
