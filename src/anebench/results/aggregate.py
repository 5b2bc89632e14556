"""From stored records to the results matrix: medians over contributors, flags, tiers, verdicts, coverage.

Every derived figure follows a rule stated in RULES (printed in every report). Latencies are grouped by
workload fingerprint, so two latencies are only ever compared when the same bytes were read.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from dataclasses import dataclass, field

from ..measure.verdicts import CONCURRENCY_RULE, concurrency_verdict
from ..system.chips import Chip, catalog, host_config, lookup_chip
from .published import MAPPING_RULE, UNKNOWN_WORKLOAD
from ..model import ResultRecord, median
from .store import record_chip
from .suite_groups import Figures, SuiteGroup, suite_groups

TIER_GAP = 0.15
TIER_RULE = (
    f"per workload and engine/device, chips sorted by median GB/s; a new tier starts where a chip's median "
    f"is more than {TIER_GAP:.0%} above the next slower chip's; tier 1 is the fastest"
)
UTILISATION_RULE = (
    "utilisation = median GB/s / the chip's published memory bandwidth; where the bandwidth depends on "
    "the configuration (memory size, core count) each configuration is its own row with its own figure, "
    "and a row whose configuration is not stated shows the range; none where the bandwidth is not published"
)
MATRIX_RULE = (
    "the bandwidth matrix, tiers and utilisation hold single-call bandwidth results only (suite run, "
    "batch 1, one token, solo); sweeps, rooflines, latency, compute and concurrency have their own sections"
)
LATENCY_RULE = (
    "latencies are compared only between records of the identical workload fingerprint; rows whose "
    "artifact is unknown (the published 'unknown (lut6 or fp16)' column) are excluded from every comparison"
)
MEDIAN_RULE = "median over contributing records (each published row or stored result is one contributor)"
RULES = {
    "matrix": MATRIX_RULE,
    "median": MEDIAN_RULE,
    "tiers": TIER_RULE,
    "utilisation": UTILISATION_RULE,
    "concurrency": CONCURRENCY_RULE + "; solo = the dual-solo instances, else the chip's solo median "
                   "(flagged); combined = the stated combined figure, else the sum of the parallel instances "
                   "(flagged)",
    "latency": LATENCY_RULE,
    "published": MAPPING_RULE,
}


@dataclass
class MatrixRow:
    chip: str
    family: str
    in_catalog: bool
    config: str  # the configuration this row is, where the chip's bandwidth depends on it; else ""
    workload: str
    fingerprint: str
    engine: str
    device: str
    median_gbps: float
    contributors: int
    median_latency_s: float | None
    latency_contributors: int
    bandwidth: str
    utilisation: tuple[float, float] | None
    timing: str
    provenance: list[str]
    configs: list[str]
    flags: list[str]
    tier: int | None = None
    bandwidth_gbps: tuple[float, float] | None = None


@dataclass
class ConcurrencyRow:
    chip: str
    workload: str
    fingerprint: str  # the base workload's: a verdict belongs to the matrix row of the same bytes
    engine: str
    device: str
    solo_gbps: list[float]
    parallel_gbps: list[float]
    combined_gbps: float
    scaling: float
    verdict: str
    flags: list[str]


@dataclass
class Excluded:
    chip: str
    workload: str
    figure: str
    reason: str


@dataclass
class Aggregate:
    rows: list[MatrixRow]
    concurrency: list[ConcurrencyRow]
    missing_chips: list[Chip]
    excluded: list[Excluded]
    records: int
    suites: list[SuiteGroup] = field(default_factory=list)
    rules: dict[str, str] = field(default_factory=lambda: dict(RULES))


def _chip_of(record: ResultRecord) -> tuple[str, Chip | None]:
    name = record_chip(record)
    chip = lookup_chip(name)
    if chip:
        return chip.key, chip
    # Off the catalog a host is told apart by its CPU: two different machines are never one row.
    return (name or record.host.cpu_model or f"unknown {record.host.os} host"), None


def _mode(record: ResultRecord) -> str:
    """solo | dual-solo | parallel | combined, for published rows (mode) and the concurrency suite (phase)."""
    concurrency = record.concurrency
    phase = concurrency.get("phase") if isinstance(concurrency, dict) else None
    if phase in ("solo", "together"):
        return "dual-solo" if phase == "solo" else "parallel"
    mode = concurrency.get("mode", "") if isinstance(concurrency, dict) else ""
    if not mode or mode == "solo":
        return "solo"
    if mode.endswith("combined"):
        return "combined"
    return "dual-solo" if mode.endswith("solo") else "parallel"


def _timing(records: list[ResultRecord]) -> str:
    kinds = set()
    for r in records:
        if r.method.mitigations:
            kinds.add("mitigated (" + ", ".join(r.method.mitigations) + ")")
        elif "end-to-end" in r.method.timing:
            kinds.add("end-to-end")
        else:
            kinds.add(r.method.timing)
    return "mixed: " + " / ".join(sorted(kinds)) if len(kinds) > 1 else kinds.pop()


def _flags(records: list[ResultRecord], chip: Chip | None) -> list[str]:
    flags = []
    if len(records) == 1:
        flags.append("single report")
    if any(r.method.runs is None for r in records):
        flags.append("run count not stated")
    if any(r.method.warmup_policy is None for r in records):
        flags.append("warmup not stated")
    derived = {r.facts.gbps_derived for r in records if r.facts.gbps_derived}
    if any("percentage" in d for d in derived):
        flags.append("GB/s derived from a stated utilisation percentage")
    if any("percentage" not in d for d in derived):
        flags.append("GB/s derived from latency")
    if len({r.facts.chip_config or "" for r in records}) > 1:
        flags.append("mixed configurations")
    if len({r.method.statistic for r in records if r.latency_s() is not None}) > 1:
        flags.append("latency mixes means and medians")  # published figures state means
    if any(r.warnings for r in records):
        flags.append("measurement warnings")
    if chip is None:
        flags.append("chip not in catalog")
    return flags


def _is_unknown_artifact(record: ResultRecord) -> bool:
    return record.workload.name == UNKNOWN_WORKLOAD or record.facts.weight_bytes_unknown


def assign_tiers(rows: list[MatrixRow]) -> None:
    groups: dict[tuple, list[MatrixRow]] = defaultdict(list)
    for row in rows:
        groups[(row.fingerprint, row.engine, row.device)].append(row)
    for members in groups.values():
        ordered = sorted(members, key=lambda r: r.median_gbps)
        bands = [[ordered[0]]]
        for slower, row in itertools.pairwise(ordered):
            if row.median_gbps > slower.median_gbps * (1 + TIER_GAP):
                bands.append([])
            bands[-1].append(row)
        for tier, band in enumerate(reversed(bands), 1):
            for row in band:
                row.tier = tier


def record_config(record: ResultRecord) -> str:
    """The configuration a figure belongs to: as its source states it, else this host's cores and memory."""
    if record.facts.chip_config:
        return record.facts.chip_config
    if record.provenance == "measured":
        return host_config(record.host.cores_physical, record.host.memory_bytes)
    return ""


