"""A stand-in for coremltools' MLModel and its native proxy that behaves as the binding does (coremltools 9,
``coremlpython/CoreMLPython.mm`` and ``CoreMLPythonUtils.mm``), with the bundle's own program computing the
outputs (anebench.artifacts.reference) so the engine's plumbing runs end to end off macOS:

- ``predict`` and ``batchPredict`` hold the GIL for the whole prediction (no ``gil_scoped_release``): the
  proxy blocks in a libc call made through ``ctypes.PyDLL``, which keeps the lock;
- every NSError becomes a ``RuntimeError`` whose text is ``[error userInfo]`` formatted with ``%@``
  (``Utils::handleError``): a multi-line property list such as
  ``{\\n    NSLocalizedDescription = "Error computing NN outputs.";\\n}``;
- Float16 multiarray outputs come back as float32 (``convertArrayValueToPython``, rdar://92239209);
- ``get_last_predict_duration_in_nano_seconds`` is None until a predict succeeds, and a failed predict
  leaves the previous value (the duration is stored after ``handleError``);
- MLModel.predict (Python) replaces float16 input arrays by float32 copies in the caller's dict before
  the proxy sees them (``_update_float16_multiarray_input_to_float32``), and the binding converts them
  back to the model's Float16.
"""

from __future__ import annotations

import ctypes
import time
from pathlib import Path
from typing import Any

import numpy as np

from anebench.artifacts.reference import ReferenceProgram

# PyDLL keeps the GIL across the foreign call (CDLL would release it).
_LIBC_HOLDING_GIL = ctypes.PyDLL(None)
_LIBC_HOLDING_GIL.usleep.argtypes = [ctypes.c_uint]

NN_OUTPUTS_ERROR = 'Error computing NN outputs.'


def ns_error_text(description: str, **user_info: str) -> str:
    """What the binding raises for an NSError: its userInfo dictionary as ``%@`` prints it."""
    entries = {"NSLocalizedDescription": description, **user_info}
    body = "".join(f'    {key} = "{value}";\n' for key, value in entries.items())
    return "{\n" + body + "}"


class FakeProxy:
    """coremltools' ``_MLModelProxy`` as far as anebench uses it."""

    def __init__(self, package: Path, hold_us: int = 0, reported: float = 1.0):
        self.program = ReferenceProgram(package)
        self.hold_us, self.reported = hold_us, reported
        self.fail_with: str | None = None  # the NSError description the next predicts fail with
        self.swap_outputs = False  # a broken model: its first two outputs exchanged
        self._last_ns: int | None = None

    def _features(self, feed: dict[str, Any]) -> dict[str, np.ndarray]:
        # dictToFeatures: the binding copies each array into an MLMultiArray of the model's type (Float16)
        return {name: np.asarray(value).astype(np.float16) for name, value in feed.items()}

    def _one(self, feed: dict[str, Any]) -> dict[str, np.ndarray]:
        result = self.program.predict(self._features(feed))
        if self.swap_outputs:
            first, second = list(result)[:2]
            result[first], result[second] = result[second], result[first]
        return {name: value.astype(np.float32) for name, value in result.items()}  # fp16 comes back fp32

    def _timed(self, compute):
        start = time.perf_counter_ns()
        _LIBC_HOLDING_GIL.usleep(self.hold_us)  # the prediction, with the GIL held throughout
        if self.fail_with is not None:
            raise RuntimeError(ns_error_text(self.fail_with))  # Utils::handleError, before the duration
        result = compute()
        self._last_ns = int((time.perf_counter_ns() - start) * self.reported)
        return result

    def predict(self, data: dict[str, Any], state: Any = None) -> dict[str, np.ndarray]:
        return self._timed(lambda: self._one(data))

    def batchPredict(self, data: list[dict[str, Any]]) -> list[dict[str, np.ndarray]]:  # noqa: N802 - binding
        return self._timed(lambda: [self._one(d) for d in data])

    def get_last_predict_duration_in_nano_seconds(self) -> int | None:
        return self._last_ns


class OldProxy(FakeProxy):
    """A coremltools before 8.2: no duration getter."""

    def __getattribute__(self, name: str) -> Any:
        if name == "get_last_predict_duration_in_nano_seconds":
            raise AttributeError(name)
        return super().__getattribute__(name)


class FakeMLModel:
    """``coremltools.models.MLModel`` around a loaded proxy: the Python side of predict."""

    def __init__(self, package: Path, hold_us: int = 0, reported: float = 1.0, duration: bool = True,
                 swap_outputs: bool = False):
        proxy_class = FakeProxy if duration else OldProxy
        self.__proxy__ = proxy_class(package, hold_us, reported)
        self.__proxy__.swap_outputs = swap_outputs
        self.requests: list[Any] = []  # what predict was given (the caller's own objects)

    @property
    def proxy(self) -> FakeProxy:
        return self.__proxy__

    def fail_next_predicts(self, description: str = NN_OUTPUTS_ERROR) -> None:
        self.__proxy__.fail_with = description

    def predict(self, data: dict | list[dict]) -> Any:
        if type(data) not in (list, dict):  # MLModel._check_predict_data
            raise TypeError(f'"data" parameter must be either a dict or list of dict, but got {type(data)}.')
        self.requests.append(data)
        feeds = data if isinstance(data, list) else [data]
        for feed in feeds:  # _update_float16_multiarray_input_to_float32, in the caller's dict
            for key, value in feed.items():
                if isinstance(value, np.ndarray) and value.dtype == np.float16:
                    feed[key] = value.astype(np.float32)
        if isinstance(data, dict):
            return self.__proxy__.predict(data, None)
        return self.__proxy__.batchPredict(data)
