"""A checkpoint tensor as a WeightSource: rows memory-mapped from the file, in the stored dtype.

fp32 and fp16 rows are views of the mapped file (nothing copied); bf16 rows are widened to float32,
which is exact (bf16 is the top half of an fp32), because numpy has no bf16 type.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import UserError
from .safetensors_file import TensorEntry
from .tensor_hash import tensor_sha256

# Little-endian as safetensors stores it; bf16 is read as its raw 16-bit patterns.
MAPPED_DTYPES: dict[str, np.dtype[Any]] = {
    "fp32": np.dtype("<f4"), "fp16": np.dtype("<f2"), "bf16": np.dtype("<u2"),
}
BF16_NOTE = "bf16 weights are read as exact float32 (numpy has no bf16); engines convert where they must"


def bf16_bits_to_float32(bits: np.ndarray) -> np.ndarray:
    """Exact: a bf16 value is an fp32 whose low 16 bits are zero."""
    return (bits.astype(np.uint32) << np.uint32(16)).view(np.float32)


class CheckpointWeights:
    """One 2-D tensor of a safetensors checkpoint, shape (rows, cols) = (vocab, hidden)."""

    def __init__(self, entry: TensorEntry, model: str, reason: str, revision: str | None = None,
                 use_hash_cache: bool = True):
        dtype = entry.dtype
        if dtype is None or dtype not in MAPPED_DTYPES or len(entry.shape) != 2:
            raise ValueError(f"{entry.name}: a 2-D F32/F16/BF16 tensor is needed")
        itemsize = MAPPED_DTYPES[dtype].itemsize
        if entry.offset % itemsize:
            raise UserError(
                f"{entry.path}: tensor {entry.name!r} starts at byte {entry.offset}, not aligned to "
                f"its {itemsize}-byte elements; the checkpoint is malformed (rewrite it with "
                "safetensors' save_file)"
            )
        self.entry = entry
        self._dtype: str = dtype
        self._shape: tuple[int, int] = (entry.shape[0], entry.shape[1])
        self.model = model
        self.reason = reason
        self.revision = revision
        self.use_hash_cache = use_hash_cache
        self.inputs: list[Path] = [entry.path]  # every file of the checkpoint (set by checkpoint_workload)

    @property
    def dtype(self) -> str:
        return self._dtype

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape

    @cached_property
    def sha256(self) -> str:
        return tensor_sha256(self.entry, self.use_hash_cache)

    def description(self) -> dict:
        """What the fingerprint hashes: only the bytes' identity, so it is the same on every machine
        whatever the model directory is called or where it lies (provenance() has those)."""
        return {
            "source": "checkpoint",
            "format": "safetensors",
            "tensor_sha256": self.sha256,
            "shape": list(self.shape),
            "dtype": self.dtype,
        }

    def provenance(self) -> dict[str, str | int | None]:
        """Where the tensor came from and why it was chosen, for the record (not the fingerprint)."""
        return {
            "model": self.model,
            "revision": self.revision,
            "file": str(self.entry.path),
            "tensor": self.entry.name,
            "tensor_sha256": self.sha256,
            "stored_dtype": self.entry.safetensors_dtype,
            "chosen_because": self.reason,
        }

    def check_file(self) -> None:
        """The file still holds the tensor: a file truncated under us would kill the process with
        SIGBUS on the first mapped read, which Python cannot catch; this turns it into an error."""
        needed = self.entry.offset + self.entry.nbytes
        try:
            size = os.stat(self.entry.path).st_size
        except OSError as exc:
            raise UserError(f"{self.entry.path}: cannot be read any more ({exc.strerror or exc})") from None
        if size < needed:
            raise UserError(f"{self.entry.path}: the file shrank to {size:,} bytes while in use; tensor "
                            f"{self.entry.name!r} needs {needed:,} (was it rewritten or truncated?)")

    @cached_property
    def _mapped(self) -> np.ndarray:
        self.check_file()
        return np.memmap(self.entry.path, dtype=MAPPED_DTYPES[self.dtype], mode="r",
                         offset=self.entry.offset, shape=self.shape)

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop): fp32/fp16 views of the mapped file, bf16 as exact float32."""
        rows = self.shape[0]
        if not 0 <= start <= stop <= rows:
            raise ValueError(f"rows [{start}, {stop}) outside 0..{rows}")
        self.check_file()
        block = np.asarray(self._mapped[start:stop])
        return bf16_bits_to_float32(block) if self.dtype == "bf16" else block

    def __getstate__(self) -> dict:
        # A memmap pickles as a full copy of its data; a worker process maps the file again instead.
        state = dict(self.__dict__)
        state.pop("_mapped", None)
        return state
