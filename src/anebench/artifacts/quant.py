"""Weight encodings a Core ML bundle can store: fp16, int8 per channel, n-bit LUT per channel group.

Each encoder takes one split's rows (as fp16) and returns exactly what goes into the ML program's
constants, so the builder never holds more than the encoded bytes plus one split's source rows.
``EncodedWeight.decode`` is the dense matrix Core ML computes with; the read-back of a written bundle
(``mlprogram.read_split``) must reproduce it bit for bit.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..errors import UserError

# coremltools leaves a const of at most this many elements uncompressed (weight_threshold), with only a
# warning; we refuse instead, so a "lut6" bundle never silently holds fp16 weights.
PALETTIZE_MIN_ELEMENTS = 2048
LUT_NBITS = {"lut4": 4, "lut6": 6}
INT8_LEVELS = 127
# Rows are quantised in chunks of about this many values, so the float32 temporaries stay small.
_CHUNK_VALUES = 1 << 22
RowReader = Callable[[int, int], np.ndarray]  # rows [lo, hi) of one split, as stored


@dataclass
class EncodedWeight:
    """One split's weights as stored: fp16 values, int8 + per-row scale, or LUT indices + tables."""

    kind: str  # "fp16" | "int8" | "lut"
    values: np.ndarray  # (rows, hidden): float16 | int8 | uint8 indices
    table: np.ndarray | None = None  # int8: (rows,) fp16 scales; lut: (groups, 2**nbits) fp16
    nbits: int | None = None
    group_size: int | None = None

    @property
    def rows(self) -> int:
        return self.values.shape[0]

    def decode(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) of the dense weight Core ML computes with, as float32."""
        stop = self.rows if stop is None else stop
        values = self.values[start:stop]
        if self.kind == "fp16":
            return values.astype(np.float32)
        if self.kind == "int8":
            return values.astype(np.float32) * self.table[start:stop, None].astype(np.float32)
        groups = np.arange(start, stop) // self.group_size
        return self.table[groups[:, None], values].astype(np.float32)


def check_palettizable(rows: int, hidden: int, nbits: int, group_size: int, label: str) -> None:
    """Refuse a split that coremltools would skip (with a warning only) or that cannot be grouped."""
    if rows % group_size:
        raise UserError(
            f"{label}: {rows} rows are not divisible by the LUT group size {group_size}; "
            "choose a vocabulary or split size that is a multiple of it"
        )
    if rows * hidden <= PALETTIZE_MIN_ELEMENTS:
        raise UserError(
            f"{label}: a weight of {rows} x {hidden} = {rows * hidden} values is too small to be "
            f"palettised (coremltools needs more than {PALETTIZE_MIN_ELEMENTS}); use fp16 or a larger head"
        )
    if group_size * hidden < (1 << nbits):
        raise UserError(
            f"{label}: a group of {group_size} rows x {hidden} holds fewer values than the "
            f"{1 << nbits} entries of a {nbits}-bit table; use fewer bits or a larger hidden size"
        )


def _chunk_rows(hidden: int, unit: int = 1) -> int:
    """Rows per chunk: about _CHUNK_VALUES values, a multiple of ``unit`` (a LUT group)."""
    return max(unit, (_CHUNK_VALUES // max(hidden, 1)) // unit * unit)


def encode_fp16(read: RowReader, rows: int, hidden: int) -> EncodedWeight:
    """The split as fp16, filled chunk by chunk so no second copy of it ever exists."""
    values = np.empty((rows, hidden), dtype=np.float16)
    step = _chunk_rows(hidden)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        values[lo:hi] = read(lo, hi)
    return EncodedWeight("fp16", values)


def encode_int8(read: RowReader, rows: int, hidden: int) -> EncodedWeight:
    """Symmetric per-row int8 with an fp16 scale (Core ML's constexpr_blockwise_shift_scale)."""
    values = np.empty((rows, hidden), dtype=np.int8)
    scales = np.empty(rows, dtype=np.float16)
    step = _chunk_rows(hidden)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        block = np.asarray(read(lo, hi), dtype=np.float32)
        scale = (np.abs(block).max(axis=1) / INT8_LEVELS).astype(np.float16)
        scale[scale == 0] = 1  # an all-zero row: any scale decodes it exactly
        scales[lo:hi] = scale
        block /= scale.astype(np.float32)[:, None]
        np.rint(block, out=block)
        values[lo:hi] = np.clip(block, -INT8_LEVELS, INT8_LEVELS)
    return EncodedWeight("int8", values, scales)


def palettize_uniform(read: RowReader, rows: int, hidden: int, nbits: int, group_size: int) -> EncodedWeight:
    """A linear table from each group's min to max; the fast mode for synthetic weights.

    The table values do not change how many bytes a call reads, so for seeded uniform weights a
    linear table is as good as k-means and takes a fraction of a second per split.
    """
    levels = (1 << nbits) - 1
    indices = np.empty((rows, hidden), dtype=np.uint8)
    tables = np.empty((rows // group_size, levels + 1), dtype=np.float16)
    ramp = np.arange(levels + 1, dtype=np.float32)
    step = _chunk_rows(hidden, group_size)
    for lo in range(0, rows, step):
        hi = min(rows, lo + step)
        block = np.array(read(lo, hi), dtype=np.float32).reshape((hi - lo) // group_size, -1)
        low = block.min(axis=1, keepdims=True)
        width = (block.max(axis=1, keepdims=True) - low) / levels
        width[width == 0] = 1  # a constant group: every index decodes to its one value
        tables[lo // group_size:hi // group_size] = low + ramp * width
        block -= low
        block /= width
        np.rint(block, out=block)
        np.clip(block, 0, levels, out=block)
        indices[lo:hi] = block.reshape(hi - lo, hidden)
    return EncodedWeight("lut", indices, tables, nbits, group_size)


def kmeans_available() -> bool:
    return any(importlib.util.find_spec(name) for name in ("kmeans1d", "sklearn"))


def palettize_kmeans(read: RowReader, rows: int, hidden: int, nbits: int, group_size: int) -> EncodedWeight:
    """coremltools' own palettizer (k-means per channel group), for real weights where tables matter."""
    if not kmeans_available():
        raise UserError(
            "lut mode 'kmeans' needs kmeans1d or scikit-learn (pip install kmeans1d); "
            "or use --lut-mode uniform"
        )
    from ._coremltools import coremltools

    coremltools()
    from coremltools.optimize.coreml._quantization_passes import palettize_weights

    dense = encode_fp16(read, rows, hidden).values.reshape(rows, hidden, 1, 1)
    params = palettize_weights.blockwise_compress(
        dense, "KMEANS", nbits, [group_size, 0, 0, 0], num_kmeans_workers=min(os.cpu_count() or 1, 8)
    )
    if params is None:  # coremltools declined (it only warns); check_palettizable should prevent this
        raise UserError(f"coremltools could not palettise a {rows} x {hidden} split with group size {group_size}")
    indices = np.asarray(params.indices, dtype=np.uint8).reshape(rows, hidden)
    tables = np.asarray(params.lut, dtype=np.float16).reshape(rows // group_size, 1 << nbits)
    return EncodedWeight("lut", indices, tables, nbits, group_size)


def encode(read: RowReader, rows: int, hidden: int, quant: str, lut_mode: str = "uniform",
           group_size: int = 8) -> EncodedWeight:
    """Encode one split whose rows ``read(lo, hi)`` returns, chunk by chunk, as ``quant`` stores it."""
    if quant == "fp16":
        return encode_fp16(read, rows, hidden)
    if quant == "int8":
        return encode_int8(read, rows, hidden)
    nbits = LUT_NBITS[quant]
    if lut_mode == "kmeans":
        return palettize_kmeans(read, rows, hidden, nbits, group_size)
    return palettize_uniform(read, rows, hidden, nbits, group_size)
