"""Comparing result files (`anebench compare A.json B.json ...`): every record of a later file is paired
with the record of the first file (the baseline) that read the same bytes on the same engine and device
(workload fingerprint, engine, device), and compared by ``measure.comparison.compare_results``: the ratio
of their GB/s with a 95% CI from their between-run intervals. Nothing is paired across fingerprints.

One file of an interleaved run (`run --interleave`) compares its configurations with its first one,
each pair by its per-round ratios (paired), whatever their engine, device or threads."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError, setting
from ..measure.comparison import COMPARISON_METHOD, Comparison, compare_results
from ..model import MeasurementKey, ResultRecord
from .files import load_result_file


@dataclass(frozen=True)
class Side:
    file: int  # index of the file among those given (0: the baseline)
    path: Path
    record: ResultRecord

    def describe(self) -> str:
        r = self.record
        return (f"{self.path} {r.engine.name}:{r.engine.device} {r.workload.name} "
                f"(fingerprint {r.workload.fingerprint[:12]})")


@dataclass(frozen=True)
class Pair:
    a: Side  # the baseline
    b: Side
    comparison: Comparison


@dataclass
class FileComparison:
    paths: list[Path]
    pairs: list[Pair] = field(default_factory=list)
    unpaired: list[Side] = field(default_factory=list)  # records with no partner of the same key
    method: str = COMPARISON_METHOD


def key_of(record: ResultRecord) -> MeasurementKey:
    """The bytes read and how, the engine and the device: what a later file's record pairs by."""
    return MeasurementKey.of(record)


def compare_interleaved(path: Path, records: list[ResultRecord]) -> FileComparison:
    """One file: each interleaved run's configurations against its first, paired by rounds."""
    groups: dict[str, list[ResultRecord]] = {}
    for record in records:
        place = record.repetitions.interleave if record.repetitions is not None else None
        if place is not None:
            groups.setdefault(place.group, []).append(record)
    if not groups:
        raise UserError(f"compare {path}: give at least two result files (the first is the baseline); one "
                        "file compares only the configurations of an interleaved run (run with "
                        f"{setting('interleave')}), and this one holds none")
    result = FileComparison([path])
    for members in groups.values():
        members.sort(key=lambda r: r.repetitions.interleave.position)  # type: ignore[union-attr]
        base = Side(0, path, members[0])
        for record in members[1:]:
            side = Side(0, path, record)
            if record.workload.fingerprint != base.record.workload.fingerprint:
                result.unpaired.append(side)
                continue
            result.pairs.append(Pair(base, side, compare_results(base.record, record)))
    if not result.pairs:
        raise UserError(f"compare {path}: the interleaved configurations read different workloads "
                        "(fingerprints); compare only results of the same workload")
    return result


def compare_records(files: list[tuple[Path, list[ResultRecord]]]) -> FileComparison:
    """Pair and compare; refuses (UserError, one line naming both sides) when nothing pairs at all."""
    if len(files) == 1:
        return compare_interleaved(*files[0])
    if len(files) < 2:
        raise UserError("compare: give at least two result files (the first is the baseline)")
    result = FileComparison([path for path, _ in files])
    base_path, base_records = files[0]
    baseline: dict[MeasurementKey, Side] = {}
    for record in base_records:
        baseline.setdefault(key_of(record), Side(0, base_path, record))
    used: set[MeasurementKey] = set()
    for index, (path, records) in enumerate(files[1:], start=1):
        for record in records:
            side = Side(index, path, record)
            partner = baseline.get(key_of(record))
            if partner is None:
                result.unpaired.append(side)
                continue
            used.add(key_of(record))
            result.pairs.append(Pair(partner, side, compare_results(partner.record, record)))
    result.unpaired = [s for k, s in baseline.items() if k not in used] + result.unpaired
    if not result.pairs:
        raise UserError(nothing_pairs(result.unpaired))
    return result


def nothing_pairs(unpaired: list[Side]) -> str:
    first = next((s for s in unpaired if s.file == 0), None)
    other = next((s for s in unpaired if s.file > 0), None)
    if first is None or other is None:
        return "compare: no records to pair (a file holds none)"
    same_bytes = first.record.workload.fingerprint == other.record.workload.fingerprint
    why = "another engine or device" if same_bytes else "different workload fingerprints"
    return (f"compare: nothing pairs: {first.describe()} and {other.describe()} have {why}; compare only "
            "results of the same workload on the same engine and device")


def compare_files(paths: list[Path]) -> FileComparison:
    """Load each file (every problem reported, InvalidFile) and compare its records with the first's."""
    if not paths:
        raise UserError("compare: give at least two result files (the first is the baseline)")
    return compare_records([(Path(p), load_result_file(Path(p), strict=True)) for p in paths])


__all__ = ["FileComparison", "Pair", "Side", "compare_files", "compare_records", "key_of"]
