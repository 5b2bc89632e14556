"""`anebench compare mine.json --leaderboard REPO`: a run placed within its chip's distribution.

Each of the run's single-call results is paired with the repository's accepted submissions of the
same chip, workload fingerprint, engine and device; every submission counts once (its median over
its records), so a submitter with many records does not outweigh the others. The run's rank is among
those submissions and itself (1 = the fastest); the spread is between submitters: min, median, max
and (max - min) / median.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ResultRecord, median
from ..system.chips import lookup_chip
from .leaderboard import Repository, measurement_key


def chip_label(record: ResultRecord) -> str:
    name = record.chip
    chip = lookup_chip(name)
    return chip.key if chip else (name or record.host.cpu_model or "unknown")


def _key(record: ResultRecord) -> tuple[str, str, str, str]:
    return (chip_label(record), record.workload.fingerprint, record.engine.name, record.engine.device)


@dataclass
class Placement:
    chip: str
    workload: str
    fingerprint: str
    engine: str
    device: str
    gbps: float
    peers: list[tuple[str, float]] = field(default_factory=list)  # (submission, its median GB/s), sorted
    own_submission: str | None = None  # the run itself is in the repository (left out of the peers)

    @property
    def rank(self) -> int:
        """1 = the fastest among the peers and this run (a tie ranks with the faster)."""
        return 1 + sum(1 for _, g in self.peers if g > self.gbps)

    @property
    def of(self) -> int:
        return len(self.peers) + 1

    def spread(self) -> tuple[float, float, float, float] | None:
        """(min, median, max, (max - min) / median) of the peers' GB/s; None without peers."""
        if not self.peers:
            return None
        values = [g for _, g in self.peers]
        mid = median(values)
        return min(values), mid, max(values), (max(values) - min(values)) / mid


@dataclass
class Placed:
    rows: list[Placement]
    notes: list[str]


def place(mine: list[ResultRecord], repo: Repository) -> Placed:
    by_key: dict[tuple, dict[str, list[float]]] = {}
    for sub in repo.accepted:
        for r in sub.records:
            if r.is_single_call_bandwidth and r.gbps is not None:
                by_key.setdefault(_key(r), {}).setdefault(sub.path, []).append(r.gbps)
    # the run itself, submitted before (with or without its host ids): found by id or by its samples
    of = {**repo.submission_of(), **{measurement_key(r): s.path for s in repo.accepted for r in s.records}}
    rows, notes = [], []
    for record in mine:
        label = f"{record.workload.name} on {record.engine.name}:{record.engine.device}"
        if not record.is_single_call_bandwidth or record.gbps is None:
            notes.append(f"{label}: not a single-call bandwidth result (suite {record.suite}); not placed")
            continue
        own = of.get(record.id or "") or of.get(measurement_key(record))
        submissions = by_key.get(_key(record), {})
        peers = sorted(
            ((path, median(g)) for path, g in submissions.items() if path != own),
            key=lambda item: (-item[1], item[0]),
        )
        chip = chip_label(record)
        if not peers:
            notes.append(
                f"{label}: no other submission of chip {chip} with the same workload fingerprint, "
                "engine and device"
            )
        rows.append(
            Placement(
                chip,
                record.workload.name,
                record.workload.fingerprint,
                record.engine.name,
                record.engine.device,
                record.gbps,
                peers,
                own,
            )
        )
        if own:
            notes.append(f"{label}: this run is already in the repository ({own}); placed among the others")
    return Placed(rows, notes)


__all__ = ["Placed", "Placement", "place"]
