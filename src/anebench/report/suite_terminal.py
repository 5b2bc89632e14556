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

from ..measure.sweep import BELOW_RESOLUTION
from ..model import ResultRecord
from .format import csv_text, sig, time_cells, time_unit
from .term_table import TermTable, target


def short_workload(name: str) -> str:
    """`lm_head:HxV:DTYPE` -> `HxV` (the table has a dtype column); any other name as it is."""
    parts = name.split(":")
    return parts[1] if len(parts) == 3 and parts[0] == "lm_head" else name


def threads_of(record: ResultRecord) -> str:
    """Threads per copy where set, else the engine's own thread count where it states one."""
    c = record.concurrency
    for value in (
        c.threads_per_copy if c else None,
        record.method.threads,
        record.engine.details.get("blas_threads"),
        record.engine.details.get("torch_threads"),
    ):
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return "-"


def _rate(value: float | None) -> str:
    """GB/s with two decimals, as every report of the project prints it."""
    return "-" if value is None else f"{value:.2f}"


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
                _rate(record.gbps),
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
        peak = _rate(point.cache_peak_gbps)
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
                _rate(fit.bandwidth_gbps),
                f"{fit.r_squared:.4f}",
                f"{fit.median_abs_rel_residual:.1%}",
                peak,
            ]
        )
    table.notes.append(
        "overhead: ± two standard errors; resid: median |relative residual| of the fit; "
        "peak: the best GB/s of the cache-resident sizes"
    )
    _unresolved_note(table, 4)
    return table


def _sweeps(records: list[ResultRecord]) -> dict[tuple, list[ResultRecord]]:
    groups: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for record in records:
        if record.sweep is not None:
            groups[
                (target(record), record.workload.shape[1], record.workload.dtype, record.host.fingerprint)
            ].append(record)
    return groups


def overhead_text(overhead_us: float, se_us: float | None) -> str:
    """The fitted overhead with its two-standard-error band, or why it is not a figure (a negative one
    within error, refitted at zero: the gates refuse one beyond it)."""
    if overhead_us <= 0:
        return BELOW_RESOLUTION
    if se_us is None:
        return sig(overhead_us)
    if overhead_us <= 2 * se_us:
        return f"{sig(overhead_us, 2)}±{sig(2 * se_us, 2)}*"
    return f"{sig(overhead_us)}±{sig(2 * se_us, 2)}"


UNRESOLVED_NOTE = "*: overhead not resolved: within two standard errors of zero"


def _unresolved_note(table: TermTable, column: int) -> None:
    if any(row[column].endswith("*") for row in table.rows):
        table.notes.append(UNRESOLVED_NOTE)


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
                _rate(record.gbps),
            ]
        )
    _tokens_note(table, records)
    return table


def batch_cell(record: ResultRecord) -> str:
    """The vectors one call multiplies: the batch, or a token-batched bundle's tokens per predict."""
    return str(record.workload.batch) if record.workload.tokens == 1 else f"{record.workload.tokens} tokens"


def _tokens_note(table: TermTable, records: list[ResultRecord]) -> None:
    if any(r.workload.tokens > 1 for r in records):
        table.notes.append("N tokens: a token-batched bundle that multiplies N tokens per predict (batch 1)")


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
    _unresolved_note(table, 6)
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
    _tokens_note(table, records)
    return table


def concurrency_tables(records: list[ResultRecord]) -> list[TermTable]:
    """Each copy solo and together (one row per copy and phase), then one verdict row per run."""
    records = [r for r in records if r.concurrency is not None]
    unit, latencies = time_cells([r.latency_s() for r in records])
    copies = TermTable(
        "concurrency: each copy alone (solo), then all at once (together)",
        [
            "engine",
            "device",
            "workload",
            "dtype",
            "copy",
            "phase",
            "mode",
            "threads",
            f"latency {unit}",
            "GB/s",
        ],
        [False, False, False, False, True, False, False, True, True, True],
    )
    verdicts = TermTable(
        "concurrency verdict: all copies combined over the common window",
        ["engine", "workload", "dtype", "copies", "solo GB/s", "combined GB/s", "scaling", "verdict"],
        [False, False, False, True, True, True, True, False],
        notes=["solo GB/s: the mean of the copies, each alone; scaling: combined / solo"],
    )
    seen: set[tuple] = set()
    for record, latency in zip(records, latencies):
        c = record.concurrency
        assert c is not None
        workload = short_workload(record.workload.name)
        copies.rows.append(
            [
                record.engine.name,
                c.device or record.engine.device,
                workload,
                record.engine.run_dtype,
                "-" if c.copy_ is None else str(c.copy_),
                c.phase,
                c.mode,
                threads_of(record),
                latency,
                _rate(record.gbps),
            ]
        )
        key = (record.engine.name, c.base_fingerprint, c.window_s, tuple(c.solo_gbps))
        if key in seen or c.combined_gbps is None:
            continue
        seen.add(key)
        solo = sum(c.solo_gbps) / len(c.solo_gbps) if c.solo_gbps else None
        verdicts.rows.append(
            [
                record.engine.name,
                workload,
                record.engine.run_dtype,
                str(c.copies),
                _rate(solo),
                _rate(c.combined_gbps),
                "-" if c.scaling is None else f"{c.scaling:.3f}",
                c.verdict or "-",
            ]
        )
    return [copies, verdicts]


def quant_table(records: list[ResultRecord]) -> TermTable:
    """What each quantised variant streams, against fp16 of the same head."""
    records = [r for r in records if r.quant is not None]
    unit, latencies = time_cells([r.latency_s() for r in records])
    table = TermTable(
        "quantised weights: what is streamed",
        [
            "engine:dev",
            "variant",
            "stored MB",
            f"latency {unit}",
            "GB/s",
            "fp16-eq GB/s",
            "t/fp16",
            "B/fp16",
            "verdict",
        ],
        [False, False, True, True, True, True, True, True, False],
    )
    for record, latency in zip(records, latencies):
        q = record.quant
        assert q is not None
        table.rows.append(
            [
                target(record),
                q.variant,
                sig(q.stored_bytes / 1e6),
                latency,
                _rate(q.gbps_as_stored),
                _rate(q.gbps_fp16_equivalent),
                f"{q.latency_ratio:.3f}",
                f"{q.bytes_ratio:.3f}",
                q.verdict or "(reference)",
            ]
        )
    table.notes.append("t/fp16: latency / fp16 latency; B/fp16: stored bytes / fp16 bytes; GB/s: as stored")
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
