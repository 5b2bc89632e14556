"""Core ML's part of `anebench doctor`: where MLComputePlan places a small head on each compute unit, and
Core ML's own prediction duration against wall clock; while the checks run, a prepared head on the Neural
Engine is the work that the energy counters' busy window measures."""

from __future__ import annotations

import importlib.metadata
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..errors import MeasurementError, UserError
from ..system import preflight
from ..workloads import Workload
from . import coreml_runtime
from .base import Check, Prepared
from .coreml_placement import COMPUTE_UNITS, placement_unavailable, summarize_placement, version_tuple


class BundleEngine(Protocol):
    """The engine the checks run on (coreml_engine.CoreMLEngine), by what they use of it."""

    @property
    def label(self) -> str: ...

    def artifact(self, workload: Workload, progress: Any = None) -> Any: ...

    def prepare(self, workload: Workload, device: str) -> Prepared: ...


DURATION_CALLS = 20
DURATION_AGREEMENT = 0.5  # Core ML's duration of a predict must be within [0.5, 1] x its wall clock
UNITS = ("ane", "gpu", "cpu")
MIN_MACOS = 15


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def would_check(head: Workload) -> list[str]:
    return [
        f"MLComputePlan per unit: where Core ML places a {head.hidden}x{head.vocab} fp16 head on "
        + ", ".join(UNITS),
        f"duration reader: Core ML's prediction duration against wall clock over {DURATION_CALLS} predicts",
    ]


def requirement_problem(macos: str, installed: dict[str, str | None]) -> str | None:
    """What this Mac lacks for Core ML bundles: the macOS release, or coremltools."""
    major = version_tuple(macos)[:1]
    if major and major[0] < MIN_MACOS:
        return f"Core ML bundles here need macOS {MIN_MACOS}+"
    if installed.get("coremltools") is None:
        return "install the coreml extra (pip install 'anebench[coreml]')"
    return None


def check_placement(package, unit: str) -> Check:
    name = f"MLComputePlan {unit}"
    units = COMPUTE_UNITS[unit]
    binding = coreml_runtime.active_binding()
    try:
        model = binding.load_model(package, units)
        ops = binding.query_placement(model, units)
    except UserError as exc:
        return Check(name, "FAIL", str(exc))
    except (ImportError, AttributeError, RuntimeError, TypeError) as exc:
        return Check(name, "FAIL", placement_unavailable(exc, _version("coremltools") or "unknown"))
    details, warnings = summarize_placement(ops, unit)
    counts = f"{details[f'ops_on_{unit}']} ops on {unit}, {details['ops_unplaced']} unplaced"
    if warnings:
        return Check(name, "FAIL", f"{counts}; {'; '.join(warnings)}")
    return Check(name, "ok", counts)


def check_duration(prepared: Prepared) -> Check:
    name = "duration reader"
    if prepared.details.get("device_clock") is None:
        return Check(name, "FAIL", "coremltools records no prediction duration (8.2+ does): wall clock only")
    # coremltools answers None until a predict succeeded: a figure now would be another model's
    stale = prepared.device_seconds()
    if stale is not None:
        return Check(name, "FAIL", f"a duration ({stale * 1e3:.3f} ms) before the first predict")
    ratios = []
    for _ in range(DURATION_CALLS):
        start = time.perf_counter()
        prepared.call()
        wall = time.perf_counter() - start
        device = prepared.device_seconds()
        if device is None:
            return Check(name, "FAIL", "no duration after a predict that succeeded")
        ratios.append(device / wall)
    ratios.sort()
    middle = ratios[len(ratios) // 2]
    text = (f"Core ML duration / wall clock over {DURATION_CALLS} predicts: median {middle:.2f} "
            f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    if ratios[-1] > 1.0 or middle < DURATION_AGREEMENT:
        return Check(name, "FAIL", f"{text}; expected within [{DURATION_AGREEMENT:g}, 1]")
    return Check(name, "ok", text)


@contextmanager
def self_check(engine: BundleEngine, head: Workload, say: Callable[[str], None]
               ) -> Iterator[tuple[list[Check], Callable[[], None] | None]]:
    """(checks, a call that keeps the Neural Engine busy, or None where none could be prepared)."""
    problem = preflight.ane_problem(engine.label)
    if problem is not None:
        yield [Check("Core ML", "FAIL", problem)], None
        return
    say(f"building the {head.hidden}x{head.vocab} fp16 head")
    artifact = engine.artifact(head)
    checks = []
    for unit in UNITS:
        say(f"MLComputePlan on {unit}")
        checks.append(check_placement(artifact.package, unit))
    try:
        prepared = engine.prepare(head, "ane")
    except (UserError, MeasurementError) as exc:
        yield [*checks, Check("Core ML on the ANE", "FAIL", str(exc))], None
        return
    try:
        say("Core ML's duration against wall clock")
        checks.append(check_duration(prepared))
        yield checks, prepared.call
    finally:
        prepared.close()
