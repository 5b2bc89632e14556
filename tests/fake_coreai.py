"""A stand-in for ``coreai.runtime`` on macOS 27, written from coreai-core 1.0.0b3's own
``coreai/runtime/__init__.pyi`` and its Python wrappers (``_aimodel.py``, ``_specialization_options.py``,
``_inference_function.py``).

Off macOS the real module has no ``ComputeUnitKind`` and its ``SpecializationOptions`` raise "only
available on macOS"; this stand-in has both, with the same names and signatures. It computes with the real
thing where it can: ``AIModel.load`` opens the asset through coreai-core's own in-package runtime
(``AIModelAsset.executable()``, which runs on Linux's CPU), so an engine test checks real outputs of the
written .aimodel. Specialisation takes ``specialize_s`` seconds, as the first load on a Mac takes seconds;
``fail_load`` / ``fail_call`` raise the ``RuntimeError`` a failing runtime would.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any


class ComputeUnitKind:
    def __init__(self, name: str):
        self.name = name

    @classmethod
    def cpu(cls) -> ComputeUnitKind:
        return cls("cpu")

    @classmethod
    def gpu(cls) -> ComputeUnitKind:
        return cls("gpu")

    @classmethod
    def neural_engine(cls) -> ComputeUnitKind:
        return cls("neural_engine")

    @classmethod
    def available_kinds(cls) -> list[ComputeUnitKind]:
        return [cls.cpu(), cls.gpu(), cls.neural_engine()]


@dataclass
class Behaviour:
    """What the stand-in does, and what it was asked (for the tests to read)."""

    supported: bool = True
    specialize_s: float = 0.0
    first_call_s: float = 0.0
    fail_load: str | None = None
    fail_call_after: int | None = None  # calls that succeed before every later call raises
    loads: list[tuple[Path, str]] = field(default_factory=list)
    calls: int = 0
    loops: set[int] = field(default_factory=set)  # id() of the event loop each call ran on


def make_runtime(behaviour: Behaviour | None = None) -> SimpleNamespace:
    """A module-like namespace with coreai.runtime's names, over the real in-package runtime."""
    from coreai.authoring import AIModelAsset
    from coreai.runtime import NDArray

    behaviour = behaviour or Behaviour()

    class SpecializationOptions:
        def __init__(self) -> None:
            raise TypeError("Use `SpecializationOptions.from_preferred_compute_unit_kind(compute_kind)`")

        @staticmethod
        def is_supported() -> bool:
            return behaviour.supported

        @classmethod
        def from_preferred_compute_unit_kind(cls, compute_unit_kind: ComputeUnitKind):
            if not isinstance(compute_unit_kind, ComputeUnitKind):
                raise TypeError(f"expected a ComputeUnitKind, got {type(compute_unit_kind).__name__}")
            instance = object.__new__(cls)
            instance.preferred_compute_unit_kind = compute_unit_kind
            return instance

    class InferenceFunction:
        def __init__(self, real: Any):
            self._real = real

        async def __call__(self, inputs: dict[str, Any] | None = None,
                           state: dict[str, Any] | None = None) -> dict[str, Any]:
            behaviour.loops.add(id(asyncio.get_running_loop()))
            behaviour.calls += 1
            if behaviour.fail_call_after is not None and behaviour.calls > behaviour.fail_call_after:
                raise RuntimeError("{ NSLocalizedDescription = \"Inference failed.\"; }")
            if behaviour.calls == 1 and behaviour.first_call_s:
                await asyncio.sleep(behaviour.first_call_s)
            return await self._real(inputs, state)

    class AIModel:
        def __init__(self) -> None:
            raise TypeError("Use `await AIModel.load(path)` to construct an AIModel instance.")

        @classmethod
        async def load(cls, path: Path | str, specialization_options: SpecializationOptions | None = None):
            if specialization_options is not None and not isinstance(specialization_options,
                                                                     SpecializationOptions):
                raise TypeError("specialization_options must be SpecializationOptions")
            kind = specialization_options.preferred_compute_unit_kind.name if specialization_options else "-"
            behaviour.loads.append((Path(path), kind))
            if behaviour.fail_load:
                raise RuntimeError(behaviour.fail_load)
            await asyncio.sleep(behaviour.specialize_s)
            instance = object.__new__(cls)
            instance._executable = AIModelAsset.load(path).executable()
            instance._model = await instance._executable.__aenter__()
            return instance

        @property
        def function_names(self) -> list[str]:
            return list(self._model.function_names)

        def load_function(self, function_name: str, intermediate_logger=None, profiler=None):
            return InferenceFunction(self._model.load_function(function_name))  # KeyError when absent

    return SimpleNamespace(ComputeUnitKind=ComputeUnitKind, SpecializationOptions=SpecializationOptions,
                           AIModel=AIModel, NDArray=NDArray, behaviour=behaviour)
