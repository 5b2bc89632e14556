"""The bar chart: median GB/s by chip, coloured by tier, with the chip's memory bandwidth marked."""

from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display; the chart is rendered to bytes
import matplotlib.pyplot as plt
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from ..results.aggregate import MatrixRow

TIER_COLOURS = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02"]
HEADROOM = 1.6  # bandwidth marks far above the bars are drawn at the top edge with their value


def plain(text: str, limit: int = 40) -> str:
    """Matplotlib reads $...$ as math; a contributor's chip name is shown as plain text."""
    text = text if len(text) <= limit else text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def tier_colour(tier: int | None) -> str:
    return "#999999" if tier is None else TIER_COLOURS[(tier - 1) % len(TIER_COLOURS)]


def bar_chart_png(rows: list[MatrixRow], title: str) -> bytes:
    """A PNG of one results table: a bar per chip, a black dash at its bandwidth (two for a range)."""
    fig, ax = plt.subplots(figsize=(max(7.0, 0.55 * len(rows) + 4), 4.6), dpi=100)
    try:
        x = range(len(rows))
        ax.bar(x, [r.median_gbps for r in rows], color=[tier_colour(r.tier) for r in rows], width=0.7)
        top = max(r.median_gbps for r in rows) * HEADROOM
        for i, r in enumerate(rows):
            ax.text(i, r.median_gbps, f"{r.median_gbps:.0f}", ha="center", va="bottom", fontsize=7)
            if r.bandwidth_gbps is None:
                continue
            low, high = r.bandwidth_gbps
            shown = [v for v in sorted({low, high}) if v <= top]
            for value in shown:
                ax.hlines(value, i - 0.4, i + 0.4, colors="black", linewidth=2)
            if high > top:  # off the scale: an arrow at the top edge, labelled with the figure(s)
                label = f"{high:g}" if low in shown or low == high else f"{low:g}-\n{high:g}"
                ax.annotate(label, (i, top), xytext=(i, top * 0.90), ha="center", fontsize=7,
                            arrowprops={"arrowstyle": "->", "lw": 1})
        ax.set_ylim(0, top)
        ax.set_xticks(list(x), [plain(r.chip) for r in rows], rotation=45, ha="right", fontsize=8)
        ax.set_ylabel("median GB/s")
        fig.suptitle(plain(title, 120), fontsize=10)  # over the figure: a narrow axis would clip it
        tiers = sorted({r.tier for r in rows if r.tier is not None})
        handles = [Patch(color=tier_colour(t), label=f"tier {t}") for t in tiers]
        handles.append(Line2D([], [], color="black", linewidth=2,
                              label="memory bandwidth (arrow: above the scale; none: not published)"))
        ax.legend(handles=handles, fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        fig.tight_layout()
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", metadata={"Software": None})
        return buffer.getvalue()
    finally:
        plt.close(fig)
