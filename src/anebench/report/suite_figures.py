"""The suites' own plots for the HTML report, drawn from a suite group's stored records by the same functions
the suite commands use (report.suite_plots), so the report shows the sweep, roofline and concurrency figures
a reader saw when measuring. A group whose records lack what a plot needs gets no plot, never a guess."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from ..results.suite_groups import SuiteGroup
from .suite_plots import plot_concurrency, plot_roofline, plot_sweep


def suite_figure_png(group: SuiteGroup) -> bytes | None:
    """The group's plot as PNG bytes; None for a suite without a plot (latency, compute, batched) or a group
    whose records cannot draw one (a published figure, a missing phase)."""
    draw = {"sweep": _sweep, "roofline": _roofline, "concurrency": _concurrency}.get(group.kind)
    if draw is None or not group.records:
        return None
    arguments = draw(group)
    if arguments is None:
        return None
    plot, args = arguments
    with tempfile.TemporaryDirectory(prefix="anebench-figure-") as folder:
        stem = Path(folder) / "figure"
        plot(*args, stem, records=group.records)
        return (Path(folder) / "figure.png").read_bytes()


def _sweep(group: SuiteGroup):
    records = [r for r in group.records if r.sweep is not None and r.latency_s()]
    if len(records) < 2:
        return None
    first = records[0].sweep
    assert first is not None
    sizes = [r.workload.weight_bytes for r in records]
    latencies = [float(r.latency_s() or 0) for r in records]
    rates = [s / t / 1e9 for s, t in zip(sizes, latencies)]
    peak = max(range(len(records)), key=lambda i: rates[i])
    knee = first.knee_bytes or sizes[0]
    passed = "bandwidth_gbps" in group.figures  # the report re-checked the stored fit against the gates
    fit = first.fit if passed else None
    analysis: dict[str, Any] = {
        "knee_bytes": knee,
        "cache_bytes": first.cache_bytes,
        "cache_peak_bytes": first.cache_peak_bytes or sizes[peak],
        "cache_peak_gbps": first.cache_peak_gbps or rates[peak],
        "fit_error": group.figures.get("fit_error"),
        "fit": None,
    }
    if fit is not None:
        analysis |= {
            "fit": {"overhead_s": fit.overhead_s, "bandwidth_bps": fit.bandwidth_gbps * 1e9,
                    "r_squared": fit.r_squared},
            "bandwidth_gbps": fit.bandwidth_gbps,
            "overhead_us": fit.overhead_s * 1e6,
        }
    return plot_sweep, (sizes, latencies, analysis, group.title)


def _roofline(group: SuiteGroup):
    records = [r for r in group.records if r.roofline is not None and r.latency_s()]
    if len(records) < 2:
        return None
    first = records[0].roofline
    assert first is not None
    points = [
        {"batch": r.workload.batch, "latency_s": r.latency_s(), "flop_per_s": r.roofline.flop_per_s,
         "bytes_per_flop": r.roofline.bytes_per_flop}
        for r in records
        if r.roofline is not None
    ]
    analysis = {
        "points": points,
        "memory_gbps": first.memory_gbps,
        "peak_flop_per_s": first.peak_flop_per_s,
        "ridge_batch": group.figures.get("ridge_batch"),  # after the report's own gate check
        "ridge_error": group.figures.get("ridge_error"),
        "baseline_batch": first.baseline_batch,
    }
    return plot_roofline, (analysis, group.title)


def _concurrency(group: SuiteGroup):
    by_phase: dict[str, list[tuple[int, float]]] = {}
    for point in group.points:
        if point.phase and point.gbps is not None:
            by_phase.setdefault(point.phase, []).append((point.copy or 0, point.gbps))
    solo = [g for _, g in sorted(by_phase.get("solo", []))]
    together = [g for _, g in sorted(by_phase.get("together", []))]
    combined = group.figures.get("combined_gbps")
    scaling = group.figures.get("scaling")
    if not solo or len(solo) != len(together) or not isinstance(combined, float) or \
            not isinstance(scaling, float):
        return None
    analysis = {
        "solo_gbps": solo,
        "together_gbps": together,
        "combined_gbps": combined,
        "scaling": scaling,
        "verdict": str(group.figures.get("verdict") or ""),
        "rule": group.rule,
    }
    return plot_concurrency, (analysis, group.title)


__all__ = ["suite_figure_png"]
