"""Build the Core ML LM-head bundle the way the published ones are shaped for the Neural Engine.

Input ``hidden_states`` fp16 [1, 1, hidden]; the vocabulary projection split into 1x1 convolutions of at
most 16384 output channels (128256 = 8 x 16032), one output ``logitsN`` per split, in order. A
token-batched bundle (T > 1 tokens) takes ``hidden_states`` fp16 [1, hidden, 1, T] and returns each
``logitsN`` as [1, rows, 1, T]: channels first, tokens on the last axis, the layout Apple's
ane_transformers gives its 1x1 convolutions, with no transpose around them; its weights (and weight.bin)
are byte for byte those of the T = 1 bundle. The program
is written with the coremltools MIL builder (no torch), targets iOS18 / macOS 15 and computes in fp16.
Weights come split by split from the workload's WeightSource (synthetic or a checkpoint), so no full
fp32 matrix ever exists. With ``repeat`` R the program reads R distinct weight sets per call and sums
their logits, so one prediction is a longer Neural Engine task (the idle-state mitigation).
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from ..errors import UserError
from ..workloads import GEN_BLOCK_ROWS, LUT_GROUP_ROWS, SyntheticWeights, Workload
from ..workloads import QUANTS as WORKLOAD_QUANTS
from ._coremltools import coremltools as import_coremltools
from ._coremltools import no_pass_progress_bars
from .quant import KMEANS_MISSING, LUT_NBITS, EncodedWeight, check_palettizable, encode, kmeans_available

BUILDER_VERSION = "anebench-coreml-v1"
QUANTS = tuple(q for q in WORKLOAD_QUANTS if q is not None)  # what a bundle can store
LUT_MODES = ("auto", "uniform", "kmeans")
MAX_SPLIT_ROWS = 16384  # the largest conv the ANE compiler takes as one task in the published bundles
MAX_REPEAT = 64
MAX_TOKENS = 4096
INPUT_NAME = "hidden_states"
FP16_MAX = 65504.0
SplitProgress = Callable[[int, int], None]  # (splits encoded, total)


def output_name(index: int) -> str:
    return f"logits{index + 1}"


def near_equal_splits(rows: int, max_rows: int, unit: int = 1) -> list[tuple[int, int]]:
    """[start, stop) row ranges of at most ``max_rows``, as equal as possible, in multiples of ``unit``
    where ``rows`` allows it (so LUT groups never straddle a split)."""
    if rows % unit or max_rows < unit:
        unit = 1
    units, max_units = rows // unit, max_rows // unit
    parts = -(-units // max_units)
    base, extra = divmod(units, parts)
    bounds, start = [], 0
    for part in range(parts):
        stop = start + (base + (1 if part < extra else 0)) * unit
        bounds.append((start, stop))
        start = stop
    return bounds


def input_shape(hidden: int, tokens: int) -> tuple[int, ...]:
    """``hidden_states``: the published [1, 1, hidden] at T = 1, channels-first [1, hidden, 1, T] above."""
    return (1, 1, hidden) if tokens == 1 else (1, hidden, 1, tokens)


def pack_tokens(vectors: np.ndarray, tokens: int) -> np.ndarray:
    """One predict's input: ``tokens`` rows of (tokens, hidden) as fp16 in ``input_shape``."""
    if vectors.shape[0] != tokens:
        raise ValueError(f"{vectors.shape[0]} vectors for a {tokens}-token bundle")
    hidden = vectors.shape[1]
    packed = vectors.astype(np.float16).T if tokens > 1 else vectors.astype(np.float16)
    return np.ascontiguousarray(packed.reshape(input_shape(hidden, tokens)))


def unpack_logits(array: np.ndarray, tokens: int) -> np.ndarray:
    """One output of one predict, [1, 1, rows] or [1, rows, 1, T], as (tokens, rows)."""
    values = np.asarray(array)
    if tokens == 1:
        return values.reshape(1, -1)
    return values.reshape(-1, tokens).T


def rotation(weight_set: int, vocab: int) -> int:
    """Row offset of weight set r: a rotation of the head, so every set holds distinct bytes."""
    return (weight_set * (GEN_BLOCK_ROWS + 1)) % vocab


