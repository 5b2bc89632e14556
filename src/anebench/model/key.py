"""What makes two figures the same measurement: one frozen key used by aggregation, pairing, compare and
the reports, so that no reader groups by a tuple of its own.

Two figures are comparable only where they read the same bytes the same way (the workload fingerprint:
stored dtype, quantisation, batch, tokens) on the same engine and device; across hosts, also on the same
chip, and where a chip's bandwidth depends on its configuration (cores, memory), the same configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .record import ResultRecord


@dataclass(frozen=True, order=True)
class MeasurementKey:
    fingerprint: str  # the workload fingerprint: the bytes one call reads, and how
    engine: str
    device: str
    chip: str = ""  # "" where the comparison stays on one host (pairing a run with its baseline)
    config: str = ""  # the chip's configuration, where its bandwidth depends on it

    @classmethod
    def of(cls, record: ResultRecord, chip: str = "", config: str = "") -> MeasurementKey:
        return cls(record.workload.fingerprint, record.engine.name, record.engine.device, chip, config)

    def without_config(self) -> MeasurementKey:
        """The key across configurations (a concurrency verdict is the chip's, whatever its memory)."""
        return replace(self, config="")

    def on_device(self) -> MeasurementKey:
        """The key of the bytes and the engine alone: what pairs two runs of one host."""
        return replace(self, chip="", config="")