def row_config(record: ResultRecord, chip: Chip | None) -> str:
    """The matrix row's configuration: only where the chip's bandwidth depends on it (catalog's name when
    one matches, else as stated; "" when not stated: that row shows the chip's range)."""
    if chip is None or not chip.bandwidth_by_configuration:
        return ""
    config = record_config(record)
    return chip.matching_config(config) or record.facts.chip_config or ""


def _matrix(solo: dict[tuple, list[ResultRecord]], chips: dict[str, Chip | None]) -> list[MatrixRow]:
    rows = []
    for (chip_label, config, fingerprint, engine, device), records in solo.items():
        chip = chips[chip_label]
        figures = [r.gbps for r in records if r.gbps is not None]
        if not figures:
            continue
        latencies = [t for r in records if (t := r.latency_s()) is not None]
        gbps = median(figures)
        bandwidth = chip.bandwidth_for(config) if chip else None
        rows.append(MatrixRow(
            chip=chip_label, family=chip.family if chip else "", in_catalog=chip is not None, config=config,
            workload=records[0].workload.name, fingerprint=fingerprint, engine=engine, device=device,
            median_gbps=gbps, contributors=len(figures),
            median_latency_s=median(latencies) if latencies else None, latency_contributors=len(latencies),
            bandwidth=chip.bandwidth_label_for(config) if chip else "unknown chip",
            utilisation=chip.utilisation(gbps, config) if chip else None,
            timing=_timing(records), provenance=sorted({r.provenance for r in records}),
            configs=sorted({c for r in records if (c := r.facts.chip_config)}),
            flags=_flags(records, chip), bandwidth_gbps=bandwidth,
        ))
    assign_tiers(rows)
    order = {c.key: i for i, c in enumerate(catalog())}
    rows.sort(key=lambda r: (r.workload, r.engine, r.device, order.get(r.chip, len(order)), r.chip, r.config))
    return rows


def _suite_combined(parallel: list[ResultRecord]) -> list[float]:
    """The concurrency suite's combined GB/s over its common window, one figure per run: every copy
    of a run carries the run's analysis, so (copies, window, combined) tells the runs apart."""
    runs = {}
    for record in parallel:
        info = (record.concurrency or {})
        if info.get("combined_gbps"):
            runs[(info.get("copies"), info.get("window_s"), info["combined_gbps"])] = info["combined_gbps"]
    return list(runs.values())


