"""Core AI: the LM-head .aimodel on the Neural Engine (``ane``), GPU or CPU, through Apple's framework after
Core ML (macOS 27+).

``prepare`` builds (or reuses) the asset, then loads it with specialisation options that name one preferred
compute unit kind (``AIModel.load(path, SpecializationOptions.from_preferred_compute_unit_kind(kind))``):
that first load specialises (compiles) the program for the unit and is timed and recorded on its own, as
are loading the function and the first call; none of it is in the timed calls. ``call()`` awaits the
async ``InferenceFunction`` once on one event loop made at prepare, so no loop is set up per call.
Placement is a preference: Core AI has no runtime API that says where the operations ran, so the record
says "preferred unit; not verifiable at run time". The Core AI calls are the few thin functions below,
matching coreai-core 1.0.0b3's ``coreai/runtime/__init__.pyi``; tests pass a stand-in runtime module.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import numpy as np

from ..errors import MeasurementError, UserError, setting
from ..system import preflight
from ..workloads import Workload
from .base import TOLERANCE, Availability, DtypeChoice, Engine, Prepared

# anebench device -> ComputeUnitKind constructor (coreai.runtime.ComputeUnitKind.neural_engine() etc.)
COMPUTE_UNIT_KINDS = {"ane": "neural_engine", "gpu": "gpu", "cpu": "cpu"}
OLDER_MACOS_HINT = "; use -e coreml here"  # Core ML runs the same bytes before macOS 27
PLACEMENT = "preferred unit; not verifiable at run time"
DEVICE_TIME_NOTE = (
    "Core AI has no device timestamps: wall clock of one awaited InferenceFunction call on a reused event "
    "loop (run_until_complete), which adds the Python binding's input and output handling"
)
NOT_OS_RUNTIME = (
    "coreai-core is not using macOS's Core AI framework here (USE_LOCAL_COREAI is set, or this is a "
    "development install): SpecializationOptions.is_supported() is False, so no compute unit can be asked for"
)


def _reason(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


# --- the Core AI calls: thin, with coreai-core's own names and signatures --------------------------------

def specialization_options(runtime: ModuleType, device: str) -> Any:
    """``SpecializationOptions.from_preferred_compute_unit_kind(ComputeUnitKind.<kind>())``."""
    kind = getattr(runtime.ComputeUnitKind, COMPUTE_UNIT_KINDS[device])()
    return runtime.SpecializationOptions.from_preferred_compute_unit_kind(kind)


async def load_model(runtime: ModuleType, path: Path, options: Any) -> Any:
    """``await AIModel.load(path, specialization_options)``: specialises on the first load."""
    return await runtime.AIModel.load(path, options)


def input_array(runtime: ModuleType, values: np.ndarray) -> Any:
    """``NDArray(data)``: the input, made once at prepare."""
    return runtime.NDArray(values)


# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LoadTimes:
    """Seconds of each step of getting the function ready; none of it is in the timed calls."""

    specialization_s: float  # AIModel.load with the options: specialises the program for the unit
    function_load_s: float  # AIModel.load_function
    first_call_s: float  # the first await of the function (lazy work the runtime may do there)


class CoreAIPrepared(Prepared):
    """A loaded function: ``call()`` awaits it once on the prepared event loop."""

    device_time_note = DEVICE_TIME_NOTE

    def __init__(self, workload: Workload, device: str, spec, artifact, runtime: ModuleType):
        super().__init__()
        from ..artifacts.coreml import INPUT_NAME

        manifest = artifact.manifest
        self.workload, self.device, self.spec, self.artifact = workload, device, spec, artifact
        self.run_dtype = manifest["quant"]
        notes = list(manifest.get("notes", []))
        self.dtype_note = "; ".join(notes) or None
        self.compute_units = f"preferred {COMPUTE_UNIT_KINDS[device]}"
        self.artifact_sha256 = manifest["weights_sha256"]
        self.output_tolerance = TOLERANCE["fp16"]  # computed in fp16 whatever the storage
        self.weight_bytes = int(manifest["weight_bytes"])
        self.tokens = int(manifest["tokens"])
        if self.tokens != workload.tokens:
            raise ValueError(f"asset takes {self.tokens} tokens per call, the workload {workload.tokens}")
        function = manifest["summary"]["functions"][manifest["function"]]
        self.output_names = [name for name, _ in function["outputs"]]
        self._loop = asyncio.new_event_loop()
        self._run = self._loop.run_until_complete
        started = time.perf_counter()
        try:
            options = specialization_options(runtime, device)
            self._model = self._run(load_model(runtime, artifact.package, options))
            loaded = time.perf_counter()
            self._function = self._model.load_function(manifest["function"])
        except (RuntimeError, KeyError, OSError, ValueError, TypeError) as exc:
            self.close()
            raise UserError(f"Core AI could not load {artifact.package} for the {COMPUTE_UNIT_KINDS[device]} "
                            f"unit: {_reason(exc)}") from exc
        ready = time.perf_counter()
        vectors = workload.inputs().astype(np.float16)  # (T, hidden): a column per token
        self._inputs = {INPUT_NAME: input_array(runtime, np.ascontiguousarray(vectors.T))}
        self._last: dict[str, Any] | None = None
        try:
            self.call()
        except MeasurementError:
            self.close()
            raise
        self.load_times = LoadTimes(loaded - started, ready - loaded, time.perf_counter() - ready)
        self.details.update(
            placement=PLACEMENT,
            preferred_compute_unit=COMPUTE_UNIT_KINDS[device],
            specialization_seconds=round(self.load_times.specialization_s, 6),
            function_load_seconds=round(self.load_times.function_load_s, 6),
            first_call_seconds=round(self.load_times.first_call_s, 6),
            asset_key=manifest["key"],
            splits=len(self.output_names),
            tokens=self.tokens,
            coreai_core=manifest.get("coreai_core"),
            headline_clock="wall clock of one awaited call",
        )
        self.warnings.append(
            f"placement: Core AI was asked to prefer the {COMPUTE_UNIT_KINDS[device]} unit; it has no API "
            "that says where the operations ran, so the figure is not known to be that unit's alone"
        )

    def call(self) -> None:
        try:
            self._last = self._run(self._function(self._inputs))
        except (RuntimeError, OSError, ValueError) as exc:
            raise MeasurementError(f"Core AI inference failed on {self.artifact.package.name}: "
                                   f"{_reason(exc)}") from exc

    def output(self) -> np.ndarray:
        if self._last is None:
            raise RuntimeError("output() before a call")
        last = self._last
        missing = [name for name in self.output_names if name not in last]
        if missing:
            raise MeasurementError(f"Core AI returned no {', '.join(missing)} (it returned {sorted(last)})")
        parts = [np.asarray(last[name].numpy()).reshape(-1, self.tokens).T for name in self.output_names]
        return np.concatenate(parts, axis=1).astype(np.float32)  # (T, vocab)

    def reference_rows(self, start: int, stop: int) -> np.ndarray:
        """The weights the asset stores for rows [start, stop), decoded: both encodings are per row, so
        encoding these rows alone gives the asset's values."""
        from ..artifacts.coreai import read_fp16_rows
        from ..artifacts.quant import encode

        spec = self.spec
        return encode(lambda lo, hi: read_fp16_rows(spec, start + lo, start + hi), stop - start,
                      self.workload.hidden, self.run_dtype).decode()

    def close(self) -> None:
        """Drop the function and the model (the specialised program), then the loop."""
        self._function = _closed
        self._model = self._last = None
        if not self._loop.is_closed():
            self._loop.close()


