"""The user's figure beside the published ones for the same chip family, same workload fingerprint.

A published figure is shown only beside a run of the identical fingerprint (the same bytes, stored the
same way, same batch and tokens) on the same engine and unit: the fp16 head has one fingerprint on every
compute unit, and a GPU run beside published ANE figures compares units, not machines. Every row names
its workload.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..measure.comparison import Comparison, compare_results, relative_halfwidth
from ..model import MeasurementKey, ResultRecord
from ..results.published import published_records
from ..system.chips import lookup_chip


@dataclass
class ComparisonRow:
    chip: str
    config: str
    workload: str
    engine: str
    gbps: float | None
    latency_ms: float | None
    source: str
    yours: bool
    statistic: str = "median"  # published latencies are means of predict() calls
    halfwidth: float | None = None  # your run's between-run 95% half-width (relative); None: a point
    versus: Comparison | None = None  # a published figure against your run, by your between-run interval
    record: ResultRecord | None = None  # your run's record (its GB/s range is shown as everywhere else)


def versus_label(comparison: Comparison | None) -> str:
    """Short: '+3% n.s.' (inside your run's uncertainty), '-20% sig.', or '? (1 rep.)' when unknown."""
    if comparison is None:
        return "-"
    change = f"{comparison.ratio - 1:+.0%}"
    if comparison.significant is None:
        return f"{change} ?"
    return f"{change} {'sig.' if comparison.significant else 'n.s.'}"


def family_comparison(
    records: list[ResultRecord], published: list[ResultRecord] | None = None
) -> tuple[list[ComparisonRow], list[str]]:
    """(rows, notes): the user's records first, then published solo figures of the same family and
    workload fingerprint; notes say why a record has nothing to compare with."""
    published = published_records() if published is None else published
    rows, notes = [], []
    for record in records:
        name = record.chip
        chip = lookup_chip(name)
        if chip is None:
            notes.append(
                f"{record.workload.name}: this host's chip ({name or 'not detected'}) is not in the "
                "chip catalog; no published figures to compare with"
            )
            continue
        peers = [
            p
            for p in published
            if MeasurementKey.of(p) == MeasurementKey.of(record)
            and p.is_single_call_bandwidth
            and (peer := lookup_chip(p.host.chip)) is not None
            and peer.family == chip.family
        ]
        latency = record.latency_s()
        rows.append(
            ComparisonRow(
                chip.key,
                "this run",
                record.workload.name,
                f"{record.engine.name}:{record.engine.device}",
                record.gbps,
                latency * 1e3 if latency else None,
                "your run",
                True,
                record.method.statistic,
                relative_halfwidth(record),
                record=record,
            )
        )
        if not peers:
            notes.append(
                f"{record.workload.name} on {record.engine.name}:{record.engine.device}: no published "
                f"figure of the same fingerprint (the same bytes read the same way) on "
                f"{record.engine.name}:{record.engine.device} for the {chip.family} family"
            )
        for p in sorted(peers, key=lambda p: (p.host.chip or "", -(p.gbps or 0))):
            p_latency = p.latency_s()
            rows.append(
                ComparisonRow(
                    peer_chip_key(p.host.chip),
                    p.facts.chip_config or "",
                    p.workload.name,
                    f"{p.engine.name}:{p.engine.device}",
                    p.gbps,
                    p_latency * 1e3 if p_latency else None,
                    p.provenance_note.split(";")[0] + (" (GB/s derived)" if p.facts.gbps_derived else ""),
                    False,
                    p.method.statistic,
                    None,
                    compare_results(record, p) if p.gbps and record.gbps else None,
                )
            )
    return rows, notes


def peer_chip_key(chip: str | None) -> str:
    """A published peer's catalog key (every published chip is in the catalog; the name otherwise)."""
    entry = lookup_chip(chip)
    return entry.key if entry is not None else (chip or "unknown")
