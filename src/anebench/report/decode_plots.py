"""Decode plots: tok/s against context depth per engine, and the per-token timeline as stacked dispatches
(the chained chunks where the record has a timeline; else the token as one bar)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from matplotlib.figure import Figure

from ..model import ResultRecord
from .suite_plots import legend_outside, save_figure


def plot_decode(records: list[ResultRecord], stem: Path) -> list[Path]:
    """STEM.png/.svg: left, tok/s against depth per engine:device; right, ms per token stacked by dispatch."""
    records = [r for r in records if r.decode is not None and r.latency_s()]
    fig = Figure(figsize=(11, 4), layout="constrained")
    depth_ax, time_ax = fig.subplots(1, 2)
    curves: dict[str, list[tuple[int, float]]] = defaultdict(list)
    for record in records:
        assert record.decode is not None
        curves[f"{record.engine.name}:{record.engine.device}"].append(
            (record.decode.depth, 1 / (record.latency_s() or 1))
        )
    for label, points in sorted(curves.items()):
        points.sort()
        depth_ax.plot([d for d, _ in points], [t for _, t in points], marker="o", label=label)
    depth_ax.set_xlabel("context depth (tokens)")
    depth_ax.set_ylabel("tok/s (measured)")
    depth_ax.set_ylim(bottom=0)
    depth_ax.set_title(f"decode: {records[0].decode.model if records and records[0].decode else ''}")
    depth_ax.legend(fontsize=8, frameon=False)
    labels = []
    for i, record in enumerate(records):
        assert record.decode is not None
        parts = [(c.name, c.median_s) for c in record.decode.timeline] or [
            ("token", record.latency_s() or 0.0)
        ]
        bottom = 0.0
        for name, seconds in parts:
            time_ax.bar(i, seconds * 1e3, bottom=bottom, label=name if i == 0 else None)
            bottom += seconds * 1e3
        labels.append(f"{record.engine.name}:{record.engine.device}\nD={record.decode.depth}")
    time_ax.set_xticks(range(len(labels)), labels, fontsize=7)
    time_ax.set_ylabel("ms per token")
    time_ax.set_title("per-token timeline (stacked dispatches)")
    legend_outside(time_ax)
    return save_figure(fig, stem)
