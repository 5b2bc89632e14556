"""`anebench sweep -e coreml`: Core ML heads of log-spaced sizes, built (or reused) one per size.

The same fit as every sweep (latency = overhead + bytes / bandwidth, with its gates) separates the ANE's
per-predict cost from its bandwidth on bundles that differ only in their number of rows. Orion's
published direct-dispatch figure is shown beside the fitted overhead as context, not as a check:
it bypasses Core ML, which Orion says adds 2-4x on small ops.
"""

from __future__ import annotations

from ...engines.coreml_engine import CoreMLEngine
from ...errors import UserError, setting
from ...measure.sweep import MiB, sweep_sizes
from ...workloads import Workload
from .coreml_plan import CoreMLPlan, calls_text, plan_bundle
from .sweep import SweepPlan, sweep_workloads

DEFAULT_MIN_BYTES = 4 * MiB
DEFAULT_POINTS = 8
ORION_DISPATCH_MS = 0.095
ORION_CONTEXT = (
    f"context: Orion (published) measured ~{ORION_DISPATCH_MS} ms per direct ANE dispatch (its own "
    "path, not Core ML), and Core ML 2-4x more on small ops"
)


def plan_coreml_sweep(engine: CoreMLEngine, device: str, base: Workload, min_bytes: int | None,
                      max_bytes: int | None, points: int | None) -> SweepPlan:
    """Sizes from a few MB up to the full head (fp16 bytes); the knee comes from the data (no cache size)."""
    full = base.bytes_as("fp16")
    max_bytes = min(max_bytes or full, full)
    min_bytes = min_bytes or DEFAULT_MIN_BYTES
    if min_bytes >= max_bytes:
        raise UserError(f"sweep on coreml: {setting('min_mb')} ({min_bytes / MiB:.1f}) must be below the "
                        "largest size "
                        f"({max_bytes / MiB:.1f} MiB, at most the full head)")
    return SweepPlan(sweep_sizes(min_bytes, max_bytes, points or DEFAULT_POINTS), None)


def plan_coreml_sweep_bundles(engine: CoreMLEngine, device: str, base: Workload, plan: SweepPlan, runs: int,
                              budget_s: float | None) -> CoreMLPlan:
    workloads = sweep_workloads(engine, device, base, plan)
    bundles = [
        plan_bundle(
            engine, w, calls_text(engine, device, f"{w.weight_bytes / 1e6:.1f} MB predict", runs, budget_s)
        )
        for w in workloads
    ]
    return CoreMLPlan("sweep", device, bundles, ["fit: latency = overhead + bytes / bandwidth past the knee",
                                                 ORION_CONTEXT])
