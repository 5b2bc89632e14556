"""Build the LM head as a Core AI ``.aimodel`` asset: the Core ML bundle's weights, byte for byte.

The program is authored with ``coreai.authoring`` (``Module``, ``graph``, ``constant``, ``batch_matmul``)
and written with ``AIProgram.save_asset``; it runs on macOS 27+ only, but it is written anywhere.
It has the Core ML bundle's layout where layout is data: the vocabulary split into the same row ranges
(``near_equal_splits``, at most 16384 rows), each split's weights stored (rows, hidden) row-major, the
bytes a Core ML conv weight blob holds, and one output ``logitsN`` per split. The input is
``hidden_states`` fp16 (hidden, T), a column per token, so each split is one ``W @ x`` with no transpose:
``batch_matmul(W_s, hidden_states)`` -> (rows, T).

Stored as:
- fp16: one fp16 constant per split.
- int8: the Core ML encoding (symmetric per row, fp16 scale) as ``blockwise_shift_scale(int8 data,
  fp16 scale (rows, 1), zero offsets)``; the zero offsets are splat constants (one value in the file).
- lut4 is refused: coreai-core 1.0.0b3 writes a UInt4 constant one byte per index (measured: 65,536 bytes
  for 65,536 indices), so the asset would not hold the Core ML lut4 bytes, and its Linux runtime crashes
  running ``lut_to_dense``. lut6: coreai.authoring has no 6-bit type. (Int4 constants are also written one
  byte per value, and the Core ML bundles have no int4 to pair with, so no int4 is offered.)

After saving, every weight blob is found in the written program (``main.mlirb``) and its sha256 compared
with what was encoded: a build that does not hold the weights byte for byte is refused. The digest of
the blobs in split order (``weights_sha256``) equals ``bundle_weights_sha256`` of the Core ML bundle of
the same workload and quant.
"""

from __future__ import annotations

import hashlib
import json
import mmap
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any

import numpy as np

from ..errors import UserError, setting
from ..util.hashing import stream_sha256
from ..workloads import Workload
from . import _coreai
from .coreml import FP16_MAX, INPUT_NAME, MAX_SPLIT_ROWS, MAX_TOKENS, near_equal_splits, output_name
from .quant import EncodedWeight, encode

BUILDER_VERSION = "anebench-coreai-v1"
QUANTS = ("fp16", "int8")  # what an asset stores as Core ML does
NOT_STORED = {
    "lut4": "coreai-core 1.0.0b3 writes UInt4 constants one byte per index, so the asset would not hold "
            "the Core ML lut4 bytes (and its Linux runtime crashes running lut_to_dense)",
    "lut6": "coreai.authoring has no 6-bit integer type to store 6-bit indices in",
}
FUNCTION = "main"
ASSET_SUFFIX = ".aimodel"
PROGRAM_FILE = "main.mlirb"
BUILD_KEY_METADATA = "anebench.build_key"
PREFIX_BYTES = 4096  # bytes of a blob searched for in the written program before hashing its whole length
MAX_CANDIDATES = 64  # places a blob's first bytes may be found at before the search gives up
SplitProgress = Callable[[int, int], None]  # (splits encoded, total)


def check_storable(quant: str) -> None:
    if quant in NOT_STORED:
        raise UserError(f"quant {quant!r} cannot be built as a Core AI asset: {NOT_STORED[quant]}; "
                        f"valid for {setting('engine')} coreai: {', '.join(QUANTS)}")
    if quant not in QUANTS:
        raise UserError(f"quant {quant!r} is not supported; valid for {setting('engine')} coreai: "
                        f"{', '.join(QUANTS)}")