def _one_set_of_instances(parallel: list[ResultRecord]) -> bool:
    """True when no parallel instance appears twice: their sum is then one run's combined figure."""
    instances = [((r.concurrency or {}).get("instance"), (r.concurrency or {}).get("copy")) for r in parallel]
    return len(set(instances)) == len(instances)


def _concurrency(groups: dict[tuple, dict[str, list[ResultRecord]]], rows: list[MatrixRow]) -> list:
    solo_median = {(r.chip, r.fingerprint, r.engine, r.device): r.median_gbps for r in rows
                   if not r.config}  # a configuration row is not the chip's solo figure
    results = []
    for key, modes in groups.items():
        flags = []
        solo = [r.gbps for r in modes.get("dual-solo", []) if r.gbps]
        parallel_records = [r for r in modes.get("parallel", []) if r.gbps]
        parallel = [r.gbps for r in parallel_records]
        combined = [r.gbps for r in modes.get("combined", []) if r.gbps] or _suite_combined(parallel_records)
        if not solo and key in solo_median:
            solo = [solo_median[key]]
            flags.append("solo reference from the chip's separate solo figure")
        if not combined and len(parallel) >= 2 and _one_set_of_instances(parallel_records):
            combined = [sum(parallel)]
            flags.append("combined = sum of the parallel instances")
        if not solo or not combined:
            continue
        verdict = concurrency_verdict(solo, median(combined))
        workload = next(iter(modes.values()))[0].workload.name
        results.append(ConcurrencyRow(
            chip=key[0], workload=workload, fingerprint=key[1], engine=key[2], device=key[3], solo_gbps=solo,
            parallel_gbps=parallel, combined_gbps=median(combined), scaling=verdict.scaling,
            verdict=verdict.verdict, flags=flags,
        ))
    results.sort(key=lambda r: (r.workload, r.chip))
    return results


def _verdicts(rows: list[ConcurrencyRow]) -> dict[tuple, tuple[str, Figures]]:
    """The verdict line (with its phases) and figures of each concurrency group, for its suite section."""
    found: dict[tuple, tuple[str, Figures]] = {}
    for c in rows:
        line = (f"solo {', '.join(f'{g:.2f}' for g in c.solo_gbps)} GB/s; together "
                f"{', '.join(f'{g:.2f}' for g in c.parallel_gbps) or '-'} GB/s; combined {c.combined_gbps:.2f} GB/s; "
                f"scaling {c.scaling:.3f}: {c.verdict}" + (f" ({'; '.join(c.flags)})" if c.flags else ""))
        found[(c.chip, c.fingerprint, c.engine, c.device)] = (line, {
            "combined_gbps": c.combined_gbps, "scaling": c.scaling, "verdict": c.verdict})
    return found


def aggregate(records: list[ResultRecord]) -> Aggregate:
    solo: dict[tuple, list[ResultRecord]] = defaultdict(list)
    concurrency: dict[tuple, dict[str, list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
    chips: dict[str, Chip | None] = {}
    excluded = []
    suite_entries: list[tuple[ResultRecord, str, str]] = []
    for record in records:
        label, chip = _chip_of(record)
        chips[label] = chip
        if _is_unknown_artifact(record):
            latency = record.latency_s()
            excluded.append(Excluded(
                label, record.workload.name,
                f"{latency * 1e3:.2f} ms" if latency else (f"{record.gbps:.2f} GB/s" if record.gbps else "-"),
                "artifact unknown (mixed latency column): never compared",
            ))
            continue
        config = row_config(record, chip)
        if record.is_single_call_bandwidth:
            solo[(label, config, record.workload.fingerprint, record.engine.name, record.engine.device)].append(
                record)
            continue
        suite_entries.append((record, label, config))
        mode = _mode(record)
        if mode != "solo":
            concurrency_info = record.concurrency
            fingerprint = record.workload.fingerprint
            if isinstance(concurrency_info, dict) and concurrency_info.get("base_fingerprint"):
                fingerprint = concurrency_info["base_fingerprint"]  # the suite's copies hold seed + i weights
            concurrency[(label, fingerprint, record.engine.name, record.engine.device)][mode].append(record)
    rows = _matrix(solo, chips)
    verdicts = _concurrency(concurrency, rows)
    order = {c.key: i for i, c in enumerate(catalog())}
    excluded.sort(key=lambda e: (order.get(e.chip, len(order)), e.chip))
    with_data = {key[0] for key in solo} | {key[0] for key in concurrency} | {e[1] for e in suite_entries}
    missing = [chip for chip in catalog() if chip.key not in with_data]
    return Aggregate(rows, verdicts, missing, excluded, len(records),
                     suite_groups(suite_entries, _verdicts(verdicts)))
