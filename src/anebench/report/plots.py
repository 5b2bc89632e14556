"""The bar chart of a results table (median GB/s by chip, the chip's memory bandwidth marked) and what
every plot shares: one colour per engine, labels with three significant digits, legends outside the data.
"""

from __future__ import annotations

import io
import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")  # no display; the chart is rendered to bytes
import matplotlib.pyplot as plt
from matplotlib.artist import Artist
from matplotlib.colors import to_hex, to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..engines import PUBLISHED_ANE_ENGINE
from ..results.aggregate import MatrixRow
from .tables import sig3

# One colour per engine in every plot (Okabe-Ito: distinct for colour-blind readers, and in greyscale).
ENGINE_COLOURS = {PUBLISHED_ANE_ENGINE: "#0072B2", "mlx": "#D55E00", "torch": "#009E73", "numpy": "#CC79A7"}
SPARE_COLOURS = ["#E69F00", "#56B4E9", "#000000", "#882255", "#44AA99", "#999933"]
HEADROOM = 1.6  # bandwidth marks far beyond the bars are drawn at the edge with their value
CHART_DPI = 200  # the HTML page shows the PNG at half its pixels: sharp on high-density screens
CHART_WIDTH_IN = 5.8  # 580 CSS pixels: at 420 px wide the text keeps about 70% of its size


def engine_colour(engine: str | None) -> str:
    """The engine's colour; an engine outside the palette gets a spare one chosen by its name (stable)."""
    name = (engine or "").lower()
    if name in ENGINE_COLOURS:
        return ENGINE_COLOURS[name]
    return SPARE_COLOURS[zlib.crc32(name.encode()) % len(SPARE_COLOURS)]


def engine_in(title: str) -> str | None:
    """The engine a plot's title names ("sweep numpy:cpu (...)" -> "numpy"), when no record says it."""
    for word in title.replace(":", " ").split():
        if word.lower() in ENGINE_COLOURS:
            return word.lower()
    return None


def tint(colour: str, amount: float) -> str:
    """The colour mixed with white: 0 is the colour, 1 is white."""
    r, g, b = (c + (1 - c) * amount for c in to_rgb(colour))
    return to_hex((r, g, b))


def ink_on(colour: str) -> str:
    """Black or white, whichever reads on the colour."""
    r, g, b = to_rgb(colour)
    return "black" if 0.299 * r + 0.587 * g + 0.114 * b > 0.55 else "white"


def plain(text: str, limit: int = 40) -> str:
    """Matplotlib reads $...$ as math; a contributor's chip name is shown as plain text."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def tier_colour(engine: str | None, tier: int | None) -> str:
    """The engine's colour, lighter for each tier after the first (tier 1: the engine's own colour)."""
    if tier is None:
        return "#bbbbbb"
    return tint(engine_colour(engine), min(0.7, 0.28 * (tier - 1)))


def bar_chart(rows: list[MatrixRow], title: str) -> Figure:
    """One results table as a figure: a horizontal bar per chip in the engine's colour (lighter by tier),
    its value at the bar's end, and a black mark at the chip's memory bandwidth (two for a range)."""
    engine = rows[0].engine if rows else None
    height = 1.3 + 0.34 * len(rows)
    fig, ax = plt.subplots(figsize=(CHART_WIDTH_IN, height), dpi=100, layout="constrained")
    try:
        y = list(range(len(rows)))
        colours = [tier_colour(r.engine, r.tier) for r in rows]
        ax.barh(y, [r.median_gbps for r in rows], color=colours, height=0.7)
        top = max(r.median_gbps for r in rows) * HEADROOM
        draw_ranges(ax, rows, top)
        for i, r in enumerate(rows):
            inside = r.median_gbps > 0.18 * top  # long bars carry their value inside, clear of the marks
            ax.text(
                r.median_gbps - 0.01 * top if inside else r.median_gbps + 0.01 * top,
                i,
                sig3(r.median_gbps),
                ha="right" if inside else "left",
                va="center",
                fontsize=9,
                color=ink_on(colours[i]) if inside else "black",
            )
            if r.bandwidth_gbps is None:
                continue
            low, high = r.bandwidth_gbps
            shown = [v for v in sorted({low, high}) if v <= top]
            for value in shown:
                ax.vlines(value, i - 0.42, i + 0.42, colors="black", linewidth=2)
            if high > top:  # off the scale: an arrow at the edge, labelled with the figure(s)
                label = f"{high:g}" if low in shown or low == high else f"{low:g}-{high:g}"
                ax.annotate(
                    label,
                    (top, i),
                    xytext=(top * 0.86, i),
                    ha="right",
                    va="center",
                    fontsize=8,
                    arrowprops={"arrowstyle": "->", "lw": 1},
                )
        ax.set_xlim(0, top)
        ax.set_ylim(len(rows) - 0.5, -0.5)  # the table's order, top to bottom
        ax.set_yticks(y, [plain(r.chip + (f" ({r.config})" if r.config else "")) for r in rows], fontsize=10)
        ax.tick_params(axis="x", labelsize=9)
        ax.set_xlabel("median GB/s (GB = 10⁹ bytes)", fontsize=10)
        ax.grid(True, axis="x", alpha=0.3)
        ax.set_axisbelow(True)
        fig.suptitle(plain(title, 90), fontsize=10)
        tiers = sorted({r.tier for r in rows if r.tier is not None})
        handles: list[Artist] = [Patch(color=tier_colour(engine, t), label=f"tier {t}") for t in tiers]
        handles.append(
            Line2D(
                [],
                [],
                color="black",
                linewidth=2,
                label="memory bandwidth (arrow: beyond the scale; none: not published)",
            )
        )
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncol=min(len(tiers), 4) or 1,
            fontsize=8,
            frameon=False,
        )
    except BaseException:
        plt.close(fig)
        raise
    return fig


def draw_ranges(ax, rows: list[MatrixRow], top: float) -> None:
    """Each row's 95% range as an error bar (the [low-high] of the tables: measure.uncertainty); the end
    past the chart's edge is cut there."""
    ranged = [(i, r.gbps_range) for i, r in enumerate(rows) if r.gbps_range is not None]
    if not ranged:
        return
    centres = [g.gbps for _, g in ranged]
    below = [g.gbps - g.low for _, g in ranged]
    above = [min(g.high, top) - g.gbps for _, g in ranged]
    ax.errorbar(centres, [i for i, _ in ranged], xerr=[below, above], fmt="none", ecolor="black",
                elinewidth=1, capsize=3, zorder=3, label="95% range")


@contextmanager
def quiet_glyphs() -> Iterator[None]:
    """matplotlib warns of each glyph its font lacks and prints the character raw in the warning: a
    contributor's ESC, BEL or CR would reach the terminal. The chart shows a box; no warning is printed."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"Glyph \d+ .*missing from")
        warnings.filterwarnings("ignore", message=r"Matplotlib currently does not support")
        yield


def bar_chart_png(rows: list[MatrixRow], title: str) -> bytes:
    """The PNG of ``bar_chart``."""
    fig = bar_chart(rows, title)
    try:
        buffer = io.BytesIO()
        with quiet_glyphs():
            fig.savefig(buffer, format="png", dpi=CHART_DPI, metadata={"Software": None})
        return buffer.getvalue()
    finally:
        plt.close(fig)
