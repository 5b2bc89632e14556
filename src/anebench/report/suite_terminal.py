"""Each suite's terminal table, built from its records (a run's or the store's): the CLI only prints them.

Rules every table follows, so it fits 80 columns without a wrapped number:
- the columns that identify a row (engine:device, workload, batch, tokens, copy, phase, threads) and only the
  figures that mean something for the suite (no GB/s on compute or latency);
- sizes in SI units (KB = 1e3, MB = 1e6 bytes) with 3 significant digits, rates in GB/s (1e9 bytes/s,
  two decimals as in every report) and FLOP/s;
- times in one unit per column (report/format.py: the one in which its smallest value is >= 1), each cell
  with 3 significant digits (a small time is never printed as 0.00);
- a workload `lm_head:HxV:DTYPE` shows as `HxV` where the table has a dtype column (the one abbreviation).
"""

from __future__ import annotations

from collections import defaultdict

from ..model import ResultRecord
from .format import csv_text, sig, time_cells, time_unit
from .suite_cells import (
    batch_cell,
    overhead_text,
    rate,
    short_workload,
    threads_of,
    tokens_note,
    unresolved_note,
)
from .suite_variants import concurrency_tables, quant_table
from .term_table import TermTable, target


def sweep_points_table(records: list[ResultRecord]) -> TermTable:
    """One row per size of every sweep: latency, GB/s and whether the fit used it."""
    records = [r for r in records if r.sweep is not None]
    unit, latencies = time_cells([r.latency_s() for r in records])
    table = TermTable(
        "sweep: one row per weight size",
        ["engine:dev", "workload", "dtype", "size MB", f"latency {unit}", "GB/s", "in fit"],
        [False, False, False, True, True, True, False],
    )
    for record, latency in zip(records, latencies):
        assert record.sweep is not None
        table.rows.append(
            [
                target(record),
                short_workload(record.workload.name),
                record.engine.run_dtype,
                sig(record.workload.weight_bytes / 1e6),
                latency,
                rate(record.gbps),
                "yes" if record.sweep.in_fit else "no",
            ]
        )
    return table


def sweep_fit_table(records: list[ResultRecord]) -> TermTable:
    """One row per sweep (engine, device, base head): the knee, the fit or why it failed."""
    table = TermTable(
        "sweep fit: latency = overhead + bytes / bandwidth",
        ["engine:dev", "hidden", "knee MB", "points", "overhead µs", "GB/s", "R²", "resid", "peak GB/s"],
        [False, False, True, True, True, True, True, True, True],
    )
    for key, group in _sweeps(records).items():
        point = group[0].sweep
        assert point is not None
        hidden = f"{group[0].workload.shape[1]} {group[0].engine.run_dtype}"
        knee = sig(point.knee_bytes / 1e6) if point.knee_bytes else "-"
        peak = rate(point.cache_peak_gbps)
        fit = point.fit
        if fit is None:
            table.rows.append([key[0], hidden, knee, "-", "-", "-", "-", "-", peak])
            table.notes.append(f"{key[0]} hidden {hidden}: fit failed: {point.fit_error}")
            continue
        table.rows.append(
            [
                key[0],
                hidden,
                knee,
                str(fit.points),
                overhead_text(
                    fit.overhead_s * 1e6, None if fit.overhead_se_s is None else fit.overhead_se_s * 1e6
                ),
                rate(fit.bandwidth_gbps),
                f"{fit.r_squared:.4f}",
                f"{fit.median_abs_rel_residual:.1%}",
                peak,
            ]
        )
    table.notes.append(
        "overhead: ± two standard errors; resid: median |relative residual| of the fit; "
        "peak: the best GB/s of the cache-resident sizes"
    )
    unresolved_note(table, 4)
    return table


def _sweeps(records: list[ResultRecord]) -> dict[tuple, list[ResultRecord]]:
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for record in records:
        if record.sweep is not None:
            groups[
                (target(record), record.workload.shape[1], record.workload.dtype, record.host.fingerprint)
            ].append(record)
    return groups


def roofline_table(records: list[ResultRecord]) -> TermTable:
    """One row per batch (or tokens per predict) of every roofline."""
    records = [r for r in records if r.roofline is not None]
    unit, latencies = time_cells([r.latency_s() for r in records])
    table = TermTable(
        "roofline: one row per batch",
        ["engine:dev", "workload", "dtype", "batch", f"latency {unit}", "GFLOP/s", "bytes/FLOP", "GB/s"],
        [False, False, False, True, True, True, True, True],
    )
    for record, latency in zip(records, latencies):
        roof = record.roofline
        assert roof is not None
        table.rows.append(
            [
                target(record),
                short_workload(record.workload.name),
                record.engine.run_dtype,
                batch_cell(record),
                latency,
                f"{roof.flop_per_s / 1e9:.2f}",
                sig(roof.bytes_per_flop),
                rate(record.gbps),
            ]
        )
    tokens_note(table, records)
    return table


