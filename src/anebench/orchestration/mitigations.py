"""The idle-state mitigations one measurement runs with, as values.

Code reads the values (fresh processes start their own spinner when ``keep_awake`` is set); the record's
sentences (``method.mitigations``) are derived from them when the record is built, so no behaviour
depends on a sentence being in a list.
"""

from __future__ import annotations

from dataclasses import dataclass

KEEP_AWAKE = "keep-awake: a separate process kept one CPU core busy during warmup and timing"


@dataclass(frozen=True)
class UsedMitigations:
    """What was done against the idle states while one measurement ran (the plan's ``Mitigations``
    applied to one step): the keep-awake spinner, the CPU engine's threads left beside it, and, on an
    engine with call mitigations, K predicts and R weight sets per call."""

    keep_awake: bool = False  # a spinner process keeps a core busy (fresh processes start their own)
    spinner_threads: int | None = None  # a CPU engine's threads beside the spinner (None: not limited)
    predicts: int = 1  # K predicts of one input each per call
    repeat: int = 1  # R distinct weight sets per call (logits summed)

    def __post_init__(self) -> None:
        if self.predicts < 1 or self.repeat < 1:
            raise ValueError(f"predicts and repeat are counts of at least 1, not {self.predicts} and "
                             f"{self.repeat}")

    def __bool__(self) -> bool:
        return self != UsedMitigations()

    def describe(self) -> list[str]:
        """The record's sentences, one per mitigation used (``method.mitigations``)."""
        used = [KEEP_AWAKE] if self.keep_awake else []
        if self.spinner_threads is not None:
            used.append(f"keep-awake on the CPU: the engine ran {self.spinner_threads} thread(s), one core "
                        "left to the spinner")
        if self.predicts > 1:
            used.append(
                f"predicts-per-call {self.predicts}: {self.predicts} predicts of one input each per call; "
                f"weight_bytes counts {self.predicts} reads of every weight"
            )
        if self.repeat > 1:
            used.append(f"repeat {self.repeat}: the bundle reads {self.repeat} distinct weight sets per call "
                        f"(logits summed); weight_bytes counts all {self.repeat}")
        return used

    def with_(self, other: UsedMitigations) -> UsedMitigations:
        """Both sets together (a caller's own mitigations and a step's)."""
        threads = other.spinner_threads if other.spinner_threads is not None else self.spinner_threads
        return UsedMitigations(
            keep_awake=self.keep_awake or other.keep_awake,
            spinner_threads=threads,
            predicts=max(self.predicts, other.predicts),
            repeat=max(self.repeat, other.repeat),
        )
