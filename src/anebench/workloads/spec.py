"""The workload spec: an LM head, its synthetic weights, bytes and fingerprint.

A workload is an LM head: ``logits = W @ x`` with ``W`` of shape (vocab, hidden). Synthetic weights
are generated block by block from a seed, so any slice can be regenerated on its own (the output check
and the bundle builder rely on that) and no engine ever needs a second full-size copy.

Its own module, below both the package (catalog and spec parsing) and ``checkpoints`` (``hf:`` specs),
so neither imports the other for it.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Protocol

import numpy as np

from ..errors import UserError

DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
NUMPY_DTYPES = {"fp32": np.float32, "fp16": np.float16}
GENERATOR_VERSION = "anebench-synthetic-v1"
GEN_BLOCK_ROWS = 256  # rows per independently seeded block; part of the generator's definition
FILL_BLOCK_ROWS = GEN_BLOCK_ROWS * 16  # rows an engine copies into its buffer at a time
QUANTS = (None, "fp16", "int8", "lut4", "lut6")  # artifact storage (bundles); None: as the dtype
MAX_DIMENSION = 1 << 24  # 16.7 M rows or columns: 64x the largest vocabulary or hidden size shipped
MAX_ELEMENTS = 1 << 40  # 2 TB of fp16: beyond any memory an engine here has
LUT_GROUP_ROWS = 8  # per-grouped-channel palettisation: one lookup table per 8 output rows (published)
QUANT_BITS = {"lut4": 4, "lut6": 6, "int8": 8}  # bits per stored weight
LUT_BITS = {q: b for q, b in QUANT_BITS.items() if q.startswith("lut")}


def quantized_bytes(rows: int, hidden: int, quant: str) -> int:
    """Bytes a quantized head stores: packed LUT indices plus one fp16 table per LUT_GROUP_ROWS rows, or
    int8 values plus one fp16 scale per row."""
    bits = QUANT_BITS[quant]
    if quant == "int8":
        return rows * hidden + rows * 2
    return rows * hidden * bits // 8 + math.ceil(rows / LUT_GROUP_ROWS) * (2**bits) * 2


def round_to_bf16(values: np.ndarray) -> np.ndarray:
    """Round float32 values to the nearest bfloat16 (ties to even), kept as float32 (numpy has no bf16)."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounding = ((bits >> 16) & 1) + np.uint32(0x7FFF)
    return ((bits + rounding) & np.uint32(0xFFFF0000)).view(np.float32)