async def _closed(inputs: Any) -> Any:
    raise RuntimeError("call on a closed Core AI function")


@dataclass
class CoreAIEngine(Engine):
    token_batched = True  # the asset takes a workload's T tokens in one call
    label: ClassVar[str] = "Core AI"
    quantized_storage = ("int8",)
    # Not known for Core AI's binding: assume, as for Core ML's predict, that a call holds the GIL, so
    # anything meant to overlap with it runs in another process.
    releases_gil: ClassVar[bool] = False
    thread_safe: ClassVar[bool] = False  # one event loop per prepared function, driven by one thread
    cache_dir: Path | None = None
    runtime: ModuleType | None = None  # coreai.runtime; tests pass a stand-in

    def __post_init__(self) -> None:
        self.name = "coreai"

    def _runtime(self) -> ModuleType:
        """The injected runtime, else coreai.runtime (not kept on the engine: a fresh process gets the
        engine pickled, and a module does not pickle)."""
        if self.runtime is not None:
            return self.runtime
        from ..artifacts import _coreai

        return _coreai.runtime()

    def available(self) -> Availability:
        problem = preflight.coreai_problem(OLDER_MACOS_HINT)
        if problem:
            return Availability(False, problem)
        from ..artifacts import _coreai

        if self.runtime is None and not _coreai.installed():
            return Availability(False, _coreai.MISSING_MESSAGE)
        try:
            supported = self._runtime().SpecializationOptions.is_supported()
        except (ImportError, UserError, AttributeError) as exc:
            return Availability(False, f"coreai-core's runtime does not load here: {_reason(exc)}")
        return Availability(True) if supported else Availability(False, NOT_OS_RUNTIME)

    def devices(self) -> list[str]:
        return list(COMPUTE_UNIT_KINDS) if self.available() else []

    def version(self) -> str:
        from ..artifacts import _coreai

        return _coreai.version()

    def streams_quantized(self, quant: str, device: str) -> bool:
        return quant in self.quantized_storage

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        stored = workload.quant or "fp16"
        if stored == workload.dtype:
            return DtypeChoice(stored)
        return DtypeChoice(stored, f"{workload.dtype} weights stored by Core AI as {stored}")

    def bytes_for(self, workload: Workload, device: str) -> int:
        return workload.stored_bytes if workload.quant else workload.bytes_as("fp16")

    def spec(self, workload: Workload):
        from ..artifacts.coreai import AssetSpec

        if workload.batch != 1:
            raise UserError(
                f"engine coreai runs one input per call; {workload.name} asks for batch {workload.batch} "
                f"(for several vectors per weight read build the asset with {setting('tokens')})"
            )
        return AssetSpec.for_workload(workload)

    def plan_notes(self, workloads: list[Workload]) -> list[str]:
        from ..artifacts import _coreai

        notes = [
            "needs: macOS 27 or later on Apple silicon (native, not Rosetta) with coreai-core installed "
            "(pip install 'anebench[coreai]', Python 3.11+)",
            f"would: load each .aimodel with SpecializationOptions preferring one compute unit kind "
            f"({', '.join(f'{d} = {k}' for d, k in COMPUTE_UNIT_KINDS.items())}), time that first load "
            "(specialisation) apart, then time awaited calls; placement is recorded as "
            f"\"{PLACEMENT}\"",
        ]
        if not _coreai.installed():
            return [*notes, "coreai-core is not installed here, so no asset can be built or looked up"]
        from ..artifacts.coreai_cache import lookup_asset

        for workload in workloads:
            try:
                spec = self.spec(workload)
            except UserError as exc:
                notes.append(f"{workload.name}: {exc}")
                continue
            cached = lookup_asset(spec, self.cache_dir)
            where = f"cached at {cached.package}" if cached else (
                f"to build (here too: anebench build {workload.name} --engine coreai)")
            notes.append(f"{workload.name}: .aimodel {spec.quant}, "
                         f"{spec.expected_weight_bytes() / 1e6:.2f} MB of weights, {where}")
        return notes

    def artifact(self, workload: Workload, progress=None):
        """Build the asset for the workload (or reuse it from the cache). Works on any OS."""
        from ..artifacts.coreai_cache import build_or_reuse_asset

        return build_or_reuse_asset(self.spec(workload), self.cache_dir, progress)

    def prepare(self, workload: Workload, device: str) -> Prepared:
        problem = preflight.coreai_problem(OLDER_MACOS_HINT)
        if problem:
            raise UserError(problem)
        if device not in COMPUTE_UNIT_KINDS:
            raise UserError(
                f"device {device!r} is not a Core AI device; valid: {', '.join(COMPUTE_UNIT_KINDS)}"
            )
        spec = self.spec(workload)  # refuses what no asset can hold before anything is built
        return CoreAIPrepared(workload, device, spec, self.artifact(workload), self._runtime())
