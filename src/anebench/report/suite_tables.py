"""The suites' report sections: one table per sweep, roofline, concurrency run; latency and compute tables.

Only groups with data make sections: a store holding published figures and one `run` has none of these.
Sizes are in MB (10^6 bytes); each latency column is in the unit that gives its smallest figure three
significant digits.
"""

from __future__ import annotations

from ..results.aggregate import Aggregate
from ..results.suite_groups import SUITE_TITLES, SuiteGroup, SuitePoint
from .format import time_unit
from .tables import Section, natural_key, sig3


def _num(value: float | None, spec: str, scale: float = 1.0) -> str:
    return "-" if value is None else format(value * scale, spec)


def _opt(value: object) -> str:
    return "-" if value is None else str(value)


def _latency(points: list[SuitePoint]) -> tuple[str, list[str]]:
    """The column's header and cells: one unit for the column; a statistic other than the median is named."""
    unit, scale = time_unit([p.latency_s for p in points])
    cells = ["-" if p.latency_s is None else sig3(p.latency_s / scale)
             + ("" if p.statistic == "median" else f" ({p.statistic})") for p in points]
    return f"latency {unit}", cells


def _vectors(point: SuitePoint) -> str:
    """The vectors one call multiplies: the batch, or a token-batched bundle's tokens per predict."""
    return str(point.batch) if point.tokens == 1 else f"{point.tokens} tokens"


def _rows(group: SuiteGroup) -> tuple[list[str], list[list[str]]]:
    points = group.points
    latency, lat = _latency(points)
    if group.kind == "decode":
        return (["depth", "MB/token", latency, "tok/s", "GB/s", "predicted tok/s"],
                [[_opt(p.depth), sig3(p.weight_bytes / 1e6), lat[i],
                  sig3(1 / p.latency_s) if p.latency_s else "-", _num(p.gbps, ".2f"),
                  sig3(p.predicted_tokens_per_s) if p.predicted_tokens_per_s else "-"]
                 for i, p in enumerate(points)])
    if group.kind == "sweep":
        knee = group.figures.get("knee_bytes")
        return (["size MB", latency, "GB/s", "past the knee", "threads"],
                [[sig3(p.weight_bytes / 1e6), lat[i], _num(p.gbps, ".2f"),
                  "yes" if isinstance(knee, int) and p.weight_bytes >= knee else "no", _opt(p.threads)]
                 for i, p in enumerate(points)])
    if group.kind == "roofline":
        return (["batch", latency, "GFLOP/s", "weight GB/s", "threads"],
                [[_vectors(p), lat[i], _num(p.flop_per_s, ".2f", 1e-9), _num(p.gbps, ".2f"),
                  _opt(p.threads)] for i, p in enumerate(points)])
    if group.kind == "latency":
        return (["workload", "KB", latency, "threads"],
                [[p.workload, f"{p.weight_bytes / 1e3:.1f}", lat[i], _opt(p.threads)]
                 for i, p in enumerate(points)])
    if group.kind == "compute":
        return (["batch", latency, "TFLOP/s", "threads"],
                [[str(p.batch), lat[i], _num(p.flop_per_s, ".4f", 1e-12), _opt(p.threads)]
                 for i, p in enumerate(points)])
    if group.kind == "concurrency":
        return (["copy", "phase", "threads", "GB/s", latency, "provenance"],
                [[_opt(p.copy), _opt(p.phase), _opt(p.threads), _num(p.gbps, ".2f"), lat[i], p.provenance]
                 for i, p in enumerate(points)])
    if group.kind == "quant":
        return (["variant", "stored MB", latency, "GB/s", "fp16-eq GB/s", "verdict"],
                [[_opt(p.variant), f"{p.weight_bytes / 1e6:.2f}", lat[i], _num(p.gbps, ".2f"),
                  _num(p.gbps_fp16_equivalent, ".2f"), p.quant_verdict or "(reference)"]
                 for i, p in enumerate(points)])
    return (["batch", "tokens", "MB", latency, "GB/s", "provenance"],
            [[str(p.batch), str(p.tokens), f"{p.weight_bytes / 1e6:.2f}", lat[i], _num(p.gbps, ".2f"),
              p.provenance] for i, p in enumerate(points)])


def _order(group: SuiteGroup) -> tuple:
    kinds = list(SUITE_TITLES)
    return (kinds.index(group.kind) if group.kind in kinds else len(kinds), natural_key(group.workload),
            natural_key(group.chip), natural_key(group.engine), natural_key(group.device))


def suite_sections(agg: Aggregate, figures: bool = False) -> list[Section]:
    """One section per suite group, suites in the report's order and names in natural order within each;
    ``figures``: each sweep, roofline and concurrency run with its plot (as the suite command draws it)."""
    sections = []
    for group in sorted(agg.suites, key=_order):
        columns, rows = _rows(group)
        note = group.result + (f". Rule: {group.rule}" if group.rule else "")
        figure = None
        if figures:
            from .suite_figures import suite_figure_png

            figure = suite_figure_png(group)
        sections.append(Section(group.title, columns, rows, note=note, kind=group.kind, figure=figure))
    return sections
