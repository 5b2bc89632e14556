"""The engine protocol: load a workload onto a device once, then run one synchronised call.

Engines never time anything and never compute statistics; the shared timing loop does, so what is
tested on numpy holds for every engine.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

from ..errors import UserError, setting
from ..workloads import Workload

# Relative L2 error allowed in the output check for the dtype the weights were streamed in: an engine
# fact (16-bit accumulation error on a 4096-long dot product is ~1e-3, while a wrong result gives ~1).
TOLERANCE = {"fp32": 1e-4, "fp16": 2e-2, "bf16": 3e-2}

@dataclass(frozen=True)
class Availability:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


@dataclass(frozen=True)
class Check:
    """One line of `anebench doctor`: "ok", "FAIL" (what is wrong) or "skip" (why it was not checked)."""

    name: str
    status: Literal["ok", "FAIL", "skip"]
    detail: str

    def line(self) -> str:
        return f"{self.status:<4} {self.name}: {self.detail}"


@dataclass(frozen=True)
class DtypeChoice:
    """The dtype an engine streams, and why it differs from the workload's when it does."""

    run_dtype: str
    note: str | None = None


def upcast_when_compute_bound(workload: Workload, why: str) -> DtypeChoice:
    """16-bit weights streamed as fp32 where this engine's 16-bit matvec is compute-bound."""
    if workload.dtype == "fp32":
        return DtypeChoice("fp32")
    return DtypeChoice(
        "fp32",
        f"{workload.dtype} weights streamed as fp32 (exact upcast): {why}; "
        "weight_bytes and GB/s count the fp32 bytes read",
    )


class Prepared(ABC):
    """A workload loaded on a device. ``call()`` is one complete, synchronised call."""

    workload: Workload
    weight_bytes: int
    run_dtype: str
    dtype_note: str | None = None
    compute_units: str | None = None
    device_time_note: str = "this engine has no device timestamps: wall clock only"
    artifact_sha256: str | None = None  # sha256 of the weights file the engine loaded, where it has one
    output_tolerance: float | None = None  # None: the tolerance of run_dtype (TOLERANCE)

    def __init__(self) -> None:
        self.details: dict[str, str | int | float | bool | None] = {}
        self.warnings: list[str] = []  # the engine's own findings (e.g. Core ML op placement), recorded

    @abstractmethod
    def call(self) -> None: ...

    def device_seconds(self) -> float | None:
        """Device-side time of the last call, where the engine has device timestamps."""
        return None

    def stream_seconds(self, n: int, graph: bool = False) -> float | None:
        """Device seconds per call over ``n`` back-to-back calls timed as one window (no host sync
        between them); ``graph``: the same with the call replayed as a captured graph. None where the
        engine has no device timestamps or no graphs."""
        return None

    @abstractmethod
    def output(self) -> np.ndarray:
        """The last call's logits as float32, shape (batch, vocab)."""

    def reference_rows(self, start: int, stop: int) -> np.ndarray:
        """The weights this engine really reads for rows [start, stop) (decoded if quantized)."""
        return self.workload.weights.read_rows(start, stop)

    def reference_inputs(self) -> np.ndarray:
        return self.workload.inputs()

    def close(self) -> None:  # noqa: B027 - an optional hook: most engines hold nothing to release
        """Release device memory; the object is unusable afterwards."""


class DensePrepared(Prepared):
    """What numpy, torch and MLX share: the (vocab, hidden) weights as one dense array on ``device``,
    run in ``choice.run_dtype``, with an input and an output buffer; ``output()`` reshapes the host copy
    of the logits that ``host_logits()`` returns."""

    weights: Any
    _x: Any
    _y: Any

    def __init__(self, workload: Workload, device: str, choice: DtypeChoice) -> None:
        super().__init__()
        self.workload, self.device = workload, device
        self.run_dtype, self.dtype_note = choice.run_dtype, choice.note
        self.compute_units = device

    @abstractmethod
    def host_logits(self) -> np.ndarray:
        """The last call's logits copied to the host as float32, in any shape of batch x vocab elements."""

    def output(self) -> np.ndarray:
        return self.host_logits().reshape(self.workload.batch, self.workload.vocab)

    def close(self) -> None:
        self.weights = self._x = self._y = None


@dataclass(frozen=True)
class BundleSpec:
    """What an engine that builds one artifact per workload would build, known before building: its
    storage, tokens per call, the weight bytes one call reads, whether the cache holds it, its cache key."""

    quant: str
    tokens: int
    weight_bytes: int
    cached: bool
    key: str