class WeightSource(Protocol):
    """Where a workload's weights come from: synthetic (seeded) or a checkpoint tensor."""

    def description(self) -> dict: ...

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) as stored (fp16/fp32 numpy dtype; bf16 as exact float32)."""
        ...

    def provenance(self) -> dict:
        """Where the weights came from, for the record (never part of the fingerprint)."""
        ...


@dataclass(frozen=True)
class SyntheticWeights:
    """Random sign and mantissa with one fixed exponent: magnitudes in [2^e, 2^(e+1)), 2^e <= 1/sqrt(hidden).

    Values are written as bit patterns straight from the generator's raw 64-bit output (little-endian),
    one generator per block of GEN_BLOCK_ROWS rows: ~10x faster than drawing floats and rounding them,
    which keeps a 1 GB head's generation to a few seconds. Every value is exact in its dtype.
    """

    hidden: int
    vocab: int
    dtype: str
    seed: int

    def description(self) -> dict:
        return {"generator": GENERATOR_VERSION, "block_rows": GEN_BLOCK_ROWS, "seed": self.seed}

    def provenance(self) -> dict:
        return {}  # generated here from the seed in the description

    @property
    def exponent(self) -> int:
        return max(-14, math.floor(math.log2(1 / math.sqrt(self.hidden))))

    def _block_bits(self, block: int, rows: int) -> np.ndarray:
        count = rows * self.hidden
        width = 4 if self.dtype == "fp32" else 2
        rng = np.random.default_rng((self.seed, block, self.hidden, self.vocab))
        raw = rng.bit_generator.random_raw(-(-count * width // 8))
        bits = raw.view(np.uint32 if width == 4 else np.uint16)[:count].reshape(rows, self.hidden)
        if self.dtype == "fp16":
            return ((bits & np.uint16(0x83FF)) | np.uint16((self.exponent + 15) << 10)).view(np.float16)
        if self.dtype == "bf16":
            pattern = (bits & np.uint16(0x807F)) | np.uint16((self.exponent + 127) << 7)
            return (pattern.astype(np.uint32) << np.uint32(16)).view(np.float32)
        return ((bits & np.uint32(0x807FFFFF)) | np.uint32((self.exponent + 127) << 23)).view(np.float32)

    def read_rows(self, start: int, stop: int) -> np.ndarray:
        if not 0 <= start <= stop <= self.vocab:
            raise ValueError(f"rows [{start}, {stop}) outside 0..{self.vocab}")
        blocks = []
        first, last = start // GEN_BLOCK_ROWS, (stop - 1) // GEN_BLOCK_ROWS if stop > start else -1
        for block in range(first, last + 1):
            rows = min(GEN_BLOCK_ROWS, self.vocab - block * GEN_BLOCK_ROWS)
            values = self._block_bits(block, rows)
            lo = max(start - block * GEN_BLOCK_ROWS, 0)
            hi = min(stop - block * GEN_BLOCK_ROWS, rows)
            blocks.append(values[lo:hi])
        if not blocks:
            return np.empty((0, self.hidden), dtype=np.float16 if self.dtype == "fp16" else np.float32)
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks)


@dataclass(frozen=True)
class Workload:
    """An LM head to stream: W is (vocab, hidden) in ``dtype``; one call reads every weight once."""

    name: str
    hidden: int
    vocab: int
    dtype: str = "fp16"
    seed: int = 0
    batch: int = 1
    quant: str | None = None  # artifact-level quantization (a bundle's lut/int8); None = as dtype
    # Input vectors one predict of a token-batched bundle multiplies; 1 is the published layout.
    # ``batch`` stays what it was: vectors per call on matmul engines, separate predicts per call on an
    # engine that runs bundles.
    tokens: int = 1
    source: WeightSource | None = field(default=None, compare=False, repr=False)
    note: str = ""

    def __post_init__(self) -> None:
        if self.dtype not in DTYPE_BYTES:
            raise UserError(f"dtype {self.dtype!r} is not supported; valid: {', '.join(DTYPE_BYTES)}")
        if self.quant not in QUANTS:
            raise UserError(f"workload {self.name!r}: quant {self.quant!r} is not supported; valid: "
                            f"{', '.join(q for q in QUANTS if q)} or none")
        if self.hidden < 1 or self.vocab < 1 or self.batch < 1 or self.tokens < 1:
            raise UserError(f"workload {self.name!r}: hidden, vocab, batch and tokens must be positive")
        if max(self.hidden, self.vocab) > MAX_DIMENSION or max(self.batch, self.tokens) > MAX_DIMENSION:
            raise UserError(f"workload {self.name[:80]!r}: hidden, vocab, batch and tokens must be at most "
                            f"{MAX_DIMENSION:,}")
        if self.hidden * self.vocab > MAX_ELEMENTS:
            raise UserError(
                f"workload {self.name[:80]!r}: {self.vocab:,} x {self.hidden:,} weights is more than "
                f"{MAX_ELEMENTS:,}"
            )

    @property
    def weights(self) -> WeightSource:
        return self.source or SyntheticWeights(self.hidden, self.vocab, self.dtype, self.seed)

    @property
    def shape(self) -> tuple[int, int]:
        return (self.vocab, self.hidden)

    @property
    def weight_bytes(self) -> int:
        """Bytes one call reads with the weights in the workload's own dtype (before any quantization)."""
        return self.vocab * self.hidden * DTYPE_BYTES[self.dtype]

    @property
    def stored_bytes(self) -> int:
        """Bytes one call reads as a quantized artifact stores them: packed indices plus lookup tables
        (fp16, one per LUT_GROUP_ROWS rows), or int8 values plus one fp16 scale per row."""
        if self.quant in QUANT_BITS:
            return quantized_bytes(self.vocab, self.hidden, self.quant)
        return self.weight_bytes

    def bytes_as(self, dtype: str) -> int:
        return self.vocab * self.hidden * DTYPE_BYTES[dtype]

    def description(self) -> dict:
        """The canonical description hashed into the fingerprint: everything that changes the bytes.

        ``tokens`` appears only when it is not 1, so every fingerprint made before it existed (and every
        published record matched by one) is unchanged.
        """
        described = {
            "kind": "lm_head",
            "shape": [self.vocab, self.hidden],
            "dtype": self.dtype,
            "batch": self.batch,
            "quant": self.quant,
            "weights": self.weights.description(),
        }
        if self.tokens != 1:
            described["tokens"] = self.tokens
        return described

    @cached_property
    def fingerprint(self) -> str:
        return _sha256_of(self.description())

    def streamed_fingerprint(self, run_dtype: str) -> str:
        """The fingerprint of what an engine streams: the workload's own when it reads the weights as
        stored (dtype, or quantization), else a variant's that names the storage it read (e.g. fp16
        weights streamed as fp32 upcasts, 2x the bytes), so the two never pair in a comparison."""
        as_stored = self.quant or self.dtype
        if run_dtype == as_stored:
            return self.fingerprint
        if self.quant:  # engines refuse this up front (engines.base.check_streams_as_stored)
            raise ValueError(f"{self.name}: quantized ({self.quant}) weights streamed as {run_dtype}")
        return _sha256_of({**self.description(), "streamed_as": run_dtype})

    def with_batch(self, batch: int) -> Workload:
        return replace(self, batch=batch)

    def with_tokens(self, tokens: int) -> Workload:
        return replace(self, tokens=tokens)

    @property
    def vectors(self) -> int:
        """Input vectors one call multiplies: ``batch`` predicts (or matmul rows) of ``tokens`` each."""
        return self.batch * self.tokens

    def row_blocks(self, start: int = 0, stop: int | None = None) -> Iterator[tuple[int, int, np.ndarray]]:
        """(lo, hi, rows [lo, hi)) over [start, stop) in blocks of FILL_BLOCK_ROWS, so an engine fills
        its buffer without ever holding a second full-size copy."""
        stop = self.vocab if stop is None else stop
        for lo in range(start, stop, FILL_BLOCK_ROWS):
            hi = min(lo + FILL_BLOCK_ROWS, stop)
            yield lo, hi, self.weights.read_rows(lo, hi)

    def fill_rows(self, out: np.ndarray, row_start: int = 0) -> None:
        """Write rows [row_start, row_start + len(out)) into ``out``, converting to out's dtype."""
        for lo, hi, rows in self.row_blocks(row_start, row_start + out.shape[0]):
            out[lo - row_start:hi - row_start] = rows

    def inputs(self) -> np.ndarray:
        """The call's input vectors, (vectors, hidden) float32, exactly representable in fp16; predict k
        of a token-batched call takes rows [k * tokens, (k + 1) * tokens). A prefix of a longer call's."""
        rng = np.random.default_rng((self.seed, 0x1A7E, self.hidden))
        values = rng.standard_normal((self.vectors, self.hidden), dtype=np.float32)
        return values.astype(np.float16).astype(np.float32)


