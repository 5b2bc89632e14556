"""A run's figures beside published ones, on any host.

Where the chip is in the catalog and published figures of the same family and workload fingerprint
exist, the run sits beside them (``family_comparison``). Otherwise the run's figure is shown beside the
published ranges by device kind (ANE, Apple GPU, CPU, NVIDIA GPU), each naming its workload: measured
ANE figures (anemll-bench), and for the GPUs the datasheet memory bandwidth, since no measured figure is
published for them. A range is context, never a comparison: it pairs no fingerprints.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model import ResultRecord
from ..results.published import published_records
from ..system.chips import catalog
from .compare import ComparisonRow, family_comparison

ANE, APPLE_GPU, CPU, NVIDIA = "ANE", "Apple GPU", "CPU", "NVIDIA GPU"
KINDS = (ANE, APPLE_GPU, CPU, NVIDIA)
MEMORY_PEAK = "- (memory peak)"


@dataclass(frozen=True)
class KindRow:
    kind: str
    workload: str
    low: float | None  # GB/s; None: nothing published
    high: float | None
    what: str  # "your run (numpy:cpu)", "measured, 19 chips (anemll-bench)", "datasheets, 24 GPUs"
    yours: bool = False
    record: ResultRecord | None = None  # your run's record (its between-run interval is shown as in `run`)


@dataclass
class PublishedContext:
    family_rows: list[ComparisonRow] = field(default_factory=list)  # same chip family, same fingerprint
    kind_rows: list[KindRow] = field(default_factory=list)  # the other records beside ranges by kind
    notes: list[str] = field(default_factory=list)  # each said once


def device_kind(record: ResultRecord) -> str:
    device = record.engine.device
    if device in ("ane", "all"):  # "all" lets the framework place an LM head on the Neural Engine, as it can
        return ANE
    if device.startswith("cuda"):
        return NVIDIA
    return APPLE_GPU if device in ("gpu", "mps") else CPU


def kind_ranges(published: list[ResultRecord]) -> list[KindRow]:
    """What is published for each device kind: ANE figures per workload, GPU datasheet peaks."""
    rows: list[KindRow] = []
    by_workload: dict[str, list[float]] = {}
    for p in published:
        if p.is_single_call_bandwidth and p.gbps and p.engine.device == "ane":
            by_workload.setdefault(p.workload.name, []).append(p.gbps)
    for workload, figures in sorted(by_workload.items(), key=lambda item: -len(item[1])):
        rows.append(
            KindRow(
                ANE,
                workload,
                min(figures),
                max(figures),
                f"anemll-bench: {len(figures)} figure{'s' if len(figures) > 1 else ''}",
            )
        )
    for kind, vendor, kind_key in ((APPLE_GPU, "Apple", "soc"), (NVIDIA, "NVIDIA", "gpu")):
        chips = [c for c in catalog() if c.vendor == vendor and c.kind == kind_key and c.bandwidth_known]
        if chips:
            rows.append(
                KindRow(
                    kind,
                    MEMORY_PEAK,
                    min(c.bandwidth_gbps_min or 0 for c in chips),
                    max(c.bandwidth_gbps_max or 0 for c in chips),
                    f"datasheets: {len(chips)} chips",
                )
            )
    rows.append(KindRow(CPU, "-", None, None, "none published"))
    return rows


def published_context(
    records: list[ResultRecord], published: list[ResultRecord] | None = None
) -> PublishedContext:
    """Each record beside its chip family's published figures where there are any, else beside the
    published ranges of every device kind (its own kind first)."""
    published = published_records() if published is None else published
    context = PublishedContext()
    alone: list[ResultRecord] = []
    for record in records:
        rows, _ = family_comparison([record], published)
        if any(not row.yours for row in rows):
            context.family_rows += rows
        else:
            alone.append(record)
    if not alone:
        return context
    ranges = kind_ranges(published)
    kinds = list(dict.fromkeys(device_kind(r) for r in alone))
    for record in alone:
        context.kind_rows.append(
            KindRow(
                device_kind(record),
                record.workload.name,
                record.gbps,
                record.gbps,
                f"your run ({record.engine.name}:{record.engine.device})",
                True,
                record,
            )
        )
    order = {kind: i for i, kind in enumerate(kinds + [k for k in KINDS if k not in kinds])}
    context.kind_rows += sorted(ranges, key=lambda row: order[row.kind])
    chips = sorted({r.host.chip or r.host.cpu_model or "not detected" for r in alone})
    context.notes.append(
        f"no published figure of the same chip family and workload for this host ({', '.join(chips)}): "
        "published ranges by device kind shown for context (ANE: anemll-bench's measured figures; GPUs: the "
        "datasheet memory bandwidth, no measured GPU figure is published); they read other workloads or "
        "state peaks, so they are not a comparison"
    )
    return context


__all__ = ["KINDS", "KindRow", "PublishedContext", "device_kind", "kind_ranges", "published_context"]
