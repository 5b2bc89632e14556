"""Plots of the suites (sweep, roofline, concurrency), PNG and SVG, with matplotlib's Agg backend.

Each function takes a suite's analysis (the analyses the suites return) and a path stem, and writes
``STEM.png`` and ``STEM.svg`` atomically; it returns the paths written. Given the suite's ``records``, the
title says what was read (the dtype the engine streamed, the bytes per call), not what was asked for.
Legends sit outside the axes, point labels never overlap, and the engine has the same colour everywhere.
"""

from __future__ import annotations

import io
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import cast

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after use("Agg"): the backend must be chosen first
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.text import Annotation
from matplotlib.transforms import Bbox

from ..measure.uncertainty import gbps_range
from ..model import ResultRecord
from ..util.outputs import atomic_write_bytes
from .plots import engine_colour, engine_in, plain, quiet_glyphs, tint
from .tables import sig3

MB = 1e6
# Where a point's label may go, in offset points from the point, tried in this order.
LABEL_PLACES = [
    (5, 4, "left", "bottom"),
    (5, -4, "left", "top"),
    (-5, 4, "right", "bottom"),
    (-5, -4, "right", "top"),
    (0, 7, "center", "bottom"),
    (0, -7, "center", "top"),
    (9, 0, "left", "center"),
    (-9, 0, "right", "center"),
]
MARKER_PX = 5  # the half-width of a plotted point, kept clear of labels


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """STEM.png and STEM.svg, each rendered in memory and written atomically."""
    stem = Path(stem)
    written = []
    try:
        for suffix in (".png", ".svg"):
            target = stem.parent / f"{stem.name}{suffix}"
            buffer = io.BytesIO()
            with quiet_glyphs():
                fig.savefig(buffer, format=suffix[1:], dpi=150, bbox_inches="tight")
            atomic_write_bytes(target, buffer.getvalue())
            written.append(target)
    finally:
        plt.close(fig)
    return written


