"""From stored records to the results matrix: medians over contributors, flags, tiers, verdicts, coverage.

Every derived figure follows a rule stated in RULES (printed in every report). Latencies are grouped by
workload fingerprint, so two latencies are only ever compared when the same bytes were read.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from dataclasses import dataclass, field

from ..measure.checks import rejudged
from ..measure.comparison import relative_halfwidth
from ..measure.uncertainty import GbpsRange, gbps_range, log_halfwidth, spread_range
from ..measure.verdicts import (
    CONCURRENCY_RULE,
    INCONCLUSIVE,
    INCONCLUSIVE_RULE,
    concurrency_verdict,
    scaling_halfwidth,
)
from ..model import THREADS_OF_ONE_PROCESS, Concurrency, MeasurementKey, ResultRecord, median
from ..system.chips import Chip, catalog, host_config, lookup_chip
from .published import MAPPING_RULE, UNKNOWN_WORKLOAD
from .suite_groups import Figures, SuiteGroup, suite_groups

TIER_GAP = 0.15
TIER_RULE = (
    f"per workload and engine/device, chips sorted by median GB/s; a new tier starts where a chip's median "
    f"is more than {TIER_GAP:.0%} above the next slower chip's and the gap exceeds their between-run 95% "
    "half-widths combined in quadrature (stated figures count as exact points); tier 1 is the fastest"
)
UNCERTAINTY_RULE = (
    "a chip's +- is the largest between-run 95% half-width among its measured contributors (the spread of "
    "each run's repetition medians); stated figures (published, imported) are points: their sources give "
    "no interval, and a run of one repetition has none"
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
                   "(flagged); runs are grouped by copy mode and threads per copy; " + INCONCLUSIVE_RULE,
    "latency": LATENCY_RULE,
    "uncertainty": UNCERTAINTY_RULE,
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
    gbps_halfwidth: float | None = None  # the range's half-width on the log scale; None: no range
    gbps_range: GbpsRange | None = None  # one record: its between-run range; several: the spread between them

    @property
    def key(self) -> MeasurementKey:
        return MeasurementKey(self.fingerprint, self.engine, self.device, self.chip, self.config)


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
    mode: str = ""  # how the copies ran: threads | processes
    threads_per_copy: int | None = None
    scaling_halfwidth: float | None = None  # relative 95% half-width; None: every figure is a point

    @property
    def key(self) -> MeasurementKey:
        """The chip's measurement this verdict belongs to (across configurations)."""
        return MeasurementKey(self.fingerprint, self.engine, self.device, self.chip)


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
    name = record.chip
    chip = lookup_chip(name)
    if chip:
        return chip.key, chip
    # Off the catalog a host is told apart by its CPU: two different machines are never one row.
    return (name or record.host.cpu_model or f"unknown {record.host.os} host"), None


def _mode(record: ResultRecord) -> str:
    """solo | dual-solo | parallel | combined, from the record's concurrency section."""
    phase = record.concurrency.phase if record.concurrency is not None else None
    return {"solo": "dual-solo", "together": "parallel", "combined": "combined"}.get(phase or "", "solo")


# A concurrency run's configuration: the measurement, then the copy mode and threads per copy.
ConcurrencyKey = tuple[MeasurementKey, str, "int | None"]


def _concurrency_key(label: str, record: ResultRecord, section: Concurrency) -> ConcurrencyKey:
    """One verdict per run configuration: the suite's copies (seed + i weights) group by the base
    fingerprint, several devices by their list, and copy mode and threads per copy are part of the key."""
    fingerprint = section.base_fingerprint or record.workload.fingerprint
    device = (
        ",".join(dict.fromkeys(section.devices)) if len(set(section.devices)) > 1 else record.engine.device
    )
    return (MeasurementKey(fingerprint, record.engine.name, device, label), section.mode,
            section.threads_per_copy)


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
    if any(rejudged(r) for r in records):  # stored warnings, with the checks re-run by today's rules
        flags.append("measurement warnings")
    if chip is None:
        flags.append("chip not in catalog")
    return flags


