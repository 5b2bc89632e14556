"""Workloads from local Hugging Face checkpoints: ``hf:PATH[:TENSOR]`` and ``hf:ORG/NAME[:TENSOR]``.

PATH is a model directory (config.json plus model.safetensors, or shards with
model.safetensors.index.json) or a single .safetensors file; ORG/NAME is looked up in the local
Hugging Face cache only. The chosen tensor's real bytes are memory-mapped in their stored dtype and
its sha256 makes the workload fingerprint, so the same tensor has the same fingerprint everywhere.
"""

from __future__ import annotations

from ..spec import Workload
from .choose import choose_tensor
from .locate import Checkpoint, hub_cache_dir, open_checkpoint, split_spec
from .safetensors_file import TensorEntry, read_header
from .weights import BF16_NOTE, CheckpointWeights


def checkpoint_workload(spec: str, use_hash_cache: bool = True) -> Workload:
    """The Workload for ``hf:PATH[:TENSOR]``; raises UserError (one line) for any bad input."""
    path_text, requested = split_spec(spec)
    checkpoint = open_checkpoint(path_text)
    entry, reason = choose_tensor(checkpoint, requested, spec)
    weights = CheckpointWeights(entry, checkpoint.model, reason, checkpoint.revision, use_hash_cache)
    weights.inputs = [entry.path, *checkpoint.files]
    vocab, hidden = weights.shape
    where = checkpoint.model + (f"@{checkpoint.revision[:12]}" if checkpoint.revision else "")
    # No sha256 here: hashing reads the whole tensor, and a tensor too large for this machine must be
    # refused (by the memory preflight) before that; the record's origin carries the hash.
    note = (f"checkpoint {where} ({checkpoint.layout}): tensor {entry.name} [{vocab}, {hidden}] "
            f"{weights.dtype}, {entry.nbytes:,} bytes; chosen because {reason}")
    if weights.dtype == "bf16":
        note += f"; {BF16_NOTE}"
    return Workload(
        name=f"hf:{checkpoint.model}:{entry.name}",
        hidden=hidden,
        vocab=vocab,
        dtype=weights.dtype,
        source=weights,
        note=note,
    )


__all__ = [
    "BF16_NOTE",
    "Checkpoint",
    "CheckpointWeights",
    "TensorEntry",
    "checkpoint_workload",
    "choose_tensor",
    "hub_cache_dir",
    "open_checkpoint",
    "read_header",
    "split_spec",
]
