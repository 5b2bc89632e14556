"""Test engines that hold the GIL for the whole call, as Core ML's predict does, and a fake multi-device
engine. Module-level classes: a spawned copy receives the engine by value and imports this module
(spawn passes the parent's sys.path, which holds tests/)."""

from __future__ import annotations

import ctypes
from typing import ClassVar

import numpy as np

from anebench.engines.base import Availability, Engine, Prepared
from anebench.engines.numpy_engine import NumpyEngine

# PyDLL keeps the GIL across the foreign call (CDLL would release it): a blocking libc call through it
# holds the lock exactly as coremltools' predict does.
_LIBC_HOLDING_GIL = ctypes.PyDLL(None)


class GilPrepared(Prepared):
    def __init__(self, workload, micros: int):
        super().__init__()
        self.workload, self.run_dtype, self.weight_bytes = workload, "fp32", workload.bytes_as("fp32")
        self.micros = micros
        weights = workload.weights.read_rows(0, workload.vocab).astype(np.float64)
        self._y = (workload.inputs().astype(np.float64) @ weights.T).astype(np.float32)

    def call(self) -> None:
        _LIBC_HOLDING_GIL.usleep(self.micros)  # sleeps: the CPU count does not matter

    def output(self) -> np.ndarray:
        return self._y


class GilHoldingEngine(Engine):
    """Each call blocks for ``micros`` with the GIL held; declares so, as Core ML does."""

    name = "gil-holding"
    releases_gil: ClassVar[bool] = False
    micros: ClassVar[int] = 3000

    def available(self) -> Availability:
        return Availability(True)

    def devices(self) -> list[str]:
        return ["cpu"]

    def version(self) -> str:
        return "0"

    def prepare(self, workload, device):
        return GilPrepared(workload, self.micros)


class LongGilHoldingEngine(GilHoldingEngine):
    """Calls of 20 ms: a woken thread or process can wait milliseconds for a core on a loaded machine, which
    at 3 ms a call moved a measured scaling from ~1 to 2.3; at 20 ms the hold dominates the call."""

    micros: ClassVar[int] = 20000


class FakeMultiDevice(NumpyEngine):
    """numpy underneath, presented as a host with several devices of their own memory."""

    name = "fake"
    free_bytes: ClassVar[int] = 8 * 10**9
    count: ClassVar[int] = 3

    def devices(self) -> list[str]:
        return [f"fake:{i}" for i in range(self.count)] + ["cpu"]

    def free_memory(self, device: str) -> int | None:
        return self.free_bytes - 1000 * int(device.split(":")[1]) if device.startswith("fake:") else None

    def prepare(self, workload, device):
        prepared = super().prepare(workload, "cpu")
        prepared.compute_units = device  # each copy knows its device: the records must say it
        return prepared