def latency_table(records: list[ResultRecord]) -> TermTable:
    """Dispatch cost per engine and device, beside the sweep's fitted overhead."""
    records = [r for r in records if r.latency is not None]
    medians = [r.latency.median_us * 1e-6 for r in records if r.latency]
    p95s = [r.latency.p95_us * 1e-6 for r in records if r.latency]
    overheads = [
        r.latency.sweep_overhead_us * 1e-6 if r.latency and r.latency.sweep_overhead_us is not None else None
        for r in records
    ]
    unit, scale = time_unit(medians)
    table = TermTable(
        "dispatch cost: the smallest workload the engine times",
        ["engine:dev", "workload", "size KB", "threads", f"median {unit}", f"p95 {unit}", "overhead µs"],
        [False, False, True, True, True, True, True],
    )
    for record, med, p95, over in zip(records, medians, p95s, overheads):
        lat = record.latency
        assert lat is not None
        if over is None:
            fitted = "-"
        else:
            se = lat.sweep_overhead_se_us
            fitted = overhead_text(over * 1e6, se)
        table.rows.append(
            [
                target(record),
                record.workload.name,
                sig(record.workload.weight_bytes / 1e3),
                threads_of(record),
                sig(med / scale),
                sig(p95 / scale),
                fitted,
            ]
        )
    table.notes.append(
        "overhead: the intercept of a sweep's fit (latency = overhead + bytes / bandwidth), "
        "± two standard errors"
    )
    unresolved_note(table, 6)
    return table


def compute_table(records: list[ResultRecord]) -> TermTable:
    """Peak matrix throughput per engine, device, dtype and batch (or tokens per predict)."""
    records = [r for r in records if r.compute is not None]
    unit, latencies = time_cells([r.latency_s() for r in records])
    table = TermTable(
        "peak matrix throughput",
        ["engine:dev", "workload", "dtype", "batch", f"latency {unit}", "TFLOP/s", "half TFLOP/s", "bound"],
        [False, False, False, True, True, True, True, False],
    )
    for record, latency in zip(records, latencies):
        c = record.compute
        assert c is not None
        dtype = (
            record.workload.dtype
            if record.workload.dtype == record.engine.run_dtype
            else f"{record.workload.dtype}>{record.engine.run_dtype}"
        )
        table.rows.append(
            [
                target(record),
                short_workload(record.workload.name),
                dtype,
                batch_cell(record),
                latency,
                sig(c.tflop_per_s),
                sig(c.half_batch_tflop_per_s),
                "yes" if c.compute_bound else "NO",
            ]
        )
    if records and records[0].compute:
        table.notes.append(f"half: the same at half the batch; bound: {records[0].compute.rule}")
    if any(r.workload.dtype != r.engine.run_dtype for r in records):
        table.notes.append("dtype A>B: the workload's dtype A ran as B on this engine")
    tokens_note(table, records)
    return table


def capability_table(found: list[tuple[str, dict[str, str | None]]], variants: list[str]) -> TermTable:
    """Which variants each engine:device runs as stored (None) or why not; the reasons follow the table."""
    table = TermTable(
        "variants each engine runs as stored", ["engine:dev", *variants], [False] * (1 + len(variants))
    )
    reasons: dict[str, str] = {}
    for label, by_variant in found:
        cells = []
        for variant in variants:
            reason = by_variant.get(variant)
            if reason is None:
                cells.append("yes")
                continue
            key = reasons.setdefault(reason, f"({len(reasons) + 1})")
            cells.append(f"no {key}")
        table.rows.append([label, *cells])
    table.notes += [f"{key} {reason}" for reason, key in reasons.items()]
    return table


def suite_tables(suite: str, records: list[ResultRecord]) -> list[TermTable]:
    """The tables of ``suite`` (as records name it) from its records: what the CLI prints after a run."""
    if suite == "sweep":
        return [sweep_points_table(records), sweep_fit_table(records)]
    if suite == "roofline":
        return [roofline_table(records)]
    if suite == "latency":
        return [latency_table(records)]
    if suite == "compute":
        return [compute_table(records)]
    if suite == "concurrency":
        return concurrency_tables(records)
    if suite == "quant":
        return [quant_table(records)]
    if suite == "decode":
        from .decode_tables import decode_table, timeline_table

        timeline = timeline_table(records)
        return [decode_table(records)] + ([timeline] if timeline else [])
    raise ValueError(f"no terminal table for suite {suite!r}")


def as_csv(tables: list[TermTable]) -> str:
    """The tables as CSV (units in the column names), separated by a blank line when several."""
    return "\n".join(csv_text(table.columns, table.rows) for table in tables)


def as_markdown(tables: list[TermTable]) -> str:
    """The tables as Markdown, each under its title with its notes after it (no HTML entities)."""

    def cell(text: str) -> str:
        return text.replace("|", "\\|")

    parts = []
    for table in tables:
        lines = [
            f"### {table.title}",
            "",
            "| " + " | ".join(cell(c) for c in table.columns) + " |",
            "|" + "|".join("---:" if n else "---" for n in table.numeric) + "|",
        ]
        lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in table.rows]
        lines += [""] + [f"{note}  " for note in table.notes]
        parts.append("\n".join(lines).rstrip() + "\n")
    return "\n".join(parts)


SUITES = ("sweep", "roofline", "latency", "compute", "concurrency", "quant")


def all_suite_tables(records: list[ResultRecord]) -> list[TermTable]:
    """Every suite's tables for the records of a file or the store (suite by suite; others skipped)."""
    tables = []
    for suite in SUITES:
        found = [r for r in records if r.suite == suite and r.provenance == "measured"]
        if found:
            tables += suite_tables(suite, found)
    return tables
