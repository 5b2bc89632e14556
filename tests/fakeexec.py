"""A measurement executor with stated behaviour, for tests (hyperfine's MockExecutor): run_campaign and the
suites measure through it, also under the CLI, instead of a test patching what each module imported."""

from __future__ import annotations

from collections.abc import Callable

from anebench.orchestration import executor as executor_module
from anebench.orchestration.executor import SESSION_EXECUTOR, Executor


def no_memory_check(*args, **kwargs) -> None:
    """A memory check that passes: for a test about the plan, not about this machine's free memory."""


def state_executor(monkeypatch, measure: Callable | None = None,
                   check_memory: Callable | None = None) -> Executor:
    """Make runs measure with ``measure`` and check memory with ``check_memory`` (each the session's where
    not given) until the test ends: executor.use_executor's seam."""
    stated = Executor(measure=measure or SESSION_EXECUTOR.measure,
                      check_memory=check_memory or SESSION_EXECUTOR.check_memory)
    monkeypatch.setattr(executor_module, "_stated", stated)
    return stated


real_measure = SESSION_EXECUTOR.measure  # the session's measure_workload, for a fake that wraps it