@dataclass(frozen=True)
class AssetSpec:
    """Everything that determines an asset's weights and program; its key names it in the cache."""

    workload: Workload
    quant: str = "fp16"
    max_split_rows: int = MAX_SPLIT_ROWS

    @classmethod
    def for_workload(cls, workload: Workload, quant: str | None = None, **options) -> AssetSpec:
        """The workload's own quantization (``llama_lm_head_lut6``) unless ``quant`` overrides it."""
        return cls(workload, quant or workload.quant or "fp16", **options)

    def __post_init__(self) -> None:
        check_storable(self.quant)
        if not 1 <= self.tokens <= MAX_TOKENS:
            raise UserError(f"tokens {self.tokens} must be between 1 and {MAX_TOKENS}")
        if self.max_split_rows < 1:
            raise UserError("max split rows must be positive")

    @property
    def tokens(self) -> int:
        return self.workload.tokens

    @cached_property
    def splits(self) -> list[tuple[int, int]]:
        return near_equal_splits(self.workload.vocab, self.max_split_rows)

    @property
    def conversion_note(self) -> str | None:
        if self.workload.dtype == "fp16":
            return None
        return f"{self.workload.dtype} weights converted to fp16 for Core AI (stored as the Core ML bundle's)"

    def description(self) -> dict:
        """What the asset depends on (the coreai-core version too: it writes the program)."""
        described = {
            "builder": BUILDER_VERSION,
            "coreai_core": _coreai.version(),
            "shape": [self.workload.vocab, self.workload.hidden],
            "source_dtype": self.workload.dtype,
            "weights": self.workload.weights.description(),
            "quant": self.quant,
            "splits": [stop - start for start, stop in self.splits],
            "tokens": self.tokens,
        }
        if self.quant == "int8":
            described.update(granularity="per_channel", mode="linear_symmetric")
        return described

    @cached_property
    def key(self) -> str:
        canonical = json.dumps(self.description(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def expected_weight_bytes(self) -> int:
        """Bytes of the weight constants, from the layout alone: the Core ML bundle's figure."""
        rows, hidden = self.workload.vocab, self.workload.hidden
        return rows * hidden * 2 if self.quant == "fp16" else rows * hidden + rows * 2

    def expected_storage(self) -> dict[str, tuple[int, int]]:
        """(least, most) elements per storage type the asset summary may report: the weights, plus for int8
        the zero offsets, splats the writer counts per row or merges between splits of one shape."""
        rows, hidden = self.workload.vocab, self.workload.hidden
        if self.quant == "fp16":
            return {"Float16": (rows * hidden, rows * hidden)}
        return {"Int8": (rows * hidden, rows * hidden + rows), "Float16": (rows, 2 * rows)}

    def asset_name(self) -> str:
        quant = "" if self.workload.name.endswith(self.quant) else f"_{self.quant}"
        tokens = "" if self.tokens == 1 else f"_t{self.tokens}"
        safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in self.workload.name)
        return f"{safe}{quant}{tokens}{ASSET_SUFFIX}"


def read_fp16_rows(spec: AssetSpec, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of the head, refusing values fp16 cannot hold (as the Core ML builder does)."""
    rows = spec.workload.weights.read_rows(start, stop)
    if rows.dtype != np.float16 and np.abs(rows).max(initial=0) > FP16_MAX:
        raise UserError(
            f"{spec.workload.name}: weights exceed fp16's range (65504); Core AI cannot hold them"
        )
    return rows


def encode_split(spec: AssetSpec, start: int, stop: int) -> EncodedWeight:
    """Split [start, stop) encoded exactly as the Core ML builder encodes it (``quant.encode``)."""
    return encode(lambda lo, hi: read_fp16_rows(spec, start + lo, start + hi), stop - start,
                  spec.workload.hidden, spec.quant)


def blobs_of(weight: EncodedWeight) -> list[np.ndarray]:
    """The arrays a split stores as weight data, in order: fp16 values; int8 values then fp16 scales."""
    return [weight.values] if weight.kind == "fp16" else [weight.values, weight.lookup()]


@dataclass(frozen=True)
class BlobDigest:
    """One weight blob as encoded: its length, sha256 and first bytes (to find it in the program)."""

    nbytes: int
    sha256: str
    prefix: bytes

    @classmethod
    def of(cls, array: np.ndarray) -> BlobDigest:
        data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
        return cls(data.nbytes, hashlib.sha256(data.data).hexdigest(), data[:PREFIX_BYTES].tobytes())


def weights_sha256(digests: Iterable[BlobDigest]) -> str:
    """One digest of the blobs in split order (of their sha256s, so it never needs the bytes twice)."""
    return hashlib.sha256("".join(d.sha256 for d in digests).encode()).hexdigest()


def bundle_weights_sha256(bundle) -> str:
    """``weights_sha256`` of a Core ML bundle (an ``MLProgramBundle`` of one weight set), read from its blobs:
    equal to an asset's exactly when both store the same bytes in the same splits."""
    digests: list[BlobDigest] = []
    for name in (t.name for t in bundle.outputs):
        convs = bundle.convs_for_output(name)
        if len(convs) != 1:
            raise ValueError(f"{bundle.path}: output {name} sums {len(convs)} weight sets; compare one")
        digests.extend(BlobDigest.of(array) for array in blobs_of(bundle.weight_of(convs[0])))
    return weights_sha256(digests)


def _weight_value(authoring, constant, weight: EncodedWeight):
    """The split's weight as the program holds it: fp16 as is, int8 dequantised per row on use."""
    if weight.kind == "fp16":
        return constant(weight.values)
    rows = weight.rows
    return authoring.blockwise_shift_scale(
        constant(weight.values),
        constant(weight.lookup().reshape(rows, 1)),
        constant(np.zeros((rows, 1), dtype=np.int8)),
        constant(np.zeros((rows, 1), dtype=np.float16)),
    )


def build_program(spec: AssetSpec, progress: SplitProgress | None = None) -> tuple[Any, list[BlobDigest]]:
    """(AIProgram, the digests of its weight blobs): hidden_states (hidden, T) -> logitsN (rows_N, T)."""
    authoring = _coreai.authoring()
    from coreai.authoring.constant import constant

    hidden, tokens = spec.workload.hidden, spec.tokens
    digests: list[BlobDigest] = []
    module = authoring.Module.create()
    with module:
        def main(hidden_states):
            outputs = []
            for index, (start, stop) in enumerate(spec.splits):
                weight = encode_split(spec, start, stop)
                digests.extend(BlobDigest.of(array) for array in blobs_of(weight))
                weight_value = _weight_value(authoring, constant, weight)
                outputs.append(authoring.batch_matmul(weight_value, hidden_states))
                if progress is not None:
                    progress(index + 1, len(spec.splits))
            return tuple(outputs)

        # The graph decorator reads the I/O types from the annotations, which depend on the spec.
        tensor = authoring.TensorType
        main.__annotations__ = {
            INPUT_NAME: Annotated[authoring.Value, tensor((hidden, tokens), np.float16)],
            "return": tuple[tuple(  # type: ignore[misc]
                Annotated[authoring.Value, tensor((stop - start, tokens), np.float16, name=output_name(i))]
                for i, (start, stop) in enumerate(spec.splits)
            )],
        }
        authoring.graph(main)
    return authoring.AIProgram(module), digests


def asset_metadata(spec: AssetSpec):
    runtime = _coreai.runtime()
    metadata = runtime.AIModelAssetMetadata()
    metadata.model_description = (
        f"anebench LM head {spec.workload.vocab} x {spec.workload.hidden}, {spec.quant}, "
        f"{len(spec.splits)} splits" + (f", {spec.tokens} tokens per call" if spec.tokens > 1 else "")
    )
    metadata.set_custom(BUILD_KEY_METADATA, spec.key)
    return metadata


def _occurrences(data: mmap.mmap, prefix: bytes) -> Iterator[int]:
    position, found = data.find(prefix), 0
    while position >= 0 and found < MAX_CANDIDATES:
        yield position
        position, found = data.find(prefix, position + 1), found + 1


def locate_blobs(program_file: Path, digests: list[BlobDigest]) -> list[int]:
    """The offset of every blob in the written program, each checked by its sha256 over its whole length;
    a blob that is not there byte for byte is a ``ValueError``."""
    offsets = []
    with open(program_file, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as data:
        for index, digest in enumerate(digests):
            found = next((o for o in _occurrences(data, digest.prefix)
                          if o + digest.nbytes <= len(data)
                          and stream_sha256(program_file, o, digest.nbytes) == digest.sha256), None)
            if found is None:
                raise ValueError(f"{program_file}: weight blob {index + 1} of {len(digests)} "
                                 f"({digest.nbytes:,} bytes) is not stored byte for byte (or its first "
                                 f"{PREFIX_BYTES} bytes repeat more than {MAX_CANDIDATES} times)")
            offsets.append(found)
    return offsets


def write_asset(spec: AssetSpec, path: Path, progress: SplitProgress | None = None) -> list[BlobDigest]:
    """Encode, author and save the asset at ``path`` (an .aimodel path); the digests of its weight blobs,
    each found in the saved program."""
    program, digests = build_program(spec, progress)
    program.save_asset(path, metadata=asset_metadata(spec))
    del program  # the MLIR module holds every weight: free it before the program file is read back
    locate_blobs(path / PROGRAM_FILE, digests)
    return digests


def asset_summary(path: Path) -> dict:
    """What ``AIModelAsset.summary(include_statistics=True)`` says the asset stores and computes."""
    authoring = _coreai.authoring()
    summary = authoring.AIModelAsset.load(path).summary(include_statistics=True)
    if summary is None:
        raise ValueError(f"{path}: the asset holds no source program")
    return {
        "functions": {
            name: {"inputs": [list(t) for t in summary.function_inputs(name)],
                   "outputs": [list(t) for t in summary.function_outputs(name)]}
            for name in summary.function_names
        },
        "storage_types": {name: int(count) for name, count in summary.storage_types},
        "compute_types": list(summary.compute_types),
        "operation_distribution": {name: int(count) for name, count in summary.operation_distribution},
    }
