"""The concurrency and quant suites' terminal tables: each copy solo and together with the run's verdict,
and what each quantised variant streams against fp16 (report/suite_terminal.py states the rules)."""

from __future__ import annotations

from ..model import ResultRecord
from .format import sig, time_cells
from .suite_cells import rate, short_workload, threads_of
from .term_table import TermTable, target


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
                rate(record.gbps),
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
                rate(solo),
                rate(c.combined_gbps),
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
                rate(q.gbps_as_stored),
                rate(q.gbps_fp16_equivalent),
                f"{q.latency_ratio:.3f}",
                f"{q.bytes_ratio:.3f}",
                q.verdict or "(reference)",
            ]
        )
    table.notes.append("t/fp16: latency / fp16 latency; B/fp16: stored bytes / fp16 bytes; GB/s: as stored")
    return table