def _is_unknown_artifact(record: ResultRecord) -> bool:
    return record.workload.name == UNKNOWN_WORKLOAD or record.facts.weight_bytes_unknown


def tier_boundary(slower: MatrixRow, faster: MatrixRow) -> bool:
    """A new tier starts at ``faster`` only where the gap is both large and beyond the uncertainty."""
    gap = faster.median_gbps - slower.median_gbps
    combined = math.hypot((faster.gbps_halfwidth or 0.0) * faster.median_gbps,
                          (slower.gbps_halfwidth or 0.0) * slower.median_gbps)
    return faster.median_gbps > slower.median_gbps * (1 + TIER_GAP) and gap > combined


def assign_tiers(rows: list[MatrixRow]) -> None:
    groups: dict[tuple, list[MatrixRow]] = defaultdict(list)
    for row in rows:
        groups[(row.fingerprint, row.engine, row.device)].append(row)
    for members in groups.values():
        ordered = sorted(members, key=lambda r: r.median_gbps)
        bands = [[ordered[0]]]
        for slower, row in itertools.pairwise(ordered):
            if tier_boundary(slower, row):
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


def _matrix(solo: dict[MeasurementKey, list[ResultRecord]],
            chips: dict[str, Chip | None]) -> list[MatrixRow]:
    rows = []
    for key, records in solo.items():
        chip_label, config = key.chip, key.config
        chip = chips[chip_label]
        figures = [r.gbps for r in records if r.gbps is not None]
        if not figures:
            continue
        latencies = [t for r in records if (t := r.latency_s()) is not None]
        # one record: its own between-run range; several: the spread between them (the largest single
        # interval would hide contributors at 16.8, 28.5 and 35.7 GB/s behind one run's +-9%)
        found = spread_range(figures) if len(figures) > 1 else gbps_range(records[0])
        gbps = found.gbps if found is not None else median(figures)
        bandwidth = chip.bandwidth_for(config) if chip else None
        rows.append(MatrixRow(
            chip=chip_label, family=chip.family if chip else "", in_catalog=chip is not None, config=config,
            workload=records[0].workload.name, fingerprint=key.fingerprint, engine=key.engine,
            device=key.device, median_gbps=gbps, contributors=len(figures),
            median_latency_s=median(latencies) if latencies else None, latency_contributors=len(latencies),
            bandwidth=chip.bandwidth_label_for(config) if chip else "unknown chip",
            utilisation=chip.utilisation(gbps, config) if chip else None,
            timing=_timing(records), provenance=sorted({r.provenance for r in records}),
            configs=sorted({c for r in records if (c := r.facts.chip_config)}),
            flags=_flags(records, chip), bandwidth_gbps=bandwidth,
            gbps_halfwidth=log_halfwidth(found), gbps_range=found,
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
        info = record.concurrency
        if info is not None and info.combined_gbps:
            runs[(info.copies, info.window_s, info.combined_gbps)] = info.combined_gbps
    return list(runs.values())


def _one_set_of_instances(parallel: list[ResultRecord]) -> bool:
    """True when no parallel instance appears twice: their sum is then one run's combined figure."""
    instances = [r.concurrency.copy_ if r.concurrency else None for r in parallel]
    return len(set(instances)) == len(instances)


def _serialised(records: list[ResultRecord]) -> bool:
    """Copies that were threads of one process around a call that holds the GIL never overlapped."""
    return any(r.concurrency is not None and r.concurrency.mode == "threads"
               and r.concurrency.call_releases_gil is False for r in records)


def _sum_halfwidth(records: list[ResultRecord]) -> float | None:
    """Relative half-width of a sum of figures: their known half-widths in quadrature (points add none)."""
    known = [(r.gbps or 0.0) * h for r in records if (h := relative_halfwidth(r)) is not None]
    return math.sqrt(sum(x * x for x in known)) / sum(r.gbps or 0.0 for r in records) if known else None


def _concurrency(groups: dict[ConcurrencyKey, dict[str, list[ResultRecord]]],
                 rows: list[MatrixRow]) -> list:
    # a configuration row is not the chip's solo figure
    solo_rows = {r.key: r for r in rows if not r.config}
    results = []
    for (key, mode, threads_per_copy), modes in groups.items():
        flags = []
        solo_records = [r for r in modes.get("dual-solo", []) if r.gbps]
        solo = [r.gbps for r in solo_records if r.gbps]
        solo_halfwidths = [relative_halfwidth(r) for r in solo_records]
        parallel_records = [r for r in modes.get("parallel", []) if r.gbps]
        parallel = [r.gbps for r in parallel_records if r.gbps]
        combined = [r.gbps for r in modes.get("combined", []) if r.gbps] or _suite_combined(parallel_records)
        combined_halfwidth = None  # a stated or window-counted combined figure is a point
        if not solo and key in solo_rows:
            solo, solo_halfwidths = [solo_rows[key].median_gbps], [solo_rows[key].gbps_halfwidth]
            flags.append("solo reference from the chip's separate solo figure")
        if not combined and len(parallel) >= 2 and _one_set_of_instances(parallel_records):
            combined = [sum(parallel)]
            combined_halfwidth = _sum_halfwidth(parallel_records)
            flags.append("combined = sum of the parallel instances")
        if not solo or not combined:
            continue
        halfwidth = scaling_halfwidth(solo, solo_halfwidths, combined_halfwidth)
        verdict = concurrency_verdict(solo, median(combined), halfwidth)
        outcome = verdict.verdict
        if _serialised([r for members in modes.values() for r in members]):
            outcome = INCONCLUSIVE  # the figures are kept; they cannot tell a ceiling from the GIL
            flags.append(THREADS_OF_ONE_PROCESS)
        workload = next(iter(modes.values()))[0].workload.name
        results.append(ConcurrencyRow(
            chip=key.chip, workload=workload, fingerprint=key.fingerprint, engine=key.engine,
            device=key.device, solo_gbps=solo, parallel_gbps=parallel, combined_gbps=median(combined),
            scaling=verdict.scaling, verdict=outcome, flags=flags, mode=mode,
            threads_per_copy=threads_per_copy, scaling_halfwidth=halfwidth,
        ))
    results.sort(key=lambda r: (r.workload, r.chip))
    return results


def _verdicts(rows: list[ConcurrencyRow]) -> dict[MeasurementKey, tuple[str, Figures]]:
    """The verdict line (with its phases) and figures of each concurrency group, for its suite section."""
    found: dict[MeasurementKey, tuple[str, Figures]] = {}
    for c in rows:
        line = (
            f"solo {', '.join(f'{g:.2f}' for g in c.solo_gbps)} GB/s; together "
            f"{', '.join(f'{g:.2f}' for g in c.parallel_gbps) or '-'} GB/s; "
            f"combined {c.combined_gbps:.2f} GB/s; "
            f"scaling {c.scaling:.3f}: {c.verdict}" + (f" ({'; '.join(c.flags)})" if c.flags else "")
        )
        found[c.key] = (line, {
            "combined_gbps": c.combined_gbps, "scaling": c.scaling, "verdict": c.verdict})
    return found


def aggregate(records: list[ResultRecord]) -> Aggregate:
    solo: dict[MeasurementKey, list[ResultRecord]] = defaultdict(list)
    concurrency: dict[ConcurrencyKey, dict[str, list[ResultRecord]]] = defaultdict(lambda: defaultdict(list))
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
            solo[MeasurementKey.of(record, label, config)].append(record)
            continue
        suite_entries.append((record, label, config))
        mode = _mode(record)
        if mode != "solo" and record.concurrency is not None:
            concurrency[_concurrency_key(label, record, record.concurrency)][mode].append(record)
    rows = _matrix(solo, chips)
    verdicts = _concurrency(concurrency, rows)
    order = {c.key: i for i, c in enumerate(catalog())}
    excluded.sort(key=lambda e: (order.get(e.chip, len(order)), e.chip))
    with_data = {key.chip for key in solo} | {key[0].chip for key in concurrency} | {
        e[1] for e in suite_entries}
    missing = [chip for chip in catalog() if chip.key not in with_data]
    return Aggregate(rows, verdicts, missing, excluded, len(records),
                     suite_groups(suite_entries, _verdicts(verdicts)))
