"""Loading a Core ML bundle and asking where its ops run, and the binding (``CoreMLBinding``,
``use_binding``) that states a stand-in for them: below both the engine (coreml_engine) and its doctor
checks (coreml_doctor), which import it, so neither imports the other for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..util.seam import Seam
from .coreml_placement import COMPUTE_UNITS, DEVICE_NAMES, OpPlacement

DEVICE_CLASSES = {
    "MLNeuralEngineComputeDevice": "ane",
    "MLGPUComputeDevice": "gpu",
    "MLCPUComputeDevice": "cpu",
}

def prediction_failed(device: str, package: Path, exc: BaseException) -> str:
    """One line for a predict that Core ML refused: the unit, the bundle and the NSError's text."""
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (f"Core ML prediction failed on {DEVICE_NAMES.get(device, 'all units')} ({COMPUTE_UNITS[device]}) "
            f"for the bundle {package}: {reason}")


def check_loaded(model, package: Path, messages: list[str], import_messages: Sequence[str] = ()) -> None:
    """Refuse, in one line naming the bundle and the reason, a model Core ML did not load.

    coremltools' MLModel does not raise when loading fails: it warns, keeps ``__proxy__`` None and
    returns a model whose first predict (or get_compiled_model_path) raises a plain Exception.
    """
    if getattr(model, "__proxy__", None) is not None:
        return
    error = getattr(model, "_framework_error", None)
    binding = [m for m in import_messages if "_MLModelProxy" in m]
    if error is not None:
        reason = str(error)
    elif messages:
        reason = "; ".join(messages)
    elif binding:
        reason = f"coremltools cannot reach Core ML from this Python ({binding[0]})"
    else:
        reason = "coremltools returned it without a Core ML model (no reason given)"
        version = getattr(getattr(model, "_spec", None), "specificationVersion", None)
        if version:  # coremltools skips loading, silently, a spec newer than this Core ML supports
            reason += f"; the bundle is specification version {version}, which this Core ML may not support"
    raise UserError(f"Core ML could not load the bundle {package}: {reason}")


def load_model(package: Path, compute_units: str, warnings_out: list[str] | None = None):
    """Load and compile the bundle for the compute units (macOS; compiling happens here, once).

    What coremltools says while loading is collected: the reason of a failure (a one-line UserError),
    or, when the model loads, warnings that ``warnings_out`` receives for the record.
    """
    from ..artifacts._coremltools import IMPORT_MESSAGES, captured_messages, coremltools

    ct = coremltools()
    said = list(IMPORT_MESSAGES)
    if getattr(ct.models.model, "_MLModelProxy", True) is None and not any(
        "_MLModelProxy" in m for m in said
    ):
        said.append("Failed to load _MLModelProxy, coremltools' binding to Core ML")  # imported before us
    try:
        with captured_messages() as messages:
            model = ct.models.MLModel(str(package), compute_units=getattr(ct.ComputeUnit, compute_units))
    except Exception as exc:  # coremltools raises plain Exceptions, and protobuf's own, for a bad bundle
        reason = " ".join(str(exc).split()) or type(exc).__name__
        raise UserError(f"Core ML could not load the bundle {package}: {reason}") from exc
    check_loaded(model, package, messages, said)
    if warnings_out is not None:
        warnings_out.extend(f"coremltools, loading the bundle: {' '.join(m.split())}" for m in messages)
    return model


def query_placement(model, compute_units: str) -> list[OpPlacement]:  # pragma: no cover - macOS only
    """Ask Core ML (MLComputePlan: coremltools 8.1+, macOS 14.4+) where each operation of the main function
    will run with these compute units."""
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


def coremltools_version() -> str:
    from ..artifacts._coremltools import coremltools

    return coremltools().__version__


@dataclass(frozen=True)
class CoreMLBinding:
    """The part of coremltools that only a Mac runs: loading a bundle (MLModel), asking where its ops run
    (MLComputePlan), and the version that explains a missing plan. ``CoreMLEngine(binding=...)`` takes a
    stand-in, and ``use_binding`` states one wherever none is passed (the CLI, doctor, decode), so tests
    give one instead of patching this module's functions."""

    load_model: Callable[..., Any] = load_model
    query_placement: Callable[[Any, str], list[OpPlacement]] = query_placement
    version: Callable[[], str] = coremltools_version


NATIVE_BINDING = CoreMLBinding()
# The binding engines load and place with where none states its own: the native one, or the one stated
# with use_binding while its block runs.
BINDING_SEAM: Seam[CoreMLBinding] = Seam(NATIVE_BINDING)
active_binding = BINDING_SEAM.get
use_binding = BINDING_SEAM.use