@dataclass
class Engine(ABC):
    name: str = field(init=False, default="")
    label: ClassVar[str] = ""  # how text names the engine ("Core ML"); empty: its name
    token_batched: ClassVar[bool] = False  # runs Workload.tokens > 1 as one call (a token-batched bundle)
    quantized_storage: ClassVar[tuple[str, ...]] = ()  # Workload.quant values it stores and streams as such
    # Whether call() releases the Python GIL while the device works. An engine that holds it (Core ML's
    # predict) cannot overlap with anything else in its process: copies and helpers must be processes.
    releases_gil: ClassVar[bool] = True
    # Whether two threads may call into the engine at once (MLX's is not thread-safe).
    thread_safe: ClassVar[bool] = True
    # How the threads of one call are limited (None: the engine has no such setting).
    thread_control: ClassVar[str | None] = None
    # Whether the suites measure this engine on bundles it builds per workload (one per size, tokens per
    # call or storage), listed by a dry run before anything is built (``plan_bundle``). Roofline and
    # compute then step the tokens per call of token-batched bundles instead of the batch.
    plans_bundles: ClassVar[bool] = False
    # Whether the idle-state mitigations of one call apply (``with_weight_sets`` and K calls per call).
    call_mitigations: ClassVar[bool] = False
    # Published context shown beside a size sweep's fitted overhead on this engine (not a check).
    sweep_context: ClassVar[str | None] = None
    # What one call is, in the plan and the tables ("predict" where the engine runs a model's predict).
    call_name: ClassVar[str] = "call"
    # Whether the decode suite runs on this engine (a token as matvecs, or as chained bundles).
    runs_decode: ClassVar[bool] = False
    # The dtype this engine's decode bundles store and compute in, whatever the model's (None: dtype_for).
    decode_dtype: ClassVar[str | None] = None

    @property
    def title(self) -> str:
        """The engine as text names it: its label, else its name."""
        return self.label or self.name

    def thread_limit(self, threads: int) -> AbstractContextManager[bool]:
        """Limit the CPU threads one call uses, process-wide, while entered; yields whether it could."""
        return nullcontext(False)

    @abstractmethod
    def available(self) -> Availability: ...

    @abstractmethod
    def devices(self) -> list[str]:
        """Devices usable on this host, best first; empty when the engine is unavailable."""

    @abstractmethod
    def version(self) -> str: ...

    def default_device(self) -> str:
        return self.devices()[0]

    def dtype_for(self, workload: Workload, device: str) -> DtypeChoice:
        return DtypeChoice(workload.dtype)

    def free_memory(self, device: str) -> int | None:
        """Memory free where the weights will live; None: they live in host memory."""
        return None

    def cache_bytes(self, device: str) -> int | None:
        """The largest cache in front of the device's memory (for the 4x rule); None where unknown."""
        if device == "cpu":
            from ..system.host import SYSTEM_HOST

            return SYSTEM_HOST.info().llc_bytes
        return None

    def streams_quantized(self, quant: str, device: str) -> bool:
        """Whether this engine reads ``quant``-stored weights as stored (only Core ML's bundles do)."""
        return False

    def bytes_for(self, workload: Workload, device: str) -> int:
        """Weight bytes one call will read on ``device`` (for the memory preflight)."""
        return workload.bytes_as(self.dtype_for(workload, device).run_dtype)

    def plan_notes(self, workloads: list[Workload]) -> list[str]:
        """What a run of this engine would build and measure, for a dry run on a host that cannot run it."""
        return []

    def device_problem(self, device: str) -> str | None:
        """Why this engine cannot measure on ``device`` here, or None; said before anything is built."""
        availability = self.available()
        return None if availability else availability.reason

    def planning_device(self, device: str | None) -> str:
        """The device a plan names, checked without needing the device here (a dry run plans anywhere)."""
        if device is None:
            return self.default_device()
        return device

    def plan_bundle(self, workload: Workload) -> BundleSpec:
        """The bundle this engine would build for ``workload`` (engines with ``plans_bundles``)."""
        raise UserError(f"engine {self.name} builds no bundles to plan")

    def decode_chunks(self, workload: Any, chunk_bytes: int) -> list | None:
        """The bundles one decode token chains, in order, for an engine that runs a token as predicts of
        chunks of layers (each with ``name`` and ``streamed_bytes``); None: a token is matvec by matvec."""
        return None

    # The Python packages this engine needs, listed by `anebench doctor` with their versions.
    packages: ClassVar[tuple[str, ...]] = ()

    def doctor_plan(self, head: Workload) -> list[str]:
        """What ``self_check`` checks, listed where it cannot run (off a Mac)."""
        return []

    def requirement_problem(self, macos: str, installed: dict[str, str | None]) -> str | None:
        """What this host lacks for the engine: an OS release, a package (``installed``: name -> version)."""
        return None

    def self_check(self, head: Workload, say: Callable[[str], None]
                   ) -> AbstractContextManager[tuple[list[Check], Callable[[], None] | None]]:
        """`anebench doctor`'s checks of this engine's own paths on ``head`` and, while entered, a call that
        keeps its device busy (the energy counters' busy window; None where none could be prepared)."""
        return nullcontext(([], None))

    def with_weight_sets(self, repeat: int) -> Engine:
        """This engine reading ``repeat`` distinct weight sets per call (with ``call_mitigations``)."""
        raise UserError(f"engine {self.name} has no repeat-weights mitigation")

    @abstractmethod
    def prepare(self, workload: Workload, device: str) -> Prepared: ...


def check_streams_as_stored(engine: Engine, workload: Workload, device: str) -> None:
    """Refuse a quantized workload an engine would read as a dense matrix: it would stream other bytes
    (2,101 MB of fp32 instead of lut6's 396 MB) under a name that says lut6."""
    if workload.quant and not engine.streams_quantized(workload.quant, device):
        dense = workload.bytes_as(engine.dtype_for(workload, device).run_dtype)
        raise UserError(
            f"engine {engine.name}:{device} cannot stream {workload.name!r} as stored ({workload.quant}, "
            f"{workload.stored_bytes / 1e6:.2f} MB); "
            f"it would read a dense {dense / 1e6:.2f} MB head instead: "
            f"measure the unquantized head (lm_head:{workload.hidden}x{workload.vocab}:{workload.dtype}"
            f"{', e.g. llama_lm_head' if workload.name == 'llama_lm_head_lut6' else ''}) or use "
            f"{setting('engine')} coreml"
        )
