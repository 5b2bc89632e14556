"""Core ML: the LM-head bundle on the Neural Engine (``ane``), GPU, CPU or all of them.

Building (or reusing) the bundle, loading and compiling happen once in ``prepare``, outside timing;
``call()`` is one predict with a preallocated input (T tokens for a token-batched bundle), or K predicts.
Only two things here need macOS: loading the model and asking Core ML where each operation will run.
Both are thin functions; everything around them (outputs, references, bytes, placement arithmetic)
runs anywhere.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from ..artifacts.decode_bundles import COREML_DTYPE
from ..errors import MeasurementError, UserError
from ..system import preflight
from ..workloads import Workload
from .base import TOLERANCE, Availability, BundleSpec, DtypeChoice, Engine, Prepared
from .coreml_placement import (
    COMPUTE_UNITS,
    OpPlacement,
    placement_unavailable,
    summarize_placement,
)
from .coreml_runtime import CoreMLBinding, active_binding, prediction_failed

DURATION_METHOD = "get_last_predict_duration_in_nano_seconds"  # on the proxy, coremltools 8.2+
DURATION_NOTE = (
    "Core ML prediction duration (mach_absolute_time around predictionFromFeatures, or "
    "predictionsFromBatch for a batch predict), read from coremltools after every timed call; the "
    "headline (summary, gbps) is wall clock of predict(), which adds the Python binding's input checks "
    "and output conversions"
)
NO_DURATION_NOTE = (
    "Core ML has no device timestamps and this coremltools records no prediction duration (8.2+ does): "
    "wall clock of predict(); method.mitigations says which of keep-awake / batch / repeat were used"
)
HEADLINE_CLOCK = "wall clock of predict()"
ORION_DISPATCH_MS = 0.095
# Shown beside a Core ML sweep's fitted overhead, as context, not as a check: Orion's figure bypasses
# Core ML, which Orion says adds 2-4x on small ops.
ORION_CONTEXT = (
    f"context: Orion (published) measured ~{ORION_DISPATCH_MS} ms per direct ANE dispatch (its own "
    "path, not Core ML), and Core ML 2-4x more on small ops"
)



def predict_duration(model) -> Callable[[], Any] | None:
    """coremltools' reader of Core ML's duration of the last predict, where this coremltools has one."""
    proxy = getattr(model, "__proxy__", None)
    reader = getattr(proxy, DURATION_METHOD, None) if proxy is not None else None
    return reader if callable(reader) else None


class CoreMLPrepared(Prepared):
    """A loaded bundle. ``model`` is anything with Core ML's ``predict`` (tests pass a numpy stand-in)."""

    device_time_note = NO_DURATION_NOTE

    def __init__(self, workload: Workload, device: str, artifact, model, repeat: int = 1,
                 placement: list[OpPlacement] | None = None):
        super().__init__()
        from ..artifacts.coreml import INPUT_NAME, pack_tokens

        self.workload, self.device, self.artifact = workload, device, artifact
        self.model = model
        self.bundle = artifact.open()
        self.bundle_path = artifact.package
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
        self.tokens = int(manifest.get("tokens", 1))
        if self.tokens != workload.tokens:
            raise ValueError(f"bundle takes {self.tokens} tokens per predict, the workload {workload.tokens}")
        self._split_rows = [t.shape[-1] if self.tokens == 1 else t.shape[1] for t in self.bundle.outputs]
        self._split_starts = np.cumsum([0, *self._split_rows])
        if self._split_starts[-1] != workload.vocab:
            raise ValueError(
                f"bundle outputs cover {self._split_starts[-1]} rows, the workload has {workload.vocab}"
            )
        # One call reads every blob of the program once per predict: K predicts read it K times (T tokens
        # of one predict share one read).
        self.weight_bytes = self.bundle.weight_bytes * workload.batch
        inputs = workload.inputs().astype(np.float16)
        feeds = [{INPUT_NAME: pack_tokens(inputs[k * self.tokens:(k + 1) * self.tokens], self.tokens)}
                 for k in range(workload.batch)]
        self._feeds: list[dict[str, np.ndarray]] | None = feeds
        self._request: Any = feeds[0] if workload.batch == 1 else feeds
        self._predict: Callable[[Any], Any] = model.predict
        self._duration = predict_duration(model)
        if self._duration is not None:
            self.device_time_note = DURATION_NOTE
        self._last: Any = None
        self.details.update(
            bundle_weight_bytes=self.bundle.weight_bytes,
            bundle_key=manifest["key"],
            splits=len(self.output_names),
            weight_sets=repeat,
            predicts_per_call=workload.batch,
            tokens=self.tokens,
            lut_mode=manifest.get("lut_mode"),
            coremltools=manifest.get("coremltools"),
            headline_clock=HEADLINE_CLOCK,
            device_clock="Core ML prediction duration" if self._duration is not None else None,
        )
        if placement is not None:
            details, warnings = summarize_placement(placement, device)
            self.details.update(details)
            self.warnings.extend(warnings)

    def call(self) -> None:
        try:
            self._last = self._predict(self._request)
        except RuntimeError as exc:  # the binding raises every NSError as RuntimeError (its userInfo)
            raise MeasurementError(prediction_failed(self.device, self.bundle_path, exc)) from exc

    def device_seconds(self) -> float | None:
        """Core ML's own duration of the last predict (coremltools 8.2+), or None."""
        if self._duration is None:
            return None
        nanoseconds = self._duration()
        return nanoseconds / 1e9 if nanoseconds is not None else None

    def output(self) -> np.ndarray:
        from ..artifacts.coreml import unpack_logits

        results = self._last if isinstance(self._last, list) else [self._last]
        return np.concatenate([
            np.concatenate([unpack_logits(result[name], self.tokens) for name in self.output_names], axis=1)
            for result in results
        ]).astype(np.float32)

    def reference_rows(self, start: int, stop: int) -> np.ndarray:
        """Rows of the weights the bundle holds, decoded, summed over its weight sets (what one call
        applies)."""
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
        """Release the model first, then the inputs: Core ML may still hold the input arrays until the
        model is gone, and freeing them under it can crash (coremltools PR #2827)."""
        self._predict = _closed  # every reference to the model and its proxy
        self.model = self._duration = None
        self._last = None
        self._request = self._feeds = None


