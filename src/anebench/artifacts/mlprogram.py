"""Read a Core ML ML-program package back: its program (protobuf), the blobs it reads, their bytes.

The weight bytes of a bundle are the sum of the weight blobs its program references, taken from the
program and the blob headers themselves, never from file sizes or paths: a weight.bin may hold
blobs no operation reads, and a directory listing says nothing about what a call streams.
The same reader decodes the stored weights (fp16 as is, int8 times its scale, LUT tables indexed by the
packed n-bit indices), so tests and the output check compare with what Core ML really computes with.
"""

from __future__ import annotations

import json
import struct
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from ._coremltools import coremltools as import_coremltools
from .quant import EncodedWeight

BLOB_SENTINEL = 0xDEADBEEF
BLOB_METADATA = struct.Struct("<IIQQ")  # sentinel, storage dtype, size in bytes, data offset
MODEL_PATH_PREFIX = "@model_path/"
# Bits per element of the proto data types a weight blob can hold.
DTYPE_BITS = {
    "FLOAT16": 16, "BFLOAT16": 16, "FLOAT32": 32, "INT8": 8, "UINT8": 8, "INT16": 16, "UINT16": 16,
    "INT32": 32, "UINT32": 32, "INT4": 4, "UINT1": 1, "UINT2": 2, "UINT3": 3, "UINT4": 4, "UINT6": 6,
    "FLOAT8E4M3FN": 8, "FLOAT8E5M2": 8,
}
NUMPY_DTYPES = {"FLOAT16": np.float16, "FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8}


class BundleError(ValueError):
    """A package that is not a well-formed ML program bundle."""


@dataclass(frozen=True)
class Blob:
    """One weight blob the program reads: which value, its type, where it lies, how many bytes."""

    value: str  # the output name of the op whose value it is
    dtype: str  # proto data type name, e.g. FLOAT16, UINT6
    shape: tuple[int, ...]
    file: Path
    metadata_offset: int
    data_offset: int
    size: int  # bytes, from the blob's own header (checked against dtype x shape)

    def read_bytes(self, start: int = 0, stop: int | None = None) -> bytes:
        stop = self.size if stop is None else stop
        with open(self.file, "rb") as handle:
            handle.seek(self.data_offset + start)
            return handle.read(stop - start)


@dataclass(frozen=True)
class TensorDesc:
    name: str
    dtype: str
    shape: tuple[int, ...]


@dataclass(frozen=True)
class Op:
    type: str
    outputs: tuple[str, ...]
    inputs: dict[str, tuple[str, ...]] = field(hash=False)  # argument name -> bound value names


def _tensor(value_type) -> tuple[str, tuple[int, ...]]:
    from coremltools.proto import MIL_pb2

    tensor = value_type.tensorType
    dims = tuple(int(d.constant.size) for d in tensor.dimensions)
    return MIL_pb2.DataType.Name(tensor.dataType), dims


def _feature(feature) -> TensorDesc:
    from coremltools.proto import FeatureTypes_pb2

    array = feature.type.multiArrayType
    dtype = FeatureTypes_pb2.ArrayFeatureType.ArrayDataType.Name(array.dataType)
    return TensorDesc(feature.name, dtype, tuple(int(d) for d in array.shape))


def expected_bytes(dtype: str, shape: tuple[int, ...]) -> int:
    if dtype not in DTYPE_BITS:
        raise BundleError(f"blob of unsupported data type {dtype}")
    return (int(np.prod(shape, dtype=np.int64)) * DTYPE_BITS[dtype] + 7) // 8


def unpack_bits(packed: bytes, nbits: int, count: int, bit_offset: int = 0) -> np.ndarray:
    """``count`` unsigned nbits-wide values packed LSB first (Core ML's sub-byte layout), as uint8."""
    stream = np.unpackbits(np.frombuffer(packed, dtype=np.uint8), bitorder="little")
    bits = stream[bit_offset:bit_offset + count * nbits].reshape(count, nbits)
    weights = (1 << np.arange(nbits, dtype=np.uint16)).astype(np.uint16)
    return (bits.astype(np.uint16) @ weights).astype(np.uint8)


class MLProgramBundle:
    """An .mlpackage (or a bare model.mlmodel with its weights folder) opened for reading."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.model_file = self._root_model_file()
        import_coremltools()
        from coremltools.proto import Model_pb2

        self.spec = Model_pb2.Model()
        self.spec.ParseFromString(self.model_file.read_bytes())
        if not self.spec.HasField("mlProgram"):
            raise BundleError(f"{self.path}: not an ML program (type {self.spec.WhichOneof('Type')})")
        self.ops: list[Op] = []
        # value name -> the protobuf Value that holds it (coremltools' protobuf classes carry no types)
        self._values: dict[str, Any] = {}
        for function in self.spec.mlProgram.functions.values():
            self._walk(function.block_specializations[function.opset])
        self._producers = {value: op for op in self.ops for value in op.outputs}

    def _root_model_file(self) -> Path:
        if self.path.is_file():
            return self.path
        manifest = self.path / "Manifest.json"
        if not manifest.is_file():
            raise BundleError(f"{self.path}: no Manifest.json, not an .mlpackage")
        document = json.loads(manifest.read_text())
        entry = document["itemInfoEntries"][document["rootModelIdentifier"]]
        return self.path / "Data" / entry["path"]

    def _walk(self, block) -> None:
        for op in block.operations:
            outputs = tuple(o.name for o in op.outputs)
            inputs: dict[str, tuple[str, ...]] = {}
            for name, arg in op.inputs.items():
                bound = []
                for position, binding in enumerate(arg.arguments):
                    if binding.WhichOneof("binding") == "name":
                        bound.append(binding.name)
                    else:  # an inline value (constexpr ops keep their blobs here): name it op/input
                        inline = f"{outputs[0]}/{name}" + (f"/{position}" if position else "")
                        self._values[inline] = binding.value
                        bound.append(inline)
                inputs[name] = tuple(bound)
            self.ops.append(Op(op.type, outputs, inputs))
            if op.type == "const" and "val" in op.attributes:
                self._values[outputs[0]] = op.attributes["val"]
            for nested in op.blocks:
                self._walk(nested)

    @property
    def inputs(self) -> list[TensorDesc]:
        return [_feature(f) for f in self.spec.description.input]

    @property
    def outputs(self) -> list[TensorDesc]:
        return [_feature(f) for f in self.spec.description.output]

    @property
    def specification_version(self) -> int:
        return int(self.spec.specificationVersion)

    @property
    def metadata(self) -> dict[str, str]:
        return dict(self.spec.description.metadata.userDefined)

    def op_types(self) -> list[str]:
        return [op.type for op in self.ops]

    def _blob_file(self, name: str) -> Path:
        if not name.startswith(MODEL_PATH_PREFIX):
            raise BundleError(f"blob file {name!r} is not inside the model package")
        return self.model_file.parent / name[len(MODEL_PATH_PREFIX):]

    @cached_property
    def blobs(self) -> dict[str, Blob]:
        """Every weight blob the program reads, by the name of the value it holds."""
        found: dict[str, Blob] = {}
        for name, value in self._values.items():
            if value.WhichOneof("value") != "blobFileValue":
                continue
            dtype, shape = _tensor(value.type)
            file = self._blob_file(value.blobFileValue.fileName)
            offset = int(value.blobFileValue.offset)
            with open(file, "rb") as handle:
                handle.seek(offset)
                header = handle.read(BLOB_METADATA.size)
            if len(header) < BLOB_METADATA.size:
                raise BundleError(f"{file}: blob header for {name} at {offset} is past the end of the file")
            sentinel, _storage, size, data_offset = BLOB_METADATA.unpack(header)
            if sentinel != BLOB_SENTINEL:
                raise BundleError(f"{file}: no blob header for {name} at offset {offset}")
            if size != expected_bytes(dtype, shape):
                raise BundleError(
                    f"{file}: blob {name} holds {size} bytes but its type {dtype}{list(shape)} "
                    f"needs {expected_bytes(dtype, shape)}"
                )
            found[name] = Blob(name, dtype, shape, file, offset, int(data_offset), int(size))
        return found

    @property
    def weight_bytes(self) -> int:
        """Bytes of weights one prediction reads: the blobs of the program, as stored."""
        return sum(blob.size for blob in self.blobs.values())

    def producer(self, value: str) -> Op:
        if value not in self._producers:
            raise BundleError(f"no operation produces {value!r}")
        return self._producers[value]

    def convs(self) -> list[Op]:
        return [op for op in self.ops if op.type == "conv"]

    def convs_for_output(self, name: str) -> list[Op]:
        """The convolutions whose results make up output ``name`` (several when weight sets are summed)."""
        found: list[Op] = []
        pending, seen = [name], set()
        while pending:
            value = pending.pop()
            if value in seen or value in self._values:
                continue
            seen.add(value)
            try:
                op = self.producer(value)
            except BundleError:
                continue  # a function input
            if op.type == "conv":
                found.append(op)
                continue
            for bound in op.inputs.values():
                pending.extend(bound)
        return sorted(found, key=self.ops.index)

    def immediate(self, name: str) -> np.ndarray:
        """A small constant stored in the program itself (a perm, axes, pad type), as numpy."""
        value = self._values.get(name)
        if value is None or value.WhichOneof("value") != "immediateValue":
            raise BundleError(f"value {name!r} is not an immediate constant")
        _dtype, shape = _tensor(value.type)
        tensor = value.immediateValue.tensor
        kind = tensor.WhichOneof("value")
        items = list(getattr(tensor, kind).values) if kind else []
        if kind == "bytes" and _dtype == "FLOAT16":  # an fp16 scalar or small tensor (a decode chunk's scale)
            return np.frombuffer(tensor.bytes.values, dtype=np.float16).reshape(shape)
        if kind == "bytes":
            return np.frombuffer(tensor.bytes.values, dtype=np.uint8)
        if kind == "strings":
            return np.array(items[0] if not shape else items, dtype=object)
        array = np.array(items)
        return array.reshape(shape) if shape else array.reshape(())

    def is_immediate(self, name: str) -> bool:
        value = self._values.get(name)
        return value is not None and value.WhichOneof("value") == "immediateValue"

    def _array(self, name: str) -> np.ndarray:
        blob = self.blobs.get(name)
        if blob is None:
            raise BundleError(f"value {name!r} is not a weight blob")
        if blob.dtype not in NUMPY_DTYPES:
            raise BundleError(f"value {name!r} is {blob.dtype}, not a byte-aligned type")
        return np.frombuffer(blob.read_bytes(), dtype=NUMPY_DTYPES[blob.dtype]).reshape(blob.shape)

    def weight_of(self, conv: Op, start: int = 0, stop: int | None = None) -> EncodedWeight:
        """Rows [start, stop) of the stored weight a conv reads, in (rows, hidden) form.

        Only the bytes of those rows are read, so a slice of a 1 GB bundle costs a slice of memory.
        A LUT slice must start on a group boundary (``decoded_rows`` aligns it).
        """
        return self.encoded_value(self.producer(conv.inputs["weight"][0]), start, stop, conv.outputs[0])

    def encoded_value(self, source: Op, start: int = 0, stop: int | None = None,
                      consumer: str = "") -> EncodedWeight:
        """Rows [start, stop) of the weight a const or constexpr op holds, as stored (see ``weight_of``)."""
        if source.type == "const":
            return EncodedWeight("fp16", self._rows(source.outputs[0], start, stop))
        if source.type == "constexpr_blockwise_shift_scale":
            data = self._rows(source.inputs["data"][0], start, stop)
            scale = self._array(source.inputs["scale"][0])
            if "offset" in source.inputs or scale.size != self.blobs[source.inputs["data"][0]].shape[0]:
                raise BundleError(f"{source.outputs[0]}: only symmetric per-row int8 is read back")
            return EncodedWeight("int8", data, scale.reshape(-1)[start:start + data.shape[0]])
        if source.type == "constexpr_lut_to_dense":
            index_blob = self.blobs[source.inputs["indices"][0]]
            lut = self._array(source.inputs["lut"][0])
            nbits = DTYPE_BITS[index_blob.dtype]
            rows = index_blob.shape[0]
            per_row = int(np.prod(index_blob.shape[1:]))
            group = rows // lut.shape[0]
            stop = rows if stop is None else stop
            if start % group:
                raise BundleError(f"LUT rows must start on a group boundary ({group}), not {start}")
            bit_lo, bit_hi = start * per_row * nbits, stop * per_row * nbits
            packed = index_blob.read_bytes(bit_lo // 8, (bit_hi + 7) // 8)
            indices = unpack_bits(packed, nbits, (stop - start) * per_row, bit_lo % 8)
            tables = lut.reshape(lut.shape[0], -1)[start // group:(stop + group - 1) // group]
            return EncodedWeight("lut", indices.reshape(stop - start, per_row), tables, nbits, group)
        raise BundleError(
            f"{consumer or source.outputs[0]}: weight comes from an unsupported op {source.type}"
        )

    def decoded_rows(self, conv: Op, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the dense float32 weight Core ML computes with for this conv."""
        encoded = self.weight_of(conv, 0, 0)  # cheap: learns the layout without reading the rows
        aligned = start - start % (encoded.group_size or 1)
        return self.weight_of(conv, aligned, stop).decode(start - aligned, stop - aligned)

    def _rows(self, name: str, start: int, stop: int | None) -> np.ndarray:
        blob = self.blobs.get(name)
        if blob is None or blob.dtype not in NUMPY_DTYPES:
            raise BundleError(f"value {name!r} is not a byte-aligned weight blob")
        itemsize = np.dtype(NUMPY_DTYPES[blob.dtype]).itemsize
        per_row = int(np.prod(blob.shape[1:]))
        stop = blob.shape[0] if stop is None else stop
        raw = blob.read_bytes(start * per_row * itemsize, stop * per_row * itemsize)
        return np.frombuffer(raw, dtype=NUMPY_DTYPES[blob.dtype]).reshape(stop - start, per_row)
