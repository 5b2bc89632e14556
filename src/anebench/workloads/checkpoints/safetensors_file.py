"""The safetensors format read by hand: an 8-byte length, a JSON header, then raw little-endian data.

We parse the header ourselves instead of using ``safetensors.safe_open`` because its numpy backend
cannot return bf16, and because doing it here lets us say exactly what is wrong with a corrupt or
truncated file. Only headers are read; tensor data is memory-mapped later, never loaded.
"""

from __future__ import annotations

import math
import stat
import struct
from dataclasses import dataclass
from pathlib import Path

from ...errors import UserError
from ...util.inputs import loads

# The reference implementation refuses headers over 100 MB; a larger length means a corrupt file.
MAX_HEADER_BYTES = 100_000_000

# safetensors dtype -> (bytes per element, anebench dtype or None when not a float we can stream)
SAFETENSORS_DTYPES: dict[str, tuple[int, str | None]] = {
    "F32": (4, "fp32"),
    "F16": (2, "fp16"),
    "BF16": (2, "bf16"),
    "F64": (8, None),
    "I64": (8, None),
    "U64": (8, None),
    "I32": (4, None),
    "U32": (4, None),
    "I16": (2, None),
    "U16": (2, None),
    "I8": (1, None),
    "U8": (1, None),
    "BOOL": (1, None),
    "F8_E4M3": (1, None),
    "F8_E5M2": (1, None),
}


@dataclass(frozen=True)
class TensorEntry:
    """Where one tensor's bytes lie in its file."""

    name: str
    path: Path
    safetensors_dtype: str
    shape: tuple[int, ...]
    offset: int  # absolute byte offset of the first element in the file
    nbytes: int

    @property
    def dtype(self) -> str | None:
        """The anebench dtype (fp32/fp16/bf16), None for dtypes an LM head is never stored in."""
        return SAFETENSORS_DTYPES.get(self.safetensors_dtype, (0, None))[1]

    def describe_shape(self) -> str:
        return "[" + ", ".join(str(d) for d in self.shape) + "]"


def read_header(path: Path) -> dict[str, TensorEntry]:
    """Every tensor entry of one safetensors file, validated against the file's real size."""
    path = Path(path)
    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise UserError(f"{path}: not a regular file (a device or FIFO); give a safetensors file")
        size = info.st_size
        with path.open("rb") as handle:
            prefix = handle.read(8)
            if len(prefix) < 8:
                raise UserError(
                    f"{path}: truncated safetensors file "
                    f"({size} bytes, shorter than the 8-byte header length)"
                )
            (header_len,) = struct.unpack("<Q", prefix)
            if header_len > MAX_HEADER_BYTES or 8 + header_len > size:
                raise UserError(
                    f"{path}: corrupt or truncated safetensors header (declares {header_len} header bytes, "
                    f"file has {size - 8} after the length)"
                )
            raw = handle.read(header_len)
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    try:
        header = loads(raw, f"{path}: corrupt safetensors header")
    except UserError as exc:
        raise UserError(str(exc)) from None
    if not isinstance(header, dict):
        raise UserError(f"{path}: corrupt safetensors header (expected a JSON object)")
    data_start = 8 + header_len
    data_size = size - data_start
    entries = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        entry = _parse_entry(path, name, info, data_start)
        if entry.offset - data_start + entry.nbytes > data_size:
            raise UserError(
                f"{path}: truncated safetensors file (tensor {name!r} ends at data byte "
                f"{entry.offset - data_start + entry.nbytes}, the file holds {data_size} data bytes)"
            )
        entries[name] = entry
    return entries


def _parse_entry(path: Path, name: str, info: object, data_start: int) -> TensorEntry:
    def corrupt(why: str) -> UserError:
        return UserError(f"{path}: corrupt safetensors header (tensor {name!r}: {why})")

    if not isinstance(info, dict):
        raise corrupt("entry is not an object")
    dtype, shape, offsets = info.get("dtype"), info.get("shape"), info.get("data_offsets")
    if not isinstance(dtype, str):
        raise corrupt("missing dtype")
    # bool is an int in Python: [true, 4096] is not a shape
    if not isinstance(shape, list) or not all(type(d) is int and 0 <= d < 2**48 for d in shape):
        raise corrupt(f"shape {shape!r} is not a list of sizes")
    if (
        not isinstance(offsets, list)
        or len(offsets) != 2
        or not all(type(o) is int for o in offsets)
        or not 0 <= offsets[0] <= offsets[1]
    ):
        raise corrupt(f"data_offsets {offsets!r} are not [begin, end]")
    begin, end = offsets
    itemsize = SAFETENSORS_DTYPES.get(dtype, (None, None))[0]
    if itemsize is not None and end - begin != math.prod(shape) * itemsize:
        raise corrupt(f"{end - begin} bytes stored for shape {shape} of {dtype}")
    return TensorEntry(name, path, dtype, tuple(shape), data_start + begin, end - begin)
