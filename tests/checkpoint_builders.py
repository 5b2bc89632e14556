"""Small Hugging Face style checkpoints the checkpoint tests build for themselves (no downloads)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from safetensors.numpy import save_file

VOCAB, HIDDEN = 515, 48  # a vocabulary that does not split evenly, like real ones


def weights(rows: int = VOCAB, cols: int = HIDDEN, dtype=np.float16, seed: int = 0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((rows, cols)) * 0.05).astype(dtype)


def write_config(directory: Path, **config) -> None:
    (directory / "config.json").write_text(json.dumps({"model_type": "llama", **config}))


def single_file_model(directory: Path, tensors: dict[str, np.ndarray] | None = None, **config) -> Path:
    """config.json + model.safetensors with an untied lm_head by default."""
    directory.mkdir(parents=True, exist_ok=True)
    if tensors is None:
        tensors = {
            "model.embed_tokens.weight": weights(seed=1),
            "model.norm.weight": np.ones(HIDDEN, np.float16),
            "lm_head.weight": weights(seed=2),
        }
    save_file(tensors, str(directory / "model.safetensors"))
    write_config(directory, **({"tie_word_embeddings": False} | config))
    return directory


def sharded_model(directory: Path, shards: list[dict[str, np.ndarray]], **config) -> Path:
    """model-0000K-of-0000N.safetensors shards plus model.safetensors.index.json."""
    directory.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    for number, tensors in enumerate(shards, start=1):
        name = f"model-{number:05d}-of-{len(shards):05d}.safetensors"
        save_file(tensors, str(directory / name))
        weight_map.update({tensor: name for tensor in tensors})
    index = {"metadata": {"total_size": 0}, "weight_map": weight_map}
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    write_config(directory, **config)
    return directory


def bf16_model(directory: Path, rows: int = VOCAB, cols: int = HIDDEN, **config):
    """A tied-embedding model stored in bf16 (written by torch, as real bf16 checkpoints are)."""
    import torch
    from safetensors.torch import save_file as save_torch

    directory.mkdir(parents=True, exist_ok=True)
    generator = torch.Generator().manual_seed(3)
    embedding = (torch.randn(rows, cols, generator=generator) * 0.05).to(torch.bfloat16)
    save_torch(
        {"model.embed_tokens.weight": embedding, "model.norm.weight": torch.ones(cols).to(torch.bfloat16)},
        str(directory / "model.safetensors"),
    )
    write_config(directory, **({"tie_word_embeddings": True} | config))
    return directory, embedding


def hub_snapshot(cache: Path, repo_id: str, revision: str = "0123456789abcdef0123456789abcdef01234567",
                 set_main: bool = True) -> Path:
    """The Hugging Face hub cache layout: models--ORG--NAME/snapshots/<revision>/ and refs/main."""
    repo_dir = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo_dir / "snapshots" / revision
    single_file_model(snapshot)
    # As huggingface_hub stores them: snapshot files are symlinks into blobs/.
    blob = repo_dir / "blobs" / f"{revision}-model"
    blob.parent.mkdir(exist_ok=True)
    (snapshot / "model.safetensors").rename(blob)
    (snapshot / "model.safetensors").symlink_to(blob)
    if set_main:
        (repo_dir / "refs").mkdir(parents=True, exist_ok=True)
        (repo_dir / "refs" / "main").write_text(revision)
    return snapshot
