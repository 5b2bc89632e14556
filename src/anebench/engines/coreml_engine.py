"""Core ML: the LM-head bundle on the Neural Engine (``ane``), GPU, CPU or all of them.

Building (or reusing) the bundle, loading and compiling happen once in ``prepare``, outside timing;
``call()`` is one predict with a preallocated input (or one batch predict of K inputs). Only two things
here need macOS: loading the model and asking Core ML where each operation will run. Both are thin
functions; everything around them (outputs, references, bytes, placement arithmetic) runs anywhere.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UserError
from ..measure.check import TOLERANCE
from ..system import preflight
from ..workloads import Workload
from .base import Availability, DtypeChoice, Engine, Prepared

COMPUTE_UNITS = {"ane": "CPU_AND_NE", "gpu": "CPU_AND_GPU", "cpu": "CPU_ONLY", "all": "ALL"}
DEVICE_CLASSES = {"MLNeuralEngineComputeDevice": "ane", "MLGPUComputeDevice": "gpu", "MLCPUComputeDevice": "cpu"}
# Ops that only name constants: Core ML places no work for them, so they do not count for placement.
CONSTANT_OPS = {"const"}


@dataclass(frozen=True)
class OpPlacement:
    op_type: str
    device: str | None  # "ane" | "gpu" | "cpu" | None when Core ML could not say
    cost: float | None = None  # Core ML's estimated share of the model's work, 0..1


def summarize_placement(ops: list[OpPlacement]) -> tuple[dict[str, Any], list[str]]:
    """(details, warnings): the share of ops Core ML prefers to run on the Neural Engine."""
    counted = [op for op in ops if op.op_type not in CONSTANT_OPS and op.device is not None]
    by_device = {device: sum(op.device == device for op in counted) for device in ("ane", "gpu", "cpu")}
    details: dict[str, Any] = {f"ops_on_{device}": count for device, count in by_device.items()}
    details["ane_op_share"] = round(by_device["ane"] / len(counted), 4) if counted else None
    costs = [op for op in counted if op.cost is not None]
    total_cost = sum(op.cost for op in costs)
    if total_cost > 0:
        details["ane_cost_share"] = round(sum(op.cost for op in costs if op.device == "ane") / total_cost, 4)
    warnings = []
    fallen = [op for op in counted if op.device != "ane"]
    if fallen:
        kinds = sorted({f"{op.op_type} on {op.device}" for op in fallen})
        warnings.append(
            f"placement: {len(fallen)} of {len(counted)} ops fall back from the Neural Engine "
            f"({', '.join(kinds[:6])}); the figure is not the ANE's alone"
        )
    if not counted:
        warnings.append("placement: Core ML did not say where any operation runs")
    return details, warnings


def load_model(package: Path, compute_units: str):  # pragma: no cover - macOS only
    """Load and compile the bundle for the compute units (macOS; compiling happens here, once)."""
    from ..artifacts._coremltools import coremltools

    ct = coremltools()

    return ct.models.MLModel(str(package), compute_units=getattr(ct.ComputeUnit, compute_units))


def query_placement(model, compute_units: str) -> list[OpPlacement]:  # pragma: no cover - macOS only
    """Ask Core ML (MLComputePlan, macOS 14.4+) where each operation of the main function will run."""
    from ..artifacts._coremltools import coremltools

    ct = coremltools()
    from coremltools.models.compute_plan import MLComputePlan

    plan = MLComputePlan.load_from_path(
        path=model.get_compiled_model_path(), compute_units=getattr(ct.ComputeUnit, compute_units)
    )
    placements = []
    for op in plan.model_structure.program.functions["main"].block.operations:
        usage = plan.get_compute_device_usage_for_mlprogram_operation(op)
        cost = plan.get_estimated_cost_for_mlprogram_operation(op)
        device = DEVICE_CLASSES.get(type(usage.preferred_compute_device).__name__) if usage else None
        placements.append(OpPlacement(op.operator_name, device, cost.weight if cost else None))
    return placements


class CoreMLPrepared(Prepared):
    """A loaded bundle. ``model`` is anything with Core ML's ``predict`` (tests pass a numpy stand-in)."""

    device_time_note = (
        "Core ML has no device timestamps: wall clock of predict(); method.mitigations says which of "
        "keep-awake / batch / repeat were used"
    )

    def __init__(self, workload: Workload, device: str, artifact, model, repeat: int = 1,
                 placement: list[OpPlacement] | None = None):
        super().__init__()
        from ..artifacts.coreml import INPUT_NAME

        self.workload, self.device, self.artifact = workload, device, artifact
        self.model = model
        self.bundle = artifact.open()
        manifest = artifact.manifest
        self.run_dtype = manifest["quant"]
        notes = list(manifest.get("notes", []))
        if self.run_dtype != workload.dtype and not notes:
            notes.append(f"{workload.dtype} weights stored by Core ML as {self.run_dtype}")
        self.dtype_note = "; ".join(notes) or None
        self.compute_units = COMPUTE_UNITS[device]
        self.artifact_sha256 = artifact.weight_sha256
        # Core ML computes in fp16 whatever the storage: the reference is the decoded stored weights.
        self.output_tolerance = TOLERANCE["fp16"]
        self.repeat = repeat
        self.output_names = [t.name for t in self.bundle.outputs]
        self._split_convs = [self.bundle.convs_for_output(name) for name in self.output_names]
        self._split_rows = [t.shape[-1] for t in self.bundle.outputs]
        self._split_starts = np.cumsum([0, *self._split_rows])
        if self._split_starts[-1] != workload.vocab:
            raise ValueError(f"bundle outputs cover {self._split_starts[-1]} rows, the workload has {workload.vocab}")
        # One call reads every blob of the program once per input: K batched predicts read it K times.
        self.weight_bytes = self.bundle.weight_bytes * workload.batch
        hidden = workload.hidden
        inputs = workload.inputs().astype(np.float16)
        self._feeds = [{INPUT_NAME: np.ascontiguousarray(row.reshape(1, 1, hidden))} for row in inputs]
        self._request: Any = self._feeds[0] if workload.batch == 1 else self._feeds
        self._predict: Callable[[Any], Any] = model.predict
        self._last: Any = None
        self.details.update(
            bundle_weight_bytes=self.bundle.weight_bytes,
            bundle_key=manifest["key"],
            splits=len(self.output_names),
            weight_sets=repeat,
            batch_predict=workload.batch,
            lut_mode=manifest.get("lut_mode"),
            coremltools=manifest.get("coremltools"),
        )
        if placement is not None:
            details, warnings = summarize_placement(placement)
            self.details.update(details)
            self.warnings.extend(warnings)

    def call(self) -> None:
        self._last = self._predict(self._request)

    def output(self) -> np.ndarray:
        results = self._last if isinstance(self._last, list) else [self._last]
        return np.stack([
            np.concatenate([np.asarray(result[name], dtype=np.float32).reshape(-1) for name in self.output_names])
            for result in results
        ])

    def reference_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows of the weights the bundle holds, decoded, summed over its weight sets (what one call applies)."""
        pieces = []
        for index, convs in enumerate(self._split_convs):
            lo, hi = max(start, self._split_starts[index]), min(stop, self._split_starts[index + 1])
            if lo >= hi:
                continue
            offset = self._split_starts[index]
            total = np.zeros((hi - lo, self.workload.hidden), dtype=np.float64)
            for conv in convs:
                total += self.bundle.decoded_rows(conv, int(lo - offset), int(hi - offset))
            pieces.append(total)
        return np.concatenate(pieces) if pieces else np.empty((0, self.workload.hidden))

    def close(self) -> None:
        self.model = self._predict = self._last = self._feeds = self._request = None


def stored_bytes(workload: Workload, repeat: int = 1) -> int:
    """What the bundle will hold: fp16 unless quantized (Core ML has no bf16/fp32 weight storage here)."""
    base = workload.stored_bytes if workload.quant else workload.bytes_as("fp16")
    return base * repeat


@dataclass
class CoreMLEngine(Engine):
    repeat: int = 1  # weight sets per call (the --repeat mitigation)
    cache_dir: Path | None = None
    lut_mode: str = "auto"

    def __post_init__(self) -> None:
        self.name = "coreml"

    def available(self) -> Availability:
        if importlib.util.find_spec("coremltools") is None:
            return Availability(False, "coremltools is not installed (pip install 'anebench[coreml]')")
        problem = preflight.coreml_problem()
        return Availability(problem is None, problem or "")

    def devices(self) -> list[str]:
        if not self.available():
            return []
        return (["ane"] if preflight.ane_problem() is None else []) + ["gpu", "cpu", "all"]

    def version(self) -> str:
        from ..artifacts._coremltools import coremltools

        return coremltools().__version__

    def streams_quantized(self, quant: str, device: str) -> bool:
        return True  # the bundle stores the quantized weights; Core ML reads them as stored

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        stored = workload.quant or "fp16"
        if stored == workload.dtype:
            return DtypeChoice(stored)
        return DtypeChoice(stored, f"{workload.dtype} weights stored by Core ML as {stored}")

    def bytes_for(self, workload: Workload, device: str) -> int:
        # Memory the bundle takes: K batched predicts each read it, but it is loaded once.
        return stored_bytes(workload, self.repeat)

    def artifact(self, workload: Workload, progress=None):
        """Build the bundle for the workload (or reuse it from the cache). Works on any OS."""
        from ..artifacts import BuildSpec, build_or_reuse

        spec = BuildSpec.for_workload(workload, repeat=self.repeat, lut_mode=self.lut_mode)
        return build_or_reuse(spec, self.cache_dir, progress)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        problem = preflight.ane_problem() if device == "ane" else preflight.coreml_problem()
        if problem:
            raise UserError(problem)
        if device not in COMPUTE_UNITS:
            raise UserError(f"device {device!r} is not a Core ML device; valid: {', '.join(COMPUTE_UNITS)}")
        artifact = self.artifact(workload)
        units = COMPUTE_UNITS[device]
        model = load_model(artifact.package, units)
        placement, unavailable = None, None
        if device == "ane":
            try:
                placement = query_placement(model, units)
            except (ImportError, AttributeError, RuntimeError, TypeError) as exc:
                unavailable = f"placement: MLComputePlan unavailable ({exc}); needs macOS 14.4+"
        prepared = CoreMLPrepared(workload, device, artifact, model, self.repeat, placement)
        if unavailable:
            prepared.warnings.append(unavailable)
        return prepared
