"""Plots of the suites (sweep, roofline, concurrency), PNG and SVG, with matplotlib's Agg backend.

Each function takes a suite's analysis (the analyses the suites return) and a path stem, and
writes ``STEM.png`` and ``STEM.svg`` atomically; it returns the paths written.
"""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after use("Agg"): the backend must be chosen first
from matplotlib.figure import Figure

from ..results.files import atomic_write_bytes

MiB = 1024**2


def save_figure(fig: Figure, stem: Path) -> list[Path]:
    """STEM.png and STEM.svg, each rendered in memory and written atomically."""
    stem = Path(stem)
    written = []
    try:
        for suffix in (".png", ".svg"):
            target = stem.parent / f"{stem.name}{suffix}"
            buffer = io.BytesIO()
            fig.savefig(buffer, format=suffix[1:], dpi=150, bbox_inches="tight")
            atomic_write_bytes(target, buffer.getvalue())
            written.append(target)
    finally:
        plt.close(fig)
    return written


def plot_sweep(sizes_bytes: list[int], latencies_s: list[float], analysis: dict, title: str,
               stem: Path) -> list[Path]:
    """GB/s and latency against weight size, the knee and the cache marked; the fitted line only when
    the fit passed its gates (a failed fit: the points alone, and the reason in the title)."""
    fit = analysis.get("fit")
    knee = analysis["knee_bytes"]
    mib = [s / MiB for s in sizes_bytes]
    gbps = [s / t / 1e9 for s, t in zip(sizes_bytes, latencies_s)]
    past = [s >= knee for s in sizes_bytes]
    fig, (ax_bw, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.6))
    for ax in (ax_bw, ax_lat):
        ax.set_xscale("log")
        ax.set_xlabel("weight size (MiB)")
        ax.grid(True, which="both", alpha=0.3)
        if analysis.get("cache_bytes"):
            ax.axvline(analysis["cache_bytes"] / MiB, color="tab:gray", linestyle=":", label="last-level cache")
        ax.axvline(knee / MiB, color="tab:red", linestyle="--", label="knee (fit starts)")
    cached = [(m, g) for m, g, f in zip(mib, gbps, past) if not f]
    streamed = [(m, g) for m, g, f in zip(mib, gbps, past) if f]
    if cached:
        ax_bw.plot(*zip(*cached), "o-", color="tab:orange", label="below the knee (cache)")
    if streamed:
        ax_bw.plot(*zip(*streamed), "o-", color="tab:blue",
                   label="past the knee (fitted)" if fit else "past the knee")
    if fit:
        ax_bw.axhline(analysis["bandwidth_gbps"], color="tab:blue", alpha=0.5,
                      label=f"fitted bandwidth {analysis['bandwidth_gbps']:.1f} GB/s")
    ax_bw.annotate(f"cache-resident peak\n{analysis['cache_peak_gbps']:.1f} GB/s",
                   (analysis["cache_peak_bytes"] / MiB, analysis["cache_peak_gbps"]),
                   textcoords="offset points", xytext=(10, -30), arrowprops={"arrowstyle": "->"})
    ax_bw.set_ylabel("GB/s (weight bytes / median latency)")
    shown = gbps + ([analysis["bandwidth_gbps"]] if fit else [])  # a failed fit never sets the scale
    ax_bw.set_ylim(0, max(shown) * 1.15)
    ax_bw.set_title("bandwidth")
    ax_bw.legend(fontsize=8, loc="lower left")
    ax_lat.set_yscale("log")
    ax_lat.plot(mib, [t * 1e3 for t in latencies_s], "o", color="tab:blue", label="median latency")
    if fit:
        line_x = [s for s in sizes_bytes if s >= knee]
        ax_lat.plot([s / MiB for s in line_x],
                    [(fit["overhead_s"] + s / fit["bandwidth_bps"]) * 1e3 for s in line_x], "-", color="tab:green",
                    label=f"fit: {analysis['overhead_us']:.1f} us + bytes / {analysis['bandwidth_gbps']:.1f} GB/s "
                          f"(R² {fit['r_squared']:.4f})")
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_title("latency")
    ax_lat.legend(fontsize=8, loc="upper left")
    failed = "" if fit else "\n" + textwrap.fill(f"fit failed: {analysis.get('fit_error')}", 140)
    fig.suptitle(title + failed, fontsize=10 if failed else None)
    if failed:  # leave the reason room above the axes' titles
        fig.tight_layout(rect=(0, 0, 1, 0.88))
    return save_figure(fig, stem)


