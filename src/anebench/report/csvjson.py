"""CSV (one table: the matrix plus the catalog chips with no data) and JSON (everything, structured)."""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict

from ..results.aggregate import Aggregate
from .escape import csv_cell

CSV_COLUMNS = ["chip", "family", "in_catalog", "workload", "fingerprint", "engine", "device", "median_gbps",
               "gbps_rel_halfwidth95",
               "contributors", "median_latency_ms", "latency_contributors", "memory_bandwidth_gbps",
               "utilisation_low", "utilisation_high", "tier", "concurrency_verdict", "timing", "provenance",
               "configs", "flags"]


def render_csv(agg: Aggregate) -> str:
    verdicts = {(c.chip, c.fingerprint, c.engine, c.device): c.verdict for c in agg.concurrency}
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in agg.rows:
        low, high = r.utilisation or (None, None)
        writer.writerow([csv_cell(v) for v in (
            r.chip, r.family, r.in_catalog, r.workload, r.fingerprint, r.engine, r.device,
            round(r.median_gbps, 3),
            round(r.gbps_halfwidth, 5) if r.gbps_halfwidth is not None else None, r.contributors,
            round(r.median_latency_s * 1e3, 4) if r.median_latency_s is not None else None,
            r.latency_contributors, r.bandwidth, round(low, 4) if low else None,
            round(high, 4) if high else None, r.tier,
            verdicts.get((r.chip, r.fingerprint, r.engine, r.device), ""), r.timing, ";".join(r.provenance),
            ";".join(r.configs), ";".join(r.flags),
        )])
    for chip in agg.missing_chips:
        writer.writerow([csv_cell(v) for v in (
            chip.key, chip.family, True, "", "", "", "", None, None, 0, None, 0, chip.bandwidth_label(),
            None, None, None, "", "", "", "", "no data",
        )])
    return buffer.getvalue()


def render_json(agg: Aggregate, header: dict) -> str:
    document = {
        "schema": "anebench.report/1",
        **header,
        "matrix": [asdict(r) for r in agg.rows],
        "concurrency": [asdict(c) for c in agg.concurrency],
        "coverage": {"missing_chips": [c.key for c in agg.missing_chips]},
        "excluded": [asdict(e) for e in agg.excluded],
        "rules": agg.rules,
    }
    return json.dumps(document, indent=1, ensure_ascii=True) + "\n"  # control and bidi characters escaped