# Seeds a synthetic workload can have: the catalog's (0, 1), plus one per concurrent copy (seed + copy).
MAX_SYNTHETIC_SEED = 256


def synthetic_fingerprints(shape: tuple[int, int], dtype: str, batch: int, tokens: int, quant: str | None,
                           seed: int) -> set[str]:
    """Every fingerprint a synthetic workload of this description can carry in a record: its own and
    each "streamed as" variant (an engine that reads fp16 weights as fp32)."""
    vocab, hidden = shape
    workload = Workload("check", hidden, vocab, dtype, seed=seed, batch=batch, quant=quant, tokens=tokens)
    found = {workload.fingerprint}
    if quant is None:
        found |= {workload.streamed_fingerprint(d) for d in DTYPE_BYTES if d != dtype}
    return found


@functools.lru_cache(maxsize=4096)
def synthetic_fingerprint_matches(fingerprint: str, shape: tuple[int, int], dtype: str, batch: int,
                                  tokens: int, quant: str | None) -> bool:
    """Whether a record's synthetic-workload fingerprint is the one its own description (shape, dtype,
    batch, tokens, quantisation, a seed) gives: a fingerprint copied from another workload is not."""
    if dtype not in DTYPE_BYTES or quant not in QUANTS:
        return False
    try:
        pair = (shape[0], shape[1])
        return any(fingerprint in synthetic_fingerprints(pair, dtype, batch, tokens, quant, seed)
                   for seed in range(MAX_SYNTHETIC_SEED + 1))  # seed 0 first: the common case is quick
    except UserError:
        return False


def _sha256_of(description: dict) -> str:
    canonical = json.dumps(description, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()
