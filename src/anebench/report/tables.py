"""The report's content as plain tables of text cells, shared by the Markdown, HTML and CSV writers."""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import dataclass

from ..measure.uncertainty import CONVENTION
from ..measure.uncertainty import fmt_gbps as fmt_gbps_value
from ..results.aggregate import Aggregate, ConcurrencyRow, MatrixRow
from .format import sig
from .format import time_unit as time_unit  # the one rule, where the report's readers look for it


@dataclass
class Section:
    title: str
    columns: list[str]
    rows: list[list[str]]
    note: str = ""
    group: tuple | None = (
        None  # (workload, engine, device, fingerprint) for the matrix sections: the chart's key
    )
    kind: str = (
        ""  # what the section is, for the contents: results, tiers, verdicts, a suite's kind, energy, ...
    )
    figure: bytes | None = None  # a suite's own plot (PNG), drawn for the HTML report


def natural_key(text: object) -> tuple:
    """Sorts numbers inside names by value: lm_head:4096x12221 before lm_head:4096x116055."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part.casefold())
        for part in re.split(r"(\d+)", str(text))
        if part
    )


def sig3(value: float) -> str:
    """Three significant digits without an exponent: 2.80, 60.9, 148, 1051 (report/format.py's rule)."""
    return sig(value, 3)


def fmt_gbps(value: float | None) -> str:
    return "-" if value is None else fmt_gbps_value(value)


POINTS_NOTE = CONVENTION


def fmt_row_gbps(row: MatrixRow) -> str:
    """The row's GB/s with its range (measure.uncertainty: one convention everywhere)."""
    return row.gbps_range.cell() if row.gbps_range is not None else fmt_gbps(row.median_gbps)


def fmt_ratio_range(value: float, halfwidth: float | None) -> str:
    """A ratio (scaling) with its 95% range, in the same [low-high] form as GB/s."""
    if halfwidth is None:
        return f"{value:.3f}"
    low, high = value * math.exp(-halfwidth), value * math.exp(halfwidth)
    return f"{value:.3f} [{low:.3f}-{high:.3f}]"


def fmt_util(util: tuple[float, float] | None) -> str:
    if util is None:
        return "-"
    low, high = util
    return f"{low:.0%}" if abs(high - low) < 5e-4 else f"{low:.0%}-{high:.0%}"


def fmt_latency(row: MatrixRow) -> str:
    if row.median_latency_s is None:
        return "-"
    return f"{row.median_latency_s * 1e3:.2f} (n={row.latency_contributors})"


MATRIX_COLUMNS = [
    "chip",
    "config",
    "GB/s [95% range]",
    "contributors",
    "latency ms (median)",
    "memory bandwidth GB/s",
    "utilisation",
    "tier",
    "timing",
    "provenance",
    "flags",
    "workload",
]


def matrix_groups(agg: Aggregate) -> dict[tuple, list[MatrixRow]]:
    """One table per (workload, engine, device, fingerprint): a name can stand for several fingerprints
    (another batch or seed), and a table compares only figures of the same bytes."""
    groups: dict[tuple, list[MatrixRow]] = defaultdict(list)
    for row in agg.rows:
        groups[(row.workload, row.engine, row.device, row.fingerprint)].append(row)
    # the table with the most chips first: that is the comparison a reader came for
    return dict(sorted(groups.items(), key=lambda item: (-len(item[1]), *map(natural_key, item[0]))))


def group_label(key: tuple, groups: dict[tuple, list[MatrixRow]]) -> str:
    """ "WORKLOAD on ENGINE:DEVICE", with the fingerprint's start where the name alone is ambiguous."""
    workload, engine, device, fingerprint = key
    label = f"{workload} on {engine}:{device}"
    if sum(1 for other in groups if other[:3] == key[:3]) > 1:
        label += f" (fingerprint {fingerprint[:12]})"
    return label


def copies_as(row: ConcurrencyRow) -> str:
    threads = f", {row.threads_per_copy} thread(s) each" if row.threads_per_copy else ""
    return (row.mode or "-") + threads


def sections(agg: Aggregate, suites: list[Section] | None = None) -> list[Section]:
    """The matrix and its tiers, the concurrency verdicts, ``suites`` (the suites' own sections), then
    coverage, exclusions and rules."""
    suites = suites or []
    out = []
    groups = matrix_groups(agg)
    for key, rows in groups.items():
        label = group_label(key, groups)
        out.append(
            Section(
                f"Results: {label}",
                MATRIX_COLUMNS,
                [
                    [
                        r.chip,
                        r.config or ", ".join(r.configs) or "-",
                        fmt_row_gbps(r),
                        str(r.contributors),
                        fmt_latency(r),
                        r.bandwidth,
                        fmt_util(r.utilisation),
                        str(r.tier),
                        r.timing,
                        ", ".join(r.provenance),
                        "; ".join(r.flags) or "-",
                        f"{r.workload} ({r.fingerprint[:12]})",
                    ]
                    for r in rows
                ],
                note=f"workload fingerprint {key[3][:16]}…; every figure in this table shares it "
                f"(single-call results: batch 1, one token, solo). {POINTS_NOTE}",
                group=key,
                kind="results",
            )
        )
        tiers: dict[int, list[MatrixRow]] = defaultdict(list)
        for r in rows:
            if r.tier is not None:  # a row without a GB/s figure has no tier
                tiers[r.tier].append(r)
        out.append(
            Section(
                f"Tiers: {label}",
                ["tier", "GB/s range", "chips", "workload"],
                [
                    [
                        str(t),
                        f"{min(r.median_gbps for r in m):.2f}-{max(r.median_gbps for r in m):.2f}",
                        ", ".join(
                            r.chip + (f" ({r.config})" if r.config else "")
                            for r in sorted(m, key=lambda r: -r.median_gbps)
                        ),
                        f"{key[0]} ({key[3][:12]})",
                    ]
                    for t, m in sorted(tiers.items())
                ],
                kind="tiers",
            )
        )
    if agg.concurrency:  # published dual-model rows and the concurrency suite; no empty section
        out.append(
            Section(
                "Concurrency verdicts",
                [
                    "chip",
                    "workload",
                    "engine:device",
                    "copies as",
                    "solo GB/s",
                    "parallel GB/s",
                    "combined GB/s",
                    "scaling",
                    "verdict",
                    "flags",
                ],
                [
                    [
                        c.chip,
                        c.workload,
                        f"{c.engine}:{c.device}",
                        copies_as(c),
                        ", ".join(fmt_gbps(v) for v in c.solo_gbps),
                        ", ".join(fmt_gbps(v) for v in c.parallel_gbps) or "-",
                        fmt_gbps(c.combined_gbps),
                        fmt_ratio_range(c.scaling, c.scaling_halfwidth),
                        c.verdict,
                        "; ".join(c.flags) or "-",
                    ]
                    for c in agg.concurrency
                ],
                note=agg.rules["concurrency"],
                kind="verdicts",
            )
        )
    out.extend(suites)
    out.append(
        Section(
            "Coverage: catalog chips with no data",
            ["chip", "vendor", "family", "memory bandwidth GB/s"],
            [[c.key, c.vendor, c.family, c.bandwidth_label()] for c in agg.missing_chips],
            kind="coverage",
        )
    )
    out.append(
        Section(
            "Excluded from every comparison",
            ["chip", "workload", "figure as published", "reason"],
            [[e.chip, e.workload, e.figure, e.reason] for e in agg.excluded],
            kind="excluded",
        )
    )
    out.append(Section("Rules", ["what", "rule"], [[k, v] for k, v in agg.rules.items()], kind="rules"))
    return out
