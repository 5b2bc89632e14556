"""The energy table: GB/s, joules per token and GB/s per watt by engine and device, one table per chip.

One LM-head read is one token's head cost, so joules per token = joules per call / the calls' batch.
Rows come from `run` records that carry an energy section (the Mac campaign with power on); figures are
medians over the records of the same chip, engine, device and workload fingerprint. A section that is
unavailable (e.g. "counter did not move": a busy unit's IOReport channel read 0) is a row of its own that
says so and why, with no figure.
"""

from __future__ import annotations

from collections import defaultdict
from statistics import median

from ..model import Energy, ResultRecord
from .tables import Section, natural_key

COLUMNS = [
    "engine:device",
    "workload",
    "GB/s",
    "J/token (scope)",
    "J/token (work)",
    "GB/s per W (work)",
    "GB/s per W (scope)",
    "DRAM GB/s (weights GB/s)",
    "source",
    "records",
]
NOTE = (
    "J/token = joules per call / batch (one LM-head read is one token's head cost). 'work' is the "
    "component that did the work (IOReport: ane for the Neural Engine, gpu for the GPU and MPS, cpu for the "
    "CPU); 'scope' is the counter's whole scope (IOReport: the SoC package; RAPL: the CPU packages; NVML: "
    "the board). DRAM GB/s is read+write from the memory controllers' histograms over the timed window, "
    "beside the weight bytes the calls streamed in that window; they agree within the stated resolution "
    "(one bucket width per die), and a record whose two views disagree carries a warning. Medians over "
    "records; the counters see every process on the machine."
)


def record_energy(record: ResultRecord) -> Energy | None:
    """The record's energy section (files of schema /1 kept it in extras; their upgrader moves it here)."""
    return record.energy


def _fmt(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _median(values: list[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None


def _row(records: list[tuple[ResultRecord, Energy]]) -> list[str]:
    first, energy = records[0]
    per_token = [
        e.joules_per_call / r.workload.batch if e.joules_per_call is not None else None for r, e in records
    ]
    work = [e.component(e.work_component) if e.work_component else None for _, e in records]
    work_per_token = [
        c.joules_per_call / r.workload.batch if c and c.available and c.joules_per_call is not None else None
        for (r, _), c in zip(records, work)
    ]
    drams = [e.dram_traffic for _, e in records if e.dram_traffic and e.dram_traffic.available]
    dram = "-"
    if drams:
        dram = (
            f"{_fmt(_median([d.gbps for d in drams]), 1)} ({_fmt(_median([d.weight_gbps for d in drams]), 1)}"
            f"; resolution {_fmt(_median([d.resolution_gbps for d in drams]), 0)})"
        )
    label = energy.work_component or "-"
    stalled = [c for _, e in records if e.work_component and (c := e.component(e.work_component))
               and not c.available]
    work_cell = (f"{_fmt(_median(work_per_token), 4)} ({label})" if _median(work_per_token) is not None
                 else f"unavailable ({stalled[0].reason})" if stalled else "-")
    return [
        f"{first.engine.name}:{first.engine.device}",
        first.workload.name,
        _fmt(_median([r.gbps for r, _ in records])),
        _fmt(_median(per_token), 4),
        work_cell,
        _fmt(_median([e.work_gbps_per_watt for _, e in records])),
        _fmt(_median([e.gbps_per_watt for _, e in records])),
        dram,
        energy.source or "-",
        str(len(records)),
    ]


def _unavailable_row(records: list[tuple[ResultRecord, Energy]]) -> list[str]:
    """Records whose energy is unavailable: no figure, and why (each distinct reason once)."""
    first, energy = records[0]
    reasons = list(dict.fromkeys(e.reason or "no reason given" for _, e in records))
    why = "; ".join(reasons[:3]) + (f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else "")
    return [f"{first.engine.name}:{first.engine.device}", first.workload.name,
            _fmt(_median([r.gbps for r, _ in records])), "unavailable", "unavailable", "-", "-", "-",
            f"{energy.source or '-'}: unavailable: {why}", str(len(records))]


def energy_sections(records: list[ResultRecord]) -> list[Section]:
    """One section per chip that has `run` records with energy; none when there are none."""
    by_chip: dict[str, dict[tuple, list[tuple[ResultRecord, Energy]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for record in records:
        energy = record_energy(record)
        if record.suite != "run" or energy is None or record.gbps is None:
            continue
        key = (record.engine.name, record.engine.device, record.workload.fingerprint, energy.available)
        by_chip[record.chip or "unknown chip"][key].append((record, energy))
    sections = []
    for chip in sorted(by_chip, key=natural_key):
        groups = by_chip[chip]
        order = sorted(groups, key=lambda k: (natural_key(groups[k][0][0].workload.name), k))
        rows = [_row(groups[key]) if key[3] else _unavailable_row(groups[key]) for key in order]
        sections.append(Section(f"Energy: {chip}", COLUMNS, rows, note=NOTE, kind="energy"))
    return sections
