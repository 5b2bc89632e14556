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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import partial

import numpy as np

from ..errors import UserError
from ..workloads import LUT_BITS, LUT_GROUP_ROWS

# coremltools leaves a const of at most this many elements uncompressed (weight_threshold), with only a
# warning; we refuse instead, so a "lut6" bundle never silently holds fp16 weights.
PALETTIZE_MIN_ELEMENTS = 2048
LUT_NBITS = LUT_BITS
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

    def lookup(self) -> np.ndarray:
        """The int8 scales or the LUT tables; fp16 weights have none."""
        if self.table is None:
            raise ValueError(f"{self.kind} weights carry no scales or lookup tables")
        return self.table

    def lut_layout(self) -> tuple[int, int]:
        """(bits per index, rows per table) of LUT weights."""
        if self.nbits is None or self.group_size is None:
            raise ValueError(f"{self.kind} weights are not palettised")
        return self.nbits, self.group_size

    def decode(self, start: int = 0, stop: int | None = None) -> np.ndarray:
        """Rows [start, stop) of the dense weight Core ML computes with, as float32."""
        stop = self.rows if stop is None else stop
        values = self.values[start:stop]
        if self.kind == "fp16":
            return values.astype(np.float32)
        if self.kind == "int8":
            return values.astype(np.float32) * self.lookup()[start:stop, None].astype(np.float32)
        groups = np.arange(start, stop) // self.lut_layout()[1]
        return self.lookup()[groups[:, None], values].astype(np.float32)


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


KMEANS_MISSING = (
    "lut mode 'kmeans' needs kmeans1d (pip install 'anebench[coreml]', or pip install kmeans1d); "
    "use --lut-mode uniform for a fast linear table"
)


def kmeans_available() -> bool:
    return importlib.util.find_spec("kmeans1d") is not None


def kmeans_table(group: np.ndarray, nbits: int) -> tuple[np.ndarray, np.ndarray]:
    """(table, indices) of one channel group: optimal 1-D k-means over its fp16 values (kmeans1d).

    This is coremltools' own k-means palettisation for fp16 groups of 10,000 values or more, done for
    every group size: below that size coremltools switches to scikit-learn (Lloyd's k-means, a heuristic,
    and a dependency nothing here declares). kmeans1d finds the optimum, so the tables are the same as
    coremltools' wherever it uses kmeans1d. Clustering all of a group's values equals coremltools'
    clustering of the distinct values weighted by their counts (the optimum is the same problem); the
    tables are fp16 and zero past the number of distinct values, as coremltools writes them.
    """
    import kmeans1d

    flat = np.asarray(group, dtype=np.float16).reshape(-1)
    order = np.argsort(flat, kind="stable")
    ordered = flat[order].astype(np.float64)
    distinct = int(np.count_nonzero(np.diff(ordered))) + 1
    size = 1 << nbits
    clustered = kmeans1d.cluster(ordered.tolist(), min(distinct, size))
    table = np.zeros(size, dtype=np.float16)
    table[:len(clustered.centroids)] = np.asarray(clustered.centroids, dtype=np.float64).astype(np.float16)
    indices = np.empty(flat.size, dtype=np.uint8)
    indices[order] = np.asarray(clustered.clusters, dtype=np.uint8)
    return table, indices.reshape(np.shape(group))


def kmeans_workers() -> int:
    return min(os.cpu_count() or 1, 8)


def palettize_kmeans(read: RowReader, rows: int, hidden: int, nbits: int, group_size: int,
                     workers: int | None = None) -> EncodedWeight:
    """k-means per channel group, for real weights where the table values matter (see ``kmeans_table``).

    kmeans1d runs in C through ctypes, which releases the GIL, so the groups of a chunk are clustered
    on ``workers`` threads (coremltools used a process pool of up to 8 for the same work).
    """
    if not kmeans_available():
        raise UserError(KMEANS_MISSING)
    workers = kmeans_workers() if workers is None else max(1, workers)
    indices = np.empty((rows, hidden), dtype=np.uint8)
    tables = np.empty((rows // group_size, 1 << nbits), dtype=np.float16)
    step = _chunk_rows(hidden, group_size)

    def one(block: np.ndarray, first_row: int, group: int) -> None:
        start = group * group_size
        table, group_indices = kmeans_table(block[start:start + group_size], nbits)
        tables[(first_row + start) // group_size] = table
        indices[first_row + start:first_row + start + group_size] = group_indices

    pool = ThreadPoolExecutor(workers) if workers > 1 and rows > group_size else None
    try:
        for lo in range(0, rows, step):
            hi = min(rows, lo + step)
            block = np.asarray(read(lo, hi), dtype=np.float16)
            groups = range((hi - lo) // group_size)
            if pool is None:
                for group in groups:
                    one(block, lo, group)
            else:
                list(pool.map(partial(one, block, lo), groups))  # list(): a worker's exception raises here
    finally:
        if pool is not None:
            pool.shutdown()
    return EncodedWeight("lut", indices, tables, nbits, group_size)


def encode(read: RowReader, rows: int, hidden: int, quant: str, lut_mode: str = "uniform",
           group_size: int = LUT_GROUP_ROWS) -> EncodedWeight:
    """Encode one split whose rows ``read(lo, hi)`` returns, chunk by chunk, as ``quant`` stores it."""
    if quant == "fp16":
        return encode_fp16(read, rows, hidden)
    if quant == "int8":
        return encode_int8(read, rows, hidden)
    nbits = LUT_NBITS[quant]
    if lut_mode == "kmeans":
        return palettize_kmeans(read, rows, hidden, nbits, group_size)
    return palettize_uniform(read, rows, hidden, nbits, group_size)
