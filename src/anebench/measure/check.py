"""The output check: the engine really computed W @ x, compared with float64 numpy on row slices."""

from __future__ import annotations

import numpy as np

from ..engines.base import TOLERANCE, Prepared
from ..model import OutputCheck

__all__ = ["TOLERANCE", "CHECK_ROWS", "check_output", "check_rows"]
CHECK_ROWS = 256


def check_rows(vocab: int) -> list[tuple[int, int]]:
    """The first, a middle and the last block of rows (all rows when the head is small)."""
    if vocab <= 3 * CHECK_ROWS:
        return [(0, vocab)]
    mid = (vocab // 2) - CHECK_ROWS // 2
    return [(0, CHECK_ROWS), (mid, mid + CHECK_ROWS), (vocab - CHECK_ROWS, vocab)]


def check_output(prepared: Prepared, tolerance: float | None = None) -> OutputCheck:
    """Compare the last call's output with a float64 reference; call() must have run once."""
    tolerance = tolerance or prepared.output_tolerance or TOLERANCE[prepared.run_dtype]
    output = np.asarray(prepared.output(), dtype=np.float64)
    inputs = np.asarray(prepared.reference_inputs(), dtype=np.float64)
    error_sq = reference_sq = 0.0
    checked = 0
    for start, stop in check_rows(prepared.workload.vocab):
        weights = np.asarray(prepared.reference_rows(start, stop), dtype=np.float64)
        expected = inputs @ weights.T  # (batch, rows)
        got = output[:, start:stop]
        error_sq += float(np.sum((got - expected) ** 2)) if np.all(np.isfinite(got)) else float("inf")
        reference_sq += float(np.sum(expected**2))
        checked += stop - start
    relative = float(np.sqrt(error_sq / reference_sq)) if reference_sq > 0 else float(np.sqrt(error_sq))
    if not np.isfinite(relative):
        relative = 1e300
    return OutputCheck(passed=relative <= tolerance, rows_checked=checked, relative_error=relative,
                       tolerance=tolerance)
