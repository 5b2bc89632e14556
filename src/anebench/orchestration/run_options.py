"""How one measurement runs: the options every suite and the campaign pass down to ``session.measure``."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..measure.clock import PERF_COUNTER, Clock
from ..measure.timing import DEFAULT_RUNS
from ..measure.warmup import WarmupPolicy
from ..system.host import SYSTEM_HOST, Host
from .mitigations import UsedMitigations


@dataclass
class RunOptions:
    runs: int = DEFAULT_RUNS  # timed calls in all, split over the repetitions
    repetitions: int = 1  # independent repetitions, each after its own warmup (`run` asks for 3)
    fresh_processes: bool = False  # each repetition loads the workload in a new process
    time_budget_s: float | None = None
    warmup: WarmupPolicy = field(default_factory=WarmupPolicy)
    clock: Clock = PERF_COUNTER
    # what was done against the idle states, as values; the record's sentences are derived from them
    mitigations: UsedMitigations = field(default_factory=UsedMitigations)
    suite: str = "run"
    timing: str = "wall clock per call"
    power: bool = False  # read an energy counter around the timed calls (record.energy)
    threads: int | None = None  # --threads: the CPU threads one call may use (None: the engine's default)
    host: Host = field(default_factory=lambda: SYSTEM_HOST)

    @property
    def keep_awake(self) -> bool:
        """A spinner process keeps a core busy (fresh processes start their own)."""
        return self.mitigations.keep_awake