def legend_outside(ax: Axes, **kwargs) -> None:
    """The legend to the right of the axes, where it can cover no point (constrained layout makes room)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(
            loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0, fontsize=8, frameon=False, **kwargs
        )


def wrap(text: str, width: int = 34) -> str:
    return textwrap.fill(text, width)


def freeze_layout(fig: Figure) -> None:
    """Lay the figure out once and keep it: labels placed in pixels stay where they were checked."""
    fig.canvas.draw()
    fig.set_layout_engine("none")


def label_points(
    ax: Axes, xs: Sequence[float], ys: Sequence[float], texts: Sequence[str], fontsize: float = 7
) -> list[Annotation]:
    """Each label at the first place (LABEL_PLACES) that is inside the axes and clear of every point and
    of the labels placed before it; a label with no such place is left out. Call after freeze_layout."""
    renderer = cast(FigureCanvasAgg, ax.figure.canvas).get_renderer()  # matplotlib.use("Agg") above
    points = ax.transData.transform(list(zip(xs, ys)))
    taken = [Bbox.from_extents(x - MARKER_PX, y - MARKER_PX, x + MARKER_PX, y + MARKER_PX) for x, y in points]
    frame = ax.get_window_extent(renderer)
    placed = []
    for x, y, text in zip(xs, ys, texts):
        for dx, dy, ha, va in LABEL_PLACES:
            label = ax.annotate(
                text, (x, y), xytext=(dx, dy), textcoords="offset points", ha=ha, va=va, fontsize=fontsize
            )
            box = label.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(other) for other in taken):
                taken.append(box)
                placed.append(label)
                break
            label.remove()
    return placed


def _read(records: list[ResultRecord]) -> str:
    """What the calls read: the dtype streamed (and the workload's, where the engine converted it)."""
    first = records[0]
    streamed = first.engine.run_dtype
    asked = first.workload.dtype
    return f"{streamed} weights" + (
        f" (workload {asked}, streamed as {streamed})" if asked != streamed else ""
    )


def _where(records: list[ResultRecord]) -> str:
    first = records[0]
    chip = first.chip
    return f"{first.engine.name}:{first.engine.device}" + (f", {chip}" if chip else "")


def _mb_range(records: list[ResultRecord]) -> str:
    sizes = sorted(r.workload.weight_bytes for r in records)
    low, high = sig3(sizes[0] / MB), sig3(sizes[-1] / MB)
    return f"{low} MB" if low == high else f"{low}-{high} MB"


def sweep_title(records: list[ResultRecord]) -> str:
    """The title from what was read, e.g. "sweep numpy:cpu: hidden 4096, fp32 weights (workload fp16,
    streamed as fp32), 1.05-1074 MB per call"."""
    hidden = records[0].workload.shape[1]
    return f"sweep {_where(records)}: hidden {hidden}, {_read(records)}, {_mb_range(records)} per call"


def roofline_title(records: list[ResultRecord]) -> str:
    first = records[0]
    vocab, hidden = first.workload.shape
    return (
        f"roofline {_where(records)}: {vocab}x{hidden} head, {_read(records)}, {_mb_range(records)} per call"
    )


def concurrency_title(records: list[ResultRecord]) -> str:
    first = records[0]
    # the copies the run stated, else its distinct copy numbers (``copy_``: ``copy`` is pydantic's method,
    # a different bound object per record, which once titled 2 copies "4 copies")
    stated = first.concurrency.copies if first.concurrency is not None else None
    numbered = {r.concurrency.copy_ for r in records if r.concurrency is not None}
    copies = stated or len(numbered) or len(records)
    mode = first.concurrency.mode if first.concurrency is not None else ""
    return (
        f"concurrency {_where(records)}: {copies} copies{f' ({mode})' if mode else ''} of "
        f"{first.workload.name}, {_read(records)}, {_mb_range(records)} per call each"
    )


def overhead_label(analysis: dict) -> str:
    """The fitted overhead for a legend; one at the bound (a negative free intercept within error) is below
    resolution, no number."""
    overhead = analysis.get("overhead_us")
    return "overhead below resolution" if overhead is None else f"{overhead:.1f} µs"


def plot_sweep(
    sizes_bytes: list[int],
    latencies_s: list[float],
    analysis: dict,
    title: str,
    stem: Path,
    *,
    records: list[ResultRecord] | None = None,
) -> list[Path]:
    """GB/s and latency against weight size, the knee and the cache marked; the fitted line only when
    the fit passed its gates (a failed fit: the points alone, no line, and the reason in the title)."""
    if records:
        title = sweep_title(records)
    colour = engine_colour(records[0].engine.name if records else engine_in(title))
    fit = analysis.get("fit")
    knee = analysis["knee_bytes"]
    mb = [s / MB for s in sizes_bytes]
    gbps = [s / t / 1e9 for s, t in zip(sizes_bytes, latencies_s)]
    past = [s >= knee for s in sizes_bytes]
    fig, (ax_bw, ax_lat) = plt.subplots(2, 1, figsize=(8.6, 7.8), layout="constrained")
    for ax in (ax_bw, ax_lat):
        ax.set_xscale("log")
        ax.set_xlabel("weight bytes read per call (MB = 10⁶ bytes)")
        ax.grid(True, which="both", alpha=0.3)
        if analysis.get("cache_bytes"):
            ax.axvline(
                analysis["cache_bytes"] / MB, color="tab:gray", linestyle=":", label="last-level cache"
            )
        ax.axvline(knee / MB, color="black", linestyle="--", linewidth=1, label="knee (fit starts)")
    cached = [(m, g) for m, g, f in zip(mb, gbps, past) if not f]
    streamed = [(m, g) for m, g, f in zip(mb, gbps, past) if f]
    joined = "-" if fit else "none"  # a failed fit: points only, nothing a reader could take for a fit
    if cached:  # hollow: below the knee the weights may sit in a cache
        ax_bw.plot(
            *zip(*cached),
            marker="o",
            linestyle=joined,
            color=tint(colour, 0.35),
            markerfacecolor="white",
            linewidth=1,
            label="below the knee (cache)",
        )
    if streamed:
        ax_bw.plot(
            *zip(*streamed),
            marker="o",
            linestyle=joined,
            color=colour,
            linewidth=1,
            label="past the knee (fitted)" if fit else "past the knee",
        )
    ranged = [(r.workload.weight_bytes / MB, found) for r in records or [] if (found := gbps_range(r))]
    if ranged:  # each size's 95% range (its repetitions' spread), as the tables show it
        ax_bw.errorbar([m for m, _ in ranged], [g.gbps for _, g in ranged],
                       yerr=[[g.gbps - g.low for _, g in ranged], [g.high - g.gbps for _, g in ranged]],
                       fmt="none", ecolor=colour, elinewidth=1, capsize=2, label="95% range")
    if fit:
        ax_bw.axhline(
            analysis["bandwidth_gbps"],
            color="black",
            alpha=0.6,
            label=wrap(f"fitted bandwidth {analysis['bandwidth_gbps']:.1f} GB/s"),
        )
    ax_bw.annotate(
        f"cache-resident peak\n{analysis['cache_peak_gbps']:.1f} GB/s",
        (analysis["cache_peak_bytes"] / MB, analysis["cache_peak_gbps"]),
        textcoords="offset points",
        xytext=(10, -30),
        arrowprops={"arrowstyle": "->"},
        fontsize=8,
    )
    ax_bw.set_ylabel("GB/s (weight bytes / median latency)")
    shown = gbps + ([analysis["bandwidth_gbps"]] if fit else [])  # a failed fit never sets the scale
    ax_bw.set_ylim(0, max(shown) * 1.15)
    ax_bw.set_title("bandwidth", fontsize=10)
    legend_outside(ax_bw)
    ax_lat.set_yscale("log")
    ax_lat.plot(mb, [t * 1e3 for t in latencies_s], "o", color=colour, label="median latency")
    if fit:
        line_x = [s for s in sizes_bytes if s >= knee]
        ax_lat.plot(
            [s / MB for s in line_x],
            [(fit["overhead_s"] + s / fit["bandwidth_bps"]) * 1e3 for s in line_x],
            "-",
            color="black",
            label=wrap(
                f"fit: {overhead_label(analysis)} + bytes / {analysis['bandwidth_gbps']:.1f} "
                f"GB/s (R² {fit['r_squared']:.4f})"
            ),
        )
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_title("latency", fontsize=10)
    legend_outside(ax_lat)
    failed = "" if fit else "\n" + textwrap.fill(f"fit failed: {analysis.get('fit_error')}", 110)
    fig.suptitle(plain(title, 160) + failed, fontsize=10)
    return save_figure(fig, stem)


def plot_roofline(
    analysis: dict, title: str, stem: Path, *, records: list[ResultRecord] | None = None
) -> list[Path]:
    """Achieved FLOP/s against arithmetic intensity under the two roofs, and latency against batch."""
    if records:
        title = roofline_title(records)
    colour = engine_colour(records[0].engine.name if records else engine_in(title))
    points = analysis["points"]
    intensity = [1 / p["bytes_per_flop"] for p in points]
    gflops = [p["flop_per_s"] / 1e9 for p in points]
    fig, (ax_roof, ax_lat) = plt.subplots(2, 1, figsize=(8.6, 8.2), layout="constrained")
    ax_roof.set_xscale("log")
    ax_roof.set_yscale("log")
    span = [min(intensity) / 2, max(intensity) * 2]
    memory_gbps, peak = analysis["memory_gbps"], analysis["peak_flop_per_s"] / 1e9
    roof = [min(memory_gbps * x, peak) for x in span]
    ridge_x = peak / memory_gbps
    ax_roof.plot(
        [span[0], ridge_x, span[1]],
        [roof[0], peak, peak],
        "-",
        color="tab:gray",
        alpha=0.7,
        label=wrap(f"roofs: {memory_gbps:.1f} GB/s (batch 1) and {peak:.1f} GFLOP/s (best)"),
    )
    ax_roof.plot(intensity, gflops, "o-", color=colour, label="measured (labels: batch)")
    ax_roof.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax_roof.set_ylabel("achieved GFLOP/s")
    ax_roof.set_title("roofline", fontsize=10)
    ax_roof.grid(True, which="both", alpha=0.3)
    ax_roof.set_ylim(min(gflops) / 3, max(peak, max(gflops)) * 3)  # room for the labels
    legend_outside(ax_roof)
    batches = [p["batch"] for p in points]
    ax_lat.plot(batches, [p["latency_s"] * 1e3 for p in points], "o-", color=colour, label="median latency")
    if analysis.get("ridge_batch"):  # a failed ridge draws no line: its reason is in the title
        ax_lat.axvline(
            analysis["ridge_batch"],
            color="black",
            linestyle="--",
            label=wrap(
                f"ridge: batch {analysis['ridge_batch']} "
                f"(latency > 1.2x batch {analysis.get('baseline_batch', 1)})"
            ),
        )
    ax_lat.set_xscale("log", base=2)
    ax_lat.set_yscale("log")
    ax_lat.set_xlabel("batch (input vectors per call)")
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_title("latency against batch", fontsize=10)
    ax_lat.grid(True, which="both", alpha=0.3)
    legend_outside(ax_lat)
    failed = analysis.get("ridge_error")
    fig.suptitle(
        plain(title, 160) + ("\n" + textwrap.fill(f"ridge not found: {failed}", 110) if failed else ""),
        fontsize=10,
    )
    freeze_layout(fig)
    label_points(ax_roof, intensity, gflops, [f"B={b}" for b in batches])
    return save_figure(fig, stem)


def plot_concurrency(
    analysis: dict, title: str, stem: Path, *, records: list[ResultRecord] | None = None
) -> list[Path]:
    """Each copy solo and together, the combined GB/s, and the verdict by its rule."""
    if records:
        title = concurrency_title(records)
    colour = engine_colour(records[0].engine.name if records else engine_in(title))
    solo, together = analysis["solo_gbps"], analysis["together_gbps"]
    labels = [f"copy {i}" for i in range(len(solo))]
    fig, ax = plt.subplots(figsize=(8.6, 5.2), layout="constrained")
    width = 0.38
    xs = range(len(solo))
    bars = [
        ax.bar([x - width / 2 for x in xs], solo, width, label="solo", color=tint(colour, 0.55)),
        ax.bar([x + width / 2 for x in xs], together, width, label="together", color=colour),
        ax.bar(
            [len(solo)],
            [analysis["combined_gbps"]],
            width * 1.5,
            label="combined",
            color="white",
            edgecolor=colour,
            hatch="//",
        ),
    ]
    for container in bars:  # three significant digits: 2.80 stays 2.80
        ax.bar_label(container, labels=[sig3(b.get_height()) for b in container], fontsize=8, padding=2)
    ax.axhline(sum(solo) / len(solo), color="black", linestyle=":", label="mean solo")
    ax.set_xticks([*xs, len(solo)], [*labels, "combined"])
    ax.set_ylabel("GB/s (GB = 10⁹ bytes)")
    ax.set_ylim(0, max([*solo, *together, analysis["combined_gbps"]]) * 1.15)
    ax.set_title(
        wrap(f"{analysis['verdict']}: scaling {analysis['scaling']:.2f}. {analysis['rule']}", 100), fontsize=8
    )
    legend_outside(ax)
    fig.suptitle(plain(title, 160), fontsize=10)
    # Why combined can sit below the together bars: it counts bytes over the window, gaps included.
    notes = [n for n in (analysis.get("combined_definition"), analysis.get("together_definition")) if n]
    if notes:
        ax.set_xlabel("\n".join(textwrap.fill(n, 130) for n in notes), fontsize=6, loc="left")
    return save_figure(fig, stem)
