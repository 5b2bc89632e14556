"""Execute a built bundle's ML program in float64 from the bytes it stores: Core ML's stand-in off macOS.

The program is read back from the package (``mlprogram``) and run op by op, so a test checks the
layout the builder really wrote (input shape, transposes, which conv feeds which output, token axis)
and the weights as stored (fp16, int8 times its scale, LUT tables indexed by packed indices), not a copy
of the builder's intentions. Only the ops the builder emits are executed; any other op is refused by
name. Weights are decoded in row chunks, so a 1 GB head runs in a few hundred MB.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .mlprogram import BundleError, MLProgramBundle, Op

CHUNK_ROWS = 4096  # rows of a weight decoded at once (float64: 4096 x 4096 x 8 = 128 MiB)
CACHE_LIMIT_BYTES = 64 << 20  # decoded weights up to this size are kept for the next predict
WEIGHT_OPS = ("const", "constexpr_lut_to_dense", "constexpr_blockwise_shift_scale")
NUMPY_INPUT_DTYPES = {"FLOAT16": np.float16, "FLOAT32": np.float32, "INT32": np.int32}


def _ints(value: np.ndarray) -> list[int]:
    return [int(v) for v in np.asarray(value).reshape(-1)]


class ReferenceProgram:
    """``predict(feed) -> {output: fp16 array}`` like MLModel.predict, computed in float64."""

    def __init__(self, bundle: MLProgramBundle | str):
        self.bundle = bundle if isinstance(bundle, MLProgramBundle) else MLProgramBundle(bundle)
        unknown = sorted({op.type for op in self.bundle.ops} - set(self._kernels()) - set(WEIGHT_OPS))
        if unknown:
            raise BundleError(f"the reference does not execute {', '.join(unknown)}")
        self._decoded: dict[str, np.ndarray] = {}

    def _kernels(self) -> dict[str, Callable[[Op, dict[str, np.ndarray]], np.ndarray]]:
        return {
            "transpose": lambda op, env: np.transpose(
                self._arg(op, "x", env), _ints(self._arg(op, "perm", env))
            ),
            "expand_dims": self._expand_dims,
            "squeeze": lambda op, env: np.squeeze(
                self._arg(op, "x", env), tuple(_ints(self._arg(op, "axes", env)))
            ),
            "reshape": lambda op, env: self._arg(op, "x", env).reshape(_ints(self._arg(op, "shape", env))),
            "identity": lambda op, env: self._arg(op, "x", env),
            "add": lambda op, env: self._arg(op, "x", env) + self._arg(op, "y", env),
            "conv": self._conv,
            # the decode chunks' ops (artifacts/decode_bundles.py)
            "mul": lambda op, env: self._arg(op, "x", env) * self._arg(op, "y", env),
            "tanh": lambda op, env: np.tanh(self._arg(op, "x", env)),
            "tile": lambda op, env: np.tile(self._arg(op, "x", env), _ints(self._arg(op, "reps", env))),
            "matmul": self._matmul,
            "gather": lambda op, env: np.take(
                self._arg(op, "x", env), self._arg(op, "indices", env).astype(np.int64),
                axis=int(self._arg(op, "axis", env)) if "axis" in op.inputs else 0,
            ),
        }

    def _matmul(self, op: Op, env: dict[str, np.ndarray]) -> np.ndarray:
        x, y = self._arg(op, "x", env), self._arg(op, "y", env)
        if "transpose_x" in op.inputs and bool(self._arg(op, "transpose_x", env)):
            x = np.swapaxes(x, -1, -2)
        if "transpose_y" in op.inputs and bool(self._arg(op, "transpose_y", env)):
            y = np.swapaxes(y, -1, -2)
        return np.matmul(x, y)

    def _arg(self, op: Op, name: str, env: dict[str, np.ndarray]) -> np.ndarray:
        bound = op.inputs.get(name)
        if not bound:
            raise BundleError(f"{op.outputs[0]}: {op.type} has no {name!r}")
        value = bound[0]
        if value in env:
            return env[value]
        if self.bundle.is_immediate(value):
            return self.bundle.immediate(value)
        return self._weight(self.bundle.producer(value), value)

    def _expand_dims(self, op: Op, env: dict[str, np.ndarray]) -> np.ndarray:
        x = self._arg(op, "x", env)
        for axis in sorted(_ints(self._arg(op, "axes", env))):
            x = np.expand_dims(x, axis if axis >= 0 else x.ndim + 1 + axis)
        return x

    def _weight_shape(self, source: Op) -> tuple[int, ...]:
        key = {"const": None, "constexpr_lut_to_dense": "indices", "constexpr_blockwise_shift_scale": "data"}
        arg = key.get(source.type, "")
        name = source.outputs[0] if arg is None else source.inputs[arg][0]
        if name not in self.bundle.blobs:
            raise BundleError(f"{source.outputs[0]}: a weight that is not a blob")
        return self.bundle.blobs[name].shape

    def _rows(self, source: Op, start: int, stop: int) -> np.ndarray:
        """Rows [start, stop) of the dense weight the op yields, (rows, rest) float64."""
        encoded = self.bundle.encoded_value(source, 0, 0)
        aligned = start - start % (encoded.group_size or 1)
        dense = self.bundle.encoded_value(source, aligned, stop).decode(start - aligned, stop - aligned)
        return dense.astype(np.float64)

    def _weight(self, source: Op, name: str) -> np.ndarray:
        """A whole weight as float64 in its declared shape (only for small ones; conv streams big ones)."""
        if source.type not in WEIGHT_OPS:
            raise BundleError(f"{name}: not computed before it is used")
        if name not in self._decoded:
            shape = self._weight_shape(source)
            self._decoded[name] = self._rows(source, 0, shape[0]).reshape(shape)
        return self._decoded[name]

    def _conv(self, op: Op, env: dict[str, np.ndarray]) -> np.ndarray:
        x = self._arg(op, "x", env)
        for name, expected in (("strides", 1), ("dilations", 1), ("groups", 1)):
            if name in op.inputs and any(v != expected for v in _ints(self._arg(op, name, env))):
                raise BundleError(f"{op.outputs[0]}: the reference runs only {name} = {expected}")
        if "pad" in op.inputs and any(_ints(self._arg(op, "pad", env))):
            raise BundleError(f"{op.outputs[0]}: the reference runs only unpadded convolutions")
        weight_name = op.inputs["weight"][0]
        source = self.bundle.producer(weight_name)
        shape = self._weight_shape(source)
        if len(shape) != 4 or shape[2:] != (1, 1) or x.ndim != 4 or x.shape[1] != shape[1]:
            raise BundleError(
                f"{op.outputs[0]}: the reference runs only 1x1 convolutions; weight {shape}, x {x.shape}"
            )
        batch, channels, height, width = x.shape
        columns = x.reshape(batch, channels, height * width)
        out = np.empty((batch, shape[0], height * width), dtype=np.float64)
        small = int(np.prod(shape)) * 8 <= CACHE_LIMIT_BYTES
        for lo in range(0, shape[0], CHUNK_ROWS):
            hi = min(shape[0], lo + CHUNK_ROWS)
            rows = (self._weight(source, weight_name).reshape(shape[0], channels)[lo:hi] if small
                    else self._rows(source, lo, hi))
            out[:, lo:hi] = np.matmul(rows, columns)
        if "bias" in op.inputs:
            out += self._arg(op, "bias", env).reshape(1, -1, 1)
        return out.reshape(batch, shape[0], height, width)

    def predict(self, feed: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        env: dict[str, np.ndarray] = {}
        for desc in self.bundle.inputs:
            if desc.name not in feed:
                raise BundleError(f"input {desc.name!r} is missing")
            value = np.asarray(feed[desc.name])
            if value.shape != desc.shape or value.dtype != NUMPY_INPUT_DTYPES.get(desc.dtype):
                raise BundleError(
                    f"input {desc.name}: got {value.dtype} {list(value.shape)}, the model takes "
                    f"{desc.dtype} {list(desc.shape)}"
                )
            env[desc.name] = value.astype(np.float64)
        kernels = self._kernels()
        for op in self.bundle.ops:
            if op.type in WEIGHT_OPS:
                continue  # constants and weights are read where they are used
            env[op.outputs[0]] = kernels[op.type](op, env)
        results = {}
        for desc in self.bundle.outputs:
            value = env[desc.name]
            if value.shape != desc.shape:
                raise BundleError(
                    f"output {desc.name}: computed {list(value.shape)}, declared {list(desc.shape)}"
                )
            results[desc.name] = value.astype(np.float16)  # Core ML returns fp16 from an fp16 program
        return results
