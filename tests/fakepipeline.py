"""The pipeline's seams, stated by tests instead of patching what each module imported: the measurement
executor (hyperfine's MockExecutor: run_campaign and the suites measure through it, also under the CLI),
the engine registry, and the Core ML binding (coremltools' load and placement query)."""

from __future__ import annotations

from collections.abc import Callable

from anebench import engines as engines_module
from anebench.engines import ENGINE_FACTORIES, Engine, Registry, coreml_runtime
from anebench.engines.coreml_runtime import CoreMLBinding
from anebench.orchestration import executor as executor_module
from anebench.orchestration.executor import SESSION_EXECUTOR, Executor
from anebench.system import power


def no_memory_check(*args, **kwargs) -> None:
    """A memory check that passes: for a test about the plan, not about this machine's free memory."""


def state_executor(monkeypatch, measure: Callable | None = None, check_memory: Callable | None = None,
                   measure_parts: Callable | None = None) -> Executor:
    """Make runs measure with ``measure`` (a record), suites with ``measure_parts`` (a Measurement) and check
    memory with ``check_memory`` (each the session's where not given) until the test ends:
    executor.use_executor's seam."""
    stated = Executor(measure=measure or SESSION_EXECUTOR.measure,
                      check_memory=check_memory or SESSION_EXECUTOR.check_memory,
                      measure_parts=measure_parts or SESSION_EXECUTOR.measure_parts)
    monkeypatch.setattr(executor_module.EXECUTOR_SEAM, "stated", stated)
    return stated


real_measure = SESSION_EXECUTOR.measure  # the session's measure_workload, for a fake that wraps it
real_measure_parts = SESSION_EXECUTOR.measure_parts  # the session's measure (a Measurement), to wrap


def state_engines(monkeypatch, **factories: Callable[[], Engine] | None) -> Registry:
    """Look engines up in ENGINE_FACTORIES with ``factories`` stated over it (None removes that engine)
    until the test ends: engines.use_engines's seam."""
    registry = {**ENGINE_FACTORIES, **factories}
    stated = {name: factory for name, factory in registry.items() if factory is not None}
    monkeypatch.setattr(engines_module.ENGINES_SEAM, "stated", stated)
    return stated


def state_coreml(monkeypatch, load_model: Callable | None = None, query_placement: Callable | None = None,
                 version: Callable[[], str] | None = None) -> CoreMLBinding:
    """Make Core ML load bundles with ``load_model`` and place ops with ``query_placement`` (each the native
    coremltools' where not given) wherever no engine states its own binding, until the test ends:
    coreml_runtime.use_binding's seam. Prediction runs on what ``load_model`` returns."""
    native = coreml_runtime.NATIVE_BINDING
    stated = CoreMLBinding(load_model=load_model or native.load_model,
                           query_placement=query_placement or native.query_placement,
                           version=version or native.version)
    monkeypatch.setattr(coreml_runtime.BINDING_SEAM, "stated", stated)
    return stated


def state_meters(monkeypatch, factory: power.MeterFactory) -> power.MeterFactory:
    """Open every device's energy counter with ``factory`` until the test ends: power.use_meters's seam."""
    monkeypatch.setattr(power.METERS_SEAM, "stated", factory)
    return factory