def _closed(request: Any) -> Any:
    raise RuntimeError("predict on a closed Core ML model")


def stored_bytes(workload: Workload, repeat: int = 1) -> int:
    """What the bundle will hold: fp16 unless quantized (Core ML has no bf16/fp32 weight storage here)."""
    base = workload.stored_bytes if workload.quant else workload.bytes_as("fp16")
    return base * repeat


@dataclass
class CoreMLEngine(Engine):
    token_batched = True  # builds a bundle that takes a workload's T tokens in one predict
    label: ClassVar[str] = "Core ML"
    quantized_storage = ("int8", "lut4", "lut6")
    # coremltools' predict (CoreMLPython.mm) runs the whole prediction with the GIL held.
    releases_gil: ClassVar[bool] = False
    plans_bundles: ClassVar[bool] = True  # one bundle per size, tokens per predict and storage
    call_mitigations: ClassVar[bool] = True  # K predicts per call, R weight sets per bundle
    sweep_context: ClassVar[str | None] = ORION_CONTEXT
    call_name: ClassVar[str] = "predict"
    runs_decode: ClassVar[bool] = True  # as ANEMLL does: embeddings, chunks of layers, the head
    decode_dtype: ClassVar[str | None] = COREML_DTYPE  # its decode bundles store and compute in it
    repeat: int = 1  # weight sets per call (the --repeat mitigation)
    cache_dir: Path | None = None
    lut_mode: str = "auto"
    binding: CoreMLBinding | None = None  # None: the active one (the native coremltools unless stated)

    def __post_init__(self) -> None:
        self.name = "coreml"

    def _binding(self) -> CoreMLBinding:
        return self.binding if self.binding is not None else active_binding()

    def available(self) -> Availability:
        if importlib.util.find_spec("coremltools") is None:
            return Availability(False, "coremltools is not installed (pip install 'anebench[coreml]')")
        problem = preflight.prediction_problem(self.label)
        return Availability(problem is None, problem or "")

    def devices(self) -> list[str]:
        if not self.available():
            return []
        return (["ane"] if preflight.ane_problem(self.label) is None else []) + ["gpu", "cpu", "all"]

    def version(self) -> str:
        return self._binding().version()

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

    def device_problem(self, device: str) -> str | None:
        availability = self.available()
        if not availability:
            return availability.reason
        return preflight.ane_problem(self.label) if device == "ane" else None

    def planning_device(self, device: str | None) -> str:
        device = device or "ane"
        if device not in COMPUTE_UNITS:
            raise UserError(f"device {device!r} is not a Core ML device; valid: {', '.join(COMPUTE_UNITS)}")
        return device

    def plan_bundle(self, workload: Workload) -> BundleSpec:
        """The bundle's storage, tokens and weight bytes (from the layout, or the cache's manifest)."""
        from ..artifacts import BuildSpec, lookup

        spec = BuildSpec.for_workload(workload, repeat=self.repeat, lut_mode=self.lut_mode)
        found = lookup(spec, self.cache_dir)
        weight_bytes = found.weight_bytes if found is not None else spec.expected_weight_bytes()
        return BundleSpec(spec.quant, spec.tokens, weight_bytes, found is not None, spec.key)

    def decode_chunks(self, workload: Any, chunk_bytes: int) -> list | None:
        from ..artifacts.decode_bundles import coreml_chunks

        return list(coreml_chunks(workload, chunk_bytes))

    packages: ClassVar[tuple[str, ...]] = ("coremltools",)

    def doctor_plan(self, head: Workload) -> list[str]:
        from .coreml_doctor import would_check

        return would_check(head)

    def requirement_problem(self, macos: str, installed: dict[str, str | None]) -> str | None:
        from .coreml_doctor import requirement_problem

        return requirement_problem(macos, installed)

    def self_check(self, head: Workload, say: Callable[[str], None]):
        from .coreml_doctor import self_check

        return self_check(self, head, say)

    def with_weight_sets(self, repeat: int) -> CoreMLEngine:
        return replace(self, repeat=repeat)

    def artifact(self, workload: Workload, progress=None):
        """Build the bundle for the workload (or reuse it from the cache). Works on any OS."""
        from ..artifacts import BuildSpec, build_or_reuse

        spec = BuildSpec.for_workload(workload, repeat=self.repeat, lut_mode=self.lut_mode)
        return build_or_reuse(spec, self.cache_dir, progress)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        problem = (preflight.ane_problem(self.label) if device == "ane"
                   else preflight.prediction_problem(self.label))
        if problem:
            raise UserError(problem)
        if device not in COMPUTE_UNITS:
            raise UserError(f"device {device!r} is not a Core ML device; valid: {', '.join(COMPUTE_UNITS)}")
        artifact = self.artifact(workload)
        units = COMPUTE_UNITS[device]
        load_warnings: list[str] = []
        binding = self._binding()
        model = binding.load_model(artifact.package, units, load_warnings)
        placement, unavailable = None, None
        try:
            placement = binding.query_placement(model, units)
        except (ImportError, AttributeError, RuntimeError, TypeError) as exc:
            unavailable = placement_unavailable(exc, self.version())
        prepared = CoreMLPrepared(workload, device, artifact, model, self.repeat, placement)
        prepared.warnings.extend(load_warnings)
        if unavailable:
            prepared.warnings.append(unavailable)
        return prepared
