"""The measurement executor: how a plan's steps are checked and measured.

The real executor checks each step's memory (``preflight.preflight_memory``) and measures it: a whole
record (``measure``: ``session.measure_workload``, as the campaign needs) or its parts (``measure_parts``:
``session.measure``, a ``Measurement`` that a suite builds into its record once its analysis is done).
``run_campaign`` and the suites take one (``executor=``) and default to the active one, so a test
substitutes a fake (hyperfine's ``MockExecutor``) with ``use_executor``, also under the CLI, instead of
patching the functions each module imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..engines.base import Engine
from ..model import ResultRecord
from ..system.host import SYSTEM_HOST, Host
from ..util.seam import Seam
from ..workloads import Workload
from .preflight import preflight_memory
from .session import Measurement, measure_workload
from .session import measure as measure_parts_of_workload  # not `measure`: the field of that name shadows it


def _check_memory(engine: Engine, device: str, workload: Workload, host: Host = SYSTEM_HOST) -> None:
    preflight_memory(engine, device, workload, host)


@dataclass(frozen=True)
class Executor:
    """``check_memory`` refuses a step before anything is allocated; ``measure`` makes its record;
    ``measure_parts`` measures it for a suite that builds the record itself (with its analysis)."""

    measure: Callable[..., ResultRecord] = measure_workload
    measure_parts: Callable[..., Measurement] = measure_parts_of_workload
    check_memory: Callable[..., None] = _check_memory


SESSION_EXECUTOR = Executor()
# The executor runs use where none is passed: the session's, or the one stated with use_executor, which
# measures with it wherever none is passed (the CLI's run and suites) while the block runs.
EXECUTOR_SEAM: Seam[Executor] = Seam(SESSION_EXECUTOR)
active_executor = EXECUTOR_SEAM.get
use_executor = EXECUTOR_SEAM.use
