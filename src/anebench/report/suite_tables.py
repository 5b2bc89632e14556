"""The suites' report sections: one table per sweep, roofline, concurrency run; latency and compute tables.

Only groups with data make sections: a store holding published figures and one `run` has none of these.
"""

from __future__ import annotations

from ..results.aggregate import Aggregate
from ..results.suite_groups import SuiteGroup, SuitePoint
from .tables import Section

MiB = 1024**2


def _num(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


def _latency_ms(p: SuitePoint) -> str:
    return "-" if p.latency_s is None else f"{p.latency_s * 1e3:.4f} ({p.statistic})"


def _rows(group: SuiteGroup) -> tuple[list[str], list[list[str]]]:
    points = group.points
    if group.kind == "sweep":
        knee = group.figures.get("knee_bytes")
        return (["size MiB", "latency ms", "GB/s", "past the knee", "threads"],
                [[f"{p.weight_bytes / MiB:.2f}", _latency_ms(p), _num(p.gbps, ".2f"),
                  "yes" if isinstance(knee, int) and p.weight_bytes >= knee else "no", _opt(p.threads)]
                 for p in points])
    if group.kind == "roofline":
        return (["batch", "latency ms", "GFLOP/s", "weight GB/s", "threads"],
                [[str(p.batch), _latency_ms(p), _num(p.flop_per_s, ".2f", 1e-9), _num(p.gbps, ".2f"),
                  _opt(p.threads)] for p in points])
    if group.kind == "latency":
        return (["workload", "KB", "latency us", "threads"],
                [[p.workload, f"{p.weight_bytes / 1e3:.1f}", _num(p.latency_s, ".2f", 1e6), _opt(p.threads)]
                 for p in points])
    if group.kind == "compute":
        return (["batch", "latency ms", "TFLOP/s", "threads"],
                [[str(p.batch), _latency_ms(p), _num(p.flop_per_s, ".4f", 1e-12), _opt(p.threads)]
                 for p in points])
    if group.kind == "concurrency":
        return (["copy", "phase", "threads", "GB/s", "latency ms", "provenance"],
                [[_opt(p.copy), _opt(p.phase), _opt(p.threads), _num(p.gbps, ".2f"), _latency_ms(p), p.provenance]
                 for p in points])
    return (["batch", "tokens", "MB", "latency ms", "GB/s", "provenance"],
            [[str(p.batch), str(p.tokens), f"{p.weight_bytes / 1e6:.2f}", _latency_ms(p), _num(p.gbps, ".2f"),
              p.provenance] for p in points])


def suite_sections(agg: Aggregate) -> list[Section]:
    sections = []
    for group in agg.suites:
        columns, rows = _rows(group)
        note = group.result + (f". Rule: {group.rule}" if group.rule else "")
        sections.append(Section(group.title, columns, rows, note=note))
    return sections
