"""Where Core ML places a model's operations (MLComputePlan's answer, summarised per compute unit), and the
warnings when it falls back or cannot say: arithmetic on plain values, so it runs anywhere."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

COMPUTE_UNITS = {"ane": "CPU_AND_NE", "gpu": "CPU_AND_GPU", "cpu": "CPU_ONLY", "all": "ALL"}
DEVICE_NAMES = {"ane": "the Neural Engine", "gpu": "the GPU", "cpu": "the CPU"}
DEVICE_OWNERS = {"ane": "ANE's", "gpu": "GPU's", "cpu": "CPU's"}
# Ops that only name constants: Core ML places no work for them in a prediction (const; constexpr_* ops
# such as constexpr_lut_to_dense decompress weights when the model loads), so they do not count for
# placement, whatever device the plan names for them.
CONSTANT_OPS = {"const"}
CONSTANT_PREFIX = "constexpr_"
PLACEMENT_COREMLTOOLS = (8, 1)  # MLComputePlan first appears in coremltools 8.1


@dataclass(frozen=True)
class OpPlacement:
    op_type: str
    device: str | None  # "ane" | "gpu" | "cpu" | None when Core ML could not say
    cost: float | None = None  # Core ML's estimated share of the model's work, 0..1


def is_constant_op(op_type: str) -> bool:
    return op_type in CONSTANT_OPS or op_type.startswith(CONSTANT_PREFIX)


def _share(counted: list[OpPlacement], device: str) -> tuple[float | None, float | None]:
    """(share of ops, share of Core ML's estimated cost) that run on ``device``."""
    ops = round(sum(op.device == device for op in counted) / len(counted), 4) if counted else None
    costs = [(op.device, op.cost) for op in counted if op.cost is not None]
    total = sum(c for _, c in costs)
    cost = round(sum(c for d, c in costs if d == device) / total, 4) if total > 0 else None
    return ops, cost


def summarize_placement(ops: list[OpPlacement], asked: str) -> tuple[dict[str, Any], list[str]]:
    """(details, warnings): where Core ML will run each op, for the compute unit that was asked for.

    Every device's op count is kept; ops that will run off the asked device are a warning (for ``all``,
    which lets Core ML choose, there is no wrong device: the counts only). Constant ops do not count.
    """
    if asked not in COMPUTE_UNITS:
        raise ValueError(f"placement for {asked!r}: not a Core ML device ({', '.join(COMPUTE_UNITS)})")
    work = [op for op in ops if not is_constant_op(op.op_type)]
    counted = [op for op in work if op.device is not None]
    details: dict[str, Any] = {"placement_asked": asked}
    details.update(
        {f"ops_on_{device}": sum(op.device == device for op in counted) for device in DEVICE_NAMES}
    )
    details["ops_unplaced"] = len(work) - len(counted)
    details["ops_constant"] = len(ops) - len(work)
    details["ane_op_share"], ane_cost = _share(counted, "ane")
    if ane_cost is not None:
        details["ane_cost_share"] = ane_cost
    if asked != "all":
        details["asked_op_share"], asked_cost = _share(counted, asked)
        if asked_cost is not None:
            details["asked_cost_share"] = asked_cost
    warnings = []
    if not counted:
        warnings.append("placement: Core ML did not say where any operation runs")
    elif asked != "all":
        fallen = [op for op in counted if op.device != asked]
        if fallen:
            kinds = sorted({f"{op.op_type} on {op.device}" for op in fallen})
            warnings.append(
                f"placement: {len(fallen)} of {len(counted)} ops fall back from {DEVICE_NAMES[asked]} "
                f"({', '.join(kinds[:6])}); the figure is not the {DEVICE_OWNERS[asked]} alone"
            )
    return details, warnings


def version_tuple(version: str) -> tuple[int, ...]:
    parts = []
    for part in version.split("."):
        digits = "".join(itertools.takewhile(str.isdigit, part))
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def placement_unavailable(exc: BaseException, coremltools_version: str) -> str:
    """The warning when MLComputePlan cannot answer: too old a coremltools, else too old a macOS."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    if version_tuple(coremltools_version) < PLACEMENT_COREMLTOOLS:
        return (f"placement: MLComputePlan unavailable ({reason}); needs coremltools 8.1+ "
                f"(this is {coremltools_version})")
    # MLComputePlan exists from macOS 14.4 and anebench runs Core ML only on macOS 15+ (preflight), so the
    # OS is not the cause here: say what failed, with the versions that did.
    return (f"placement: MLComputePlan unavailable ({reason}); coremltools {coremltools_version} on this "
            "macOS could not build a compute plan")