def rotated_rows(workload: Workload, weight_set: int, start: int, stop: int) -> np.ndarray:
    """Rows [start, stop) of weight set r: the source rows shifted cyclically by ``rotation(r)``."""
    vocab = workload.vocab
    lo, hi = start + rotation(weight_set, vocab), stop + rotation(weight_set, vocab)
    source = workload.weights
    if hi <= vocab:
        return source.read_rows(lo, hi)
    if lo >= vocab:
        return source.read_rows(lo - vocab, hi - vocab)
    return np.concatenate([source.read_rows(lo, vocab), source.read_rows(0, hi - vocab)])


@dataclass(frozen=True)
class BuildSpec:
    """Everything that determines a bundle's bytes; its key names the bundle in the cache."""

    workload: Workload
    quant: str = "fp16"
    lut_mode: str = "auto"
    group_size: int = LUT_GROUP_ROWS
    repeat: int = 1
    max_split_rows: int = MAX_SPLIT_ROWS

    @classmethod
    def for_workload(cls, workload: Workload, quant: str | None = None, **options) -> BuildSpec:
        """The workload's own quantization (``llama_lm_head_lut6``) unless ``quant`` overrides it."""
        return cls(workload, quant or workload.quant or "fp16", **options)

    def __post_init__(self) -> None:
        if self.quant not in QUANTS:
            raise UserError(f"quant {self.quant!r} is not supported; valid: {', '.join(QUANTS)}")
        if self.lut_mode not in LUT_MODES:
            raise UserError(f"lut mode {self.lut_mode!r} is not supported; valid: {', '.join(LUT_MODES)}")
        if not 1 <= self.repeat <= min(MAX_REPEAT, self.workload.vocab):
            raise UserError(
                f"repeat {self.repeat} must be between 1 and {min(MAX_REPEAT, self.workload.vocab)}"
            )
        if len({rotation(r, self.workload.vocab) for r in range(self.repeat)}) < self.repeat:
            raise UserError(
                f"repeat {self.repeat} with a vocabulary of {self.workload.vocab} rows would repeat a "
                "weight set (its rotations coincide); use fewer weight sets"
            )
        if not 1 <= self.tokens <= MAX_TOKENS:
            raise UserError(f"tokens {self.tokens} must be between 1 and {MAX_TOKENS}")
        if self.max_split_rows < 1 or self.group_size < 1:
            raise UserError("max split rows and LUT group size must be positive")
        if self.resolved_lut_mode == "kmeans" and self.is_lut and not kmeans_available():
            raise UserError(KMEANS_MISSING)
        for index, (start, stop) in enumerate(self.splits):
            if self.is_lut:
                check_palettizable(
                    stop - start,
                    self.workload.hidden,
                    LUT_NBITS[self.quant],
                    self.group_size,
                    f"{self.workload.name} split {index + 1} (rows {start}-{stop})",
                )

    @property
    def tokens(self) -> int:
        return self.workload.tokens

    @property
    def is_lut(self) -> bool:
        return self.quant in LUT_NBITS

    @property
    def resolved_lut_mode(self) -> str:
        """Synthetic weights get the fast linear table; real weights k-means, where table values matter."""
        if self.lut_mode != "auto":
            return self.lut_mode
        return "uniform" if isinstance(self.workload.weights, SyntheticWeights) else "kmeans"

    @cached_property
    def splits(self) -> list[tuple[int, int]]:
        unit = self.group_size if self.is_lut else 1
        return near_equal_splits(self.workload.vocab, self.max_split_rows, unit)

    @property
    def conversion_note(self) -> str | None:
        if self.workload.dtype == "fp16":
            return None
        return f"{self.workload.dtype} weights converted to fp16 for Core ML (it stores and computes in fp16)"

    def description(self) -> dict:
        """What the bytes depend on; the workload's name and batch do not change them. Tokens change the
        program (not the weights) and appear only above 1, so a T = 1 bundle keeps its published key."""
        coremltools = import_coremltools()

        described = {
            "builder": BUILDER_VERSION,
            "coremltools": coremltools.__version__,
            "target": "iOS18",
            "precision": "fp16",
            "shape": [self.workload.vocab, self.workload.hidden],
            "source_dtype": self.workload.dtype,
            "weights": self.workload.weights.description(),
            "quant": self.quant,
            "splits": [stop - start for start, stop in self.splits],
            "repeat": self.repeat,
        }
        if self.tokens != 1:
            described["tokens"] = self.tokens
        if self.is_lut:
            described.update(lut_mode=self.resolved_lut_mode, group_size=self.group_size,
                             granularity="per_grouped_channel")
        if self.quant == "int8":
            described.update(granularity="per_channel", mode="linear_symmetric")
        return described

    @cached_property
    def key(self) -> str:
        canonical = json.dumps(self.description(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()

    def expected_weight_bytes(self) -> int:
        """The bytes the program will read, from the layout alone (what a plan shows before building)."""
        hidden, total = self.workload.hidden, 0
        for start, stop in self.splits:
            rows = stop - start
            if self.quant == "fp16":
                total += rows * hidden * 2
            elif self.quant == "int8":
                total += rows * hidden + rows * 2
            else:
                nbits = LUT_NBITS[self.quant]
                total += (rows * hidden * nbits + 7) // 8 + rows // self.group_size * (1 << nbits) * 2
        return total * self.repeat

    def bundle_name(self) -> str:
        suffix = ("" if self.repeat == 1 else f"_x{self.repeat}") + (
            "" if self.tokens == 1 else f"_t{self.tokens}"
        )
        quant = "" if self.workload.name.endswith(self.quant) else f"_{self.quant}"
        safe = "".join(c if c.isalnum() or c in "_-." else "_" for c in self.workload.name)
        return f"{safe}{quant}{suffix}.mlpackage"


def split_reader(spec: BuildSpec, weight_set: int, start: int) -> Callable[[int, int], np.ndarray]:
    """Rows [lo, hi) of one split of one weight set, refusing values fp16 cannot hold."""

    def read(lo: int, hi: int) -> np.ndarray:
        rows = rotated_rows(spec.workload, weight_set, start + lo, start + hi)
        if rows.dtype != np.float16 and np.abs(rows).max(initial=0) > FP16_MAX:
            raise UserError(
                f"{spec.workload.name}: weights exceed fp16's range (65504); Core ML cannot hold them"
            )
        return rows

    return read


def encode_splits(spec: BuildSpec, progress: SplitProgress | None = None) -> list[list[EncodedWeight]]:
    """encoded[r][s]: split s of weight set r, read and encoded chunk by chunk."""
    total = spec.repeat * len(spec.splits)
    encoded: list[list[EncodedWeight]] = []
    for weight_set in range(spec.repeat):
        row = []
        for start, stop in spec.splits:
            read = split_reader(spec, weight_set, start)
            row.append(encode(read, stop - start, spec.workload.hidden, spec.quant,
                              spec.resolved_lut_mode, spec.group_size))
            if progress is not None:
                progress(weight_set * len(spec.splits) + len(row), total)
        encoded.append(row)
    return encoded


def _weight_var(mb, types, weight: EncodedWeight, name: str):
    rows, hidden = weight.values.shape
    if weight.kind == "fp16":
        return mb.const(val=weight.values.reshape(rows, hidden, 1, 1), name=name)
    if weight.kind == "int8":
        return mb.constexpr_blockwise_shift_scale(
            data=weight.values.reshape(rows, hidden, 1, 1),
            scale=weight.lookup().reshape(rows, 1, 1, 1),
            name=name,
        )
    nbits, _ = weight.lut_layout()
    index_dtype = types.nptype_from_builtin(types.string_to_builtin(f"uint{nbits}"))
    table = weight.lookup()
    return mb.constexpr_lut_to_dense(
        indices=weight.values.reshape(rows, hidden, 1, 1).view(index_dtype),
        lut=table.reshape(table.shape[0], 1, 1, 1, 1 << nbits, 1),
        name=name,
    )


def build_program(spec: BuildSpec, encoded: list[list[EncodedWeight]]):
    """The MIL program: hidden_states -> per split: conv (summed over weight sets) -> logitsN."""
    ct = import_coremltools()
    from coremltools.converters.mil import Builder as mb
    from coremltools.converters.mil.mil import types

    hidden, tokens = spec.workload.hidden, spec.tokens

    @mb.program(input_specs=[mb.TensorSpec(shape=input_shape(hidden, tokens), dtype=types.fp16)],
                opset_version=ct.target.iOS18)
    def program(hidden_states):
        if tokens == 1:
            # [1, 1, hidden] -> NCHW [1, hidden, 1, 1]: the layout the ANE runs 1x1 convolutions in.
            x = mb.transpose(x=hidden_states, perm=[0, 2, 1], name="hidden_channels")
            x = mb.expand_dims(x=x, axes=[3], name="hidden_nchw")
        else:
            x = hidden_states  # already NCHW [1, hidden, 1, T]
        outputs = []
        for s in range(len(spec.splits)):
            total = None
            for r in range(spec.repeat):
                tag = f"{s + 1}" if spec.repeat == 1 else f"{s + 1}_set{r + 1}"
                # A token-batched program returns the last op of each split as it is: name it the output.
                final = tokens > 1 and r == spec.repeat - 1
                weight = _weight_var(mb, types, encoded[r][s], f"lm_head_weight{tag}")
                conv_name = output_name(s) if final and total is None else f"lm_head_conv{tag}"
                y = mb.conv(x=x, weight=weight, name=conv_name)
                if total is None:
                    total = y
                else:
                    total = mb.add(x=total, y=y, name=output_name(s) if final else f"lm_head_sum{tag}")
            if tokens > 1:
                outputs.append(total)  # [1, rows, 1, T]: no transpose of T x vocab logits per call
                continue
            y = mb.squeeze(x=total, axes=[3], name=f"logits{s + 1}_nc")
            outputs.append(mb.transpose(x=y, perm=[0, 2, 1], name=output_name(s)))
        return tuple(outputs)

    return program


def write_package(spec: BuildSpec, program, package: Path) -> None:
    """Serialise the program as an .mlpackage with reproducible bytes (no date, no random ids)."""
    ct = import_coremltools()
    with no_pass_progress_bars():
        ct.convert(
            program,
            convert_to="mlprogram",
            minimum_deployment_target=ct.target.macOS15,
            compute_precision=ct.precision.FLOAT16,
            pass_pipeline=ct.PassPipeline.EMPTY,  # the program is already what the ANE wants
            skip_model_load=True,
            package_dir=str(package),
        )
    make_reproducible(package, spec)


def make_reproducible(package: Path, spec: BuildSpec) -> None:
    from coremltools.proto import Model_pb2

    manifest_path = package / "Manifest.json"
    manifest = json.loads(manifest_path.read_text())
    entries = manifest["itemInfoEntries"]
    root_path = entries[manifest["rootModelIdentifier"]]["path"]
    model_file = package / "Data" / root_path
    model = Model_pb2.Model()
    model.ParseFromString(model_file.read_bytes())
    metadata = model.description.metadata
    metadata.userDefined.pop("com.github.apple.coremltools.conversion_date", None)
    metadata.userDefined["com.github.anemll.anebench.build_key"] = spec.key
    metadata.shortDescription = (
        f"anebench LM head {spec.workload.vocab} x {spec.workload.hidden}, {spec.quant}, "
        f"{len(spec.splits)} splits" + (f", {spec.repeat} weight sets" if spec.repeat > 1 else "")
        + (f", {spec.tokens} tokens per predict" if spec.tokens > 1 else "")
    )
    model_file.write_bytes(model.SerializeToString(deterministic=True))
    namespace = uuid.UUID(spec.key[:32])
    renamed = {str(uuid.uuid5(namespace, entry["path"])): entry for entry in entries.values()}
    manifest["itemInfoEntries"] = dict(sorted(renamed.items()))
    manifest["rootModelIdentifier"] = str(uuid.uuid5(namespace, root_path))
    manifest_path.write_text(json.dumps(manifest, indent=4, sort_keys=True) + "\n")


def build_bundle(spec: BuildSpec, package: Path, progress: SplitProgress | None = None) -> None:
    """Generate, encode and write the bundle at ``package`` (an .mlpackage path that does not exist)."""
    encoded = encode_splits(spec, progress)
    program = build_program(spec, encoded)
    del encoded  # the program holds the arrays; drop our references so they go with it
    write_package(spec, program, package)
