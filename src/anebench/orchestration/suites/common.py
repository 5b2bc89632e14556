"""What the suites share: resizing a workload, the device's cache size, progress callbacks."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ...errors import MeasurementError, UserError
from ...measure.timing import ProgressCallback
from ...model import ResultRecord
from ...workloads import DTYPE_BYTES, Workload

# Creates one progress task per measurement: (label, total) -> callback(done, total).
ProgressFactory = Callable[[str, int], ProgressCallback]


def no_progress(_label: str, _total: int) -> ProgressCallback:
    return lambda _done, _total: None


def synthetic_only(workload: Workload, suite: str) -> None:
    if workload.source is not None:
        raise UserError(f"{suite}: workload {workload.name!r} comes from a checkpoint; this suite reshapes "
                        "the weights, so give a synthetic one (a catalog name or lm_head:HIDDENxVOCAB)")


def parametric(hidden: int, vocab: int, dtype: str, seed: int = 0, batch: int = 1) -> Workload:
    return Workload(f"lm_head:{hidden}x{vocab}:{dtype}", hidden, vocab, dtype, seed=seed, batch=batch)


def with_dtype(workload: Workload, dtype: str) -> Workload:
    if dtype == workload.dtype:
        return workload
    return replace(parametric(workload.hidden, workload.vocab, dtype, workload.seed, workload.batch),
                   note=workload.note)


def resized(base: Workload, target_bytes: int, run_dtype: str) -> Workload:
    """The base head's hidden size and dtype with as many rows as make ``target_bytes`` in ``run_dtype``."""
    row_bytes = base.hidden * DTYPE_BYTES[run_dtype]
    vocab = max(1, round(target_bytes / row_bytes))
    return parametric(base.hidden, vocab, base.dtype, base.seed)


def latency_of(record: ResultRecord) -> float:
    """The latency of a record a suite just measured (a measured record always has its median)."""
    value = record.latency_s()
    if value is None:
        raise MeasurementError(f"{record.workload.name}: a measured record without its latency")
    return value
