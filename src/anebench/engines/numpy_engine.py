"""numpy: BLAS sgemv on the CPU. Always available; the reference every other engine is checked against."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import ClassVar

import numpy as np

from ..system.blas import blas_summary
from ..workloads import Workload
from .base import Availability, DensePrepared, DtypeChoice, Engine, Prepared, upcast_when_compute_bound


class NumpyPrepared(DensePrepared):
    def __init__(self, workload: Workload, choice: DtypeChoice):
        super().__init__(workload, "cpu", choice)
        self.weights = np.empty(workload.shape, dtype=np.float32)
        workload.fill_rows(self.weights)
        self.weight_bytes = self.weights.nbytes
        inputs = workload.inputs()
        if workload.batch == 1:
            self._x = np.ascontiguousarray(inputs[0])
            self._y = np.empty(workload.vocab, dtype=np.float32)
        else:
            self._x = np.ascontiguousarray(inputs)
            self._y = np.empty((workload.batch, workload.vocab), dtype=np.float32)
        self.details.update(blas_summary())

    def call(self) -> None:
        if self.workload.batch == 1:
            np.dot(self.weights, self._x, out=self._y)
        else:
            np.matmul(self._x, self.weights.T, out=self._y)

    def host_logits(self) -> np.ndarray:
        return self._y


class NumpyEngine(Engine):
    runs_decode: ClassVar[bool] = True
    name = "numpy"
    thread_control: ClassVar[str | None] = "threadpoolctl (BLAS threads)"

    @contextmanager
    def thread_limit(self, threads: int) -> Iterator[bool]:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=threads):
            yield True

    def available(self) -> Availability:
        return Availability(True)

    def devices(self) -> list[str]:
        return ["cpu"]

    def version(self) -> str:
        return np.__version__

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        return upcast_when_compute_bound(workload, "numpy has no fast fp16 matvec")

    def prepare(self, workload: Workload, device: str) -> Prepared:
        return NumpyPrepared(workload, self.dtype_for(workload, device))
