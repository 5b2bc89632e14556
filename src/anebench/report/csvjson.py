"""CSV (one long table: the matrix, every suite point, the catalog chips with no data; a `section` column
says which) and JSON (everything, structured: the matrix, the suites' groups, verdicts, coverage).

Both name a figure's unit in its column or key, and use the same unit for the same quantity: seconds
(``_s``), bytes (``_bytes``), GB/s with GB = 10^9 bytes (``_gbps``), FLOP per second (``flop_per_s``).
"""

from __future__ import annotations

import json
from dataclasses import asdict

from ..results.aggregate import Aggregate, MatrixRow
from ..results.suite_groups import SuiteGroup
from .escape import csv_cell
from .format import csv_text

CSV_COLUMNS = [
    "section",
    "chip",
    "config",
    "family",
    "in_catalog",
    "workload",
    "fingerprint",
    "engine",
    "device",
    "suite",
    "batch",
    "tokens",
    "copy",
    "phase",
    "threads",
    "weight_bytes",
    "median_gbps",
    "gbps_rel_halfwidth95",
    "contributors",
    "median_latency_s",
    "latency_contributors",
    "memory_bandwidth_gbps",
    "utilisation_low",
    "utilisation_high",
    "tier",
    "concurrency_verdict",
    "flop_per_s",
    "timing",
    "provenance",
    "configs",
    "result",
    "flags",
]


UNITS = {
    "_s": "seconds",
    "_us": "microseconds",
    "_bytes": "bytes",
    "_gbps": "GB/s, GB = 10^9 bytes",
    "flop_per_s": "floating-point operations per second",
    "halfwidth": "relative 95% half-width (a fraction of the figure)",
    "utilisation": "fraction of the chip's memory bandwidth (low, high)",
}


def _row(**cells) -> list:
    return [csv_cell(cells.get(column)) for column in CSV_COLUMNS]


def _suite_rows(group: SuiteGroup) -> list[list]:
    rows = []
    for p in group.points:
        rows.append(
            _row(
                section=group.kind,
                chip=p.chip,
                config=p.config,
                workload=p.workload,
                fingerprint=p.fingerprint,
                engine=p.engine,
                device=p.device,
                suite=p.suite,
                batch=p.batch,
                tokens=p.tokens,
                copy=p.copy,
                phase=p.phase,
                threads=p.threads,
                weight_bytes=p.weight_bytes,
                median_gbps=round(p.gbps, 3) if p.gbps is not None else None,
                median_latency_s=p.latency_s,  # as JSON has it, to the last digit
                flop_per_s=p.flop_per_s,
                provenance=p.provenance,
                result=group.result,
                concurrency_verdict=group.figures.get("verdict") if group.kind == "concurrency" else None,
            )
        )
    return rows


def render_csv(agg: Aggregate) -> str:
    verdicts = {(c.chip, c.fingerprint, c.engine, c.device): c.verdict for c in agg.concurrency}
    rows: list[list] = []
    for r in agg.rows:
        low, high = r.utilisation or (None, None)
        rows.append(
            _row(
                section="matrix",
                chip=r.chip,
                config=r.config,
                family=r.family,
                in_catalog=r.in_catalog,
                workload=r.workload,
                fingerprint=r.fingerprint,
                engine=r.engine,
                device=r.device,
                suite="run",
                batch=1,
                tokens=1,
                phase="solo",
                median_gbps=round(r.median_gbps, 3),
                gbps_rel_halfwidth95=round(r.gbps_halfwidth, 5) if r.gbps_halfwidth is not None else None,
                contributors=r.contributors,
                median_latency_s=r.median_latency_s,
                latency_contributors=r.latency_contributors,
                memory_bandwidth_gbps=r.bandwidth,
                utilisation_low=round(low, 4) if low else None,
                utilisation_high=round(high, 4) if high else None,
                tier=r.tier,
                concurrency_verdict=verdicts.get((r.chip, r.fingerprint, r.engine, r.device), "")
                if not r.config
                else "",
                timing=r.timing,
                provenance=";".join(r.provenance),
                configs=";".join(r.configs),
                flags=";".join(r.flags),
            )
        )
    for group in agg.suites:
        rows.extend(_suite_rows(group))
    for chip in agg.missing_chips:
        rows.append(
            _row(
                section="coverage",
                chip=chip.key,
                family=chip.family,
                in_catalog=True,
                contributors=0,
                latency_contributors=0,
                memory_bandwidth_gbps=chip.bandwidth_label(),
                flags="no data",
            )
        )
    return csv_text(CSV_COLUMNS, rows)


def _group_json(group: SuiteGroup) -> dict:
    return {
        "title": group.title,
        "chip": group.chip,
        "engine": group.engine,
        "device": group.device,
        "workload": group.workload,
        "result": group.result,
        "figures": group.figures,
        "rule": group.rule,
        "points": [asdict(p) for p in group.points],
    }


def _matrix_json(row: MatrixRow) -> dict:
    """The row's fields; the catalog's bandwidth as text under the name the CSV gives it (GB/s)."""
    fields = asdict(row)
    fields["memory_bandwidth_gbps_text"] = fields.pop("bandwidth")
    return fields


def render_json(agg: Aggregate, header: dict) -> str:
    suites: dict[str, list[dict]] = {}
    for group in agg.suites:
        suites.setdefault(group.kind, []).append(_group_json(group))
    document = {
        "schema": "anebench.report/3",
        **header,
        "units": UNITS,
        "matrix": [_matrix_json(r) for r in agg.rows],
        "concurrency": [asdict(c) for c in agg.concurrency],
        "suites": suites,
        "coverage": {"missing_chips": [c.key for c in agg.missing_chips]},
        "excluded": [asdict(e) for e in agg.excluded],
        "rules": agg.rules,
    }
    return json.dumps(document, indent=1, ensure_ascii=True) + "\n"  # control and bidi characters escaped