def plot_roofline(analysis: dict, title: str, stem: Path) -> list[Path]:
    """Achieved FLOP/s against arithmetic intensity under the two roofs, and latency against batch."""
    points = analysis["points"]
    intensity = [1 / p["bytes_per_flop"] for p in points]
    gflops = [p["flop_per_s"] / 1e9 for p in points]
    fig, (ax_roof, ax_lat) = plt.subplots(1, 2, figsize=(12, 4.6))
    ax_roof.set_xscale("log")
    ax_roof.set_yscale("log")
    span = [min(intensity) / 2, max(intensity) * 2]
    memory_gbps, peak = analysis["memory_gbps"], analysis["peak_flop_per_s"] / 1e9
    roof = [min(memory_gbps * x, peak) for x in span]
    ridge_x = peak / memory_gbps
    ax_roof.plot([span[0], ridge_x, span[1]], [roof[0], peak, peak], "-", color="tab:gray", alpha=0.7,
                 label=f"roofs: {memory_gbps:.1f} GB/s (batch 1) and {peak:.1f} GFLOP/s (best)")
    ax_roof.plot(intensity, gflops, "o-", color="tab:blue", label="measured")
    for i, (p, x, y) in enumerate(zip(points, intensity, gflops)):
        ax_roof.annotate(f"B={p['batch']}", (x, y), textcoords="offset points",
                         xytext=(4, -12) if i % 2 == 0 else (-8, 7), fontsize=7)
    ax_roof.set_xlabel("arithmetic intensity (FLOP / byte moved)")
    ax_roof.set_ylabel("achieved GFLOP/s")
    ax_roof.set_title("roofline")
    ax_roof.grid(True, which="both", alpha=0.3)
    ax_roof.legend(fontsize=8, loc="best")  # measured points often fill the lower right
    batches = [p["batch"] for p in points]
    ax_lat.plot(batches, [p["latency_s"] * 1e3 for p in points], "o-", color="tab:blue", label="median latency")
    if analysis.get("ridge_batch"):
        ax_lat.axvline(analysis["ridge_batch"], color="tab:red", linestyle="--",
                       label=f"ridge: batch {analysis['ridge_batch']} "
                             f"(latency > 1.2x batch {analysis.get('baseline_batch', 1)})")
    ax_lat.set_xscale("log", base=2)
    ax_lat.set_yscale("log")
    ax_lat.set_xlabel("batch (input vectors per call)")
    ax_lat.set_ylabel("latency (ms)")
    ax_lat.set_title("latency against batch")
    ax_lat.grid(True, which="both", alpha=0.3)
    ax_lat.legend(fontsize=8, loc="upper left")
    failed = analysis.get("ridge_error")
    fig.suptitle(title + ("\n" + textwrap.fill(f"ridge failed: {failed}", 140) if failed else ""),
                 fontsize=10 if failed else None)
    if failed:
        fig.tight_layout(rect=(0, 0, 1, 0.88))
    return save_figure(fig, stem)


def plot_concurrency(analysis: dict, title: str, stem: Path) -> list[Path]:
    """Each copy solo and together, the combined GB/s, and the verdict by its rule."""
    solo, together = analysis["solo_gbps"], analysis["together_gbps"]
    labels = [f"copy {i}" for i in range(len(solo))]
    fig, ax = plt.subplots(figsize=(7, 4.6))
    width = 0.38
    xs = range(len(solo))
    ax.bar([x - width / 2 for x in xs], solo, width, label="solo", color="tab:blue")
    ax.bar([x + width / 2 for x in xs], together, width, label="together", color="tab:orange")
    ax.bar([len(solo)], [analysis["combined_gbps"]], width * 1.5, label="combined", color="tab:green")
    ax.axhline(sum(solo) / len(solo), color="tab:blue", linestyle=":", label="mean solo")
    ax.set_xticks([*xs, len(solo)], [*labels, "combined"])
    ax.set_ylabel("GB/s")
    ax.set_title(f"{title}\n{analysis['verdict']}: scaling {analysis['scaling']:.2f}\n{analysis['rule']}",
                 fontsize=9)
    ax.legend(fontsize=8)
    # Why combined can sit below the together bars: it counts bytes over the window, gaps included.
    notes = [n for n in (analysis.get("combined_definition"), analysis.get("together_definition")) if n]
    if notes:
        fig.text(0.01, 0.01, "\n".join(textwrap.fill(n, 120) for n in notes), fontsize=6, va="bottom")
        fig.subplots_adjust(bottom=0.1 + 0.045 * sum(textwrap.fill(n, 120).count("\n") + 1 for n in notes))
    return save_figure(fig, stem)
