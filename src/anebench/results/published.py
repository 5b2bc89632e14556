"""anemll-bench's published figures (package data) as records with provenance "published".

The mapping keeps what the source states and invents nothing (see MAPPING_RULE, printed in reports).
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from datetime import datetime, timezone
from importlib import resources

from ..engines import PUBLISHED_ANE_ENGINE
from ..model import (
    THREADS_OF_ONE_PROCESS,
    Concurrency,
    EngineInfo,
    HostInfo,
    MethodInfo,
    ResultRecord,
    SourceFacts,
    Summary,
    ToolInfo,
    WorkloadInfo,
    gbps,
)
from ..model.concurrency import Phase
from ..workloads import Workload, resolve_workload

PUBLISHED_CSV = "data/published_anemll_results.csv"
UTILISATION_CSV = "data/published_anemll_utilisation.csv"
SOURCE_TOOL = "anemll-bench"
UNKNOWN_WORKLOAD = "unknown (lut6 or fp16)"
PUBLISHED_PHASES: dict[str, Phase] = {
    "dual-solo": "solo", "dual-parallel": "together", "dual-combined": "combined",
}

MAPPING_RULE = (
    "Published rows (anemll-bench Results.MD) are stored as records with provenance 'published'. "
    "Figures the source states are kept as stated: GB/s as gbps, latency as the mean per-call latency "
    "(the source's GB/s is weight bytes / mean predict() latency). Where only the latency is stated for a "
    "canonical workload, GB/s is derived by the source's own definition (weight bytes / latency, "
    "1 GB = 1e9 bytes) and flagged 'derived GB/s'; where only GB/s is stated, no latency is derived. "
    "Run count and warmup are 'not stated' unless the row gives them. Rows of the mixed latency column "
    "('unknown (lut6 or fp16)') get a unique fingerprint of their own and no GB/s, so they are never "
    "compared with anything. The README's utilisation table adds a row only where Results.MD has no solo "
    "llama_lm_head figure for that chip and configuration (a restated figure is one contributor, not two); "
    "where it states only a percentage, GB/s = percentage x the memory bandwidth it states, flagged derived."
)


def _canonical(name: str) -> tuple[Workload, int]:
    """The workload and the bytes one call reads as the artifact stores them (lut6: indices + tables)."""
    workload = resolve_workload(name)
    return workload, workload.stored_bytes


def _float(text: str) -> float | None:
    return float(text) if text.strip() else None


def _created(date: str) -> datetime:
    parts = [int(p) for p in date.split("-")] + [1, 1]
    return datetime(parts[0], parts[1], parts[2], tzinfo=timezone.utc)


def _workload_info(row: dict, chip: str) -> tuple[WorkloadInfo, dict]:
    facts: dict = {}
    if row["workload"] == UNKNOWN_WORKLOAD:
        base = resolve_workload("llama_lm_head")
        # A fingerprint of this row alone: it can never match a canonical workload or another row.
        unique = hashlib.sha256(f"anemll-bench mixed latency column|{chip}|{row['config']}|{row['date']}"
                                .encode()).hexdigest()
        facts["weight_bytes_unknown"] = True
        return WorkloadInfo(
            name=UNKNOWN_WORKLOAD, shape=list(base.shape), dtype="fp16", quant="unknown",
            weight_bytes=base.weight_bytes, fingerprint=unique, source="anemll-bench artifact",
            note="artifact unknown (llama_lm_head_lut6 or llama_lm_head); weight_bytes is the fp16 "
                 "upper bound, not a stated figure",
        ), facts
    workload, weight_bytes = _canonical(row["workload"])
    return WorkloadInfo.of(workload, weight_bytes, source="anemll-bench artifact"), facts


def row_to_record(row: dict) -> ResultRecord:
    chip = f"Apple {row['chip']}"
    workload, facts = _workload_info(row, chip)
    figure = _float(row["gbps"])
    latency_ms = _float(row["latency_ms"])
    latency_s = latency_ms / 1e3 if latency_ms is not None else None
    if figure is None and latency_s is not None and not facts.get("weight_bytes_unknown"):
        figure = round(gbps(workload.weight_bytes, latency_s), 2)
        facts["gbps_derived"] = "weight bytes / stated mean latency (the source's definition)"
    runs = int(row["runs"]) if row["runs"] else None
    if row["config"]:
        facts["chip_config"] = row["config"]
    concurrency = None
    if row["mode"] != "solo":
        # anemll-bench's dual-model benchmark runs both models in threads of one process, and the published
        # engine's predict holds the GIL: the copies could never overlap. Its "instance 1" is copy 0.
        concurrency = Concurrency(
            mode="threads", copy=int(row["instance"]) - 1 if row["instance"] else None, copies=2,
            phase=PUBLISHED_PHASES[row["mode"]], call_releases_gil=False, flags=[THREADS_OF_ONE_PROCESS])
    if row["warmup_stated"] == "no":
        facts["flags"] = ["run count and warmup policy not stated"]
    notes = [f"{row['source']} ({row['date']})"] + ([row["note"]] if row["note"] else [])
    record = ResultRecord(
        tool=ToolInfo(name=SOURCE_TOOL, version=f"Results.MD {row['date']}"),
        provenance="published",
        provenance_note="; ".join(notes),
        created=_created(row["date"]),
        suite="concurrency" if row["mode"] != "solo" else "run",
        host=HostInfo(os="macOS", arch="arm64", chip=chip),
        engine=EngineInfo(name=PUBLISHED_ANE_ENGINE, device="ane",
                          run_dtype=workload.quant or workload.dtype),
        workload=workload,
        method=MethodInfo(runs=runs, warmup_policy=None, warmup_runs=None, timer="not stated",
                          statistic="mean", timing=row["timing"]),
        summary=Summary(n=runs, mean=latency_s),
        gbps=figure,
        source=SourceFacts(**facts) if facts else None,
        concurrency=concurrency,
    )
    return record.with_id()


def _package_csv(name: str) -> list[dict]:
    text = resources.files("anebench").joinpath(name).read_text(encoding="utf-8")
    return list(csv.DictReader(io.StringIO(text)))


def published_rows() -> list[dict]:
    return _package_csv(PUBLISHED_CSV)


def utilisation_rows() -> list[dict]:
    """anemll-bench's README utilisation table: chip, config, ane_gbps, memory_gbps, utilisation_pct."""
    return _package_csv(UTILISATION_CSV)


def _restates(row: dict, results: list[dict]) -> bool:
    """True when Results.MD already has a solo llama_lm_head figure for the row's chip and configuration."""
    return any(r["chip"] == row["chip"] and r["workload"] == "llama_lm_head" and r["mode"] == "solo"
               and (r["gbps"] or r["latency_ms"]) and (not row["config"] or r["config"] == row["config"])
               for r in results)


def utilisation_record(row: dict) -> ResultRecord:
    """One README utilisation row as a published llama_lm_head figure (GB/s derived when only a % is
    stated)."""
    workload, weight_bytes = _canonical("llama_lm_head")
    facts: dict = {"tool_figures": {"utilisation_pct": float(row["utilisation_pct"]),
                                    "memory_gbps": float(row["memory_gbps"])}}
    gbps = _float(row["ane_gbps"])
    if gbps is None:
        gbps = round(float(row["utilisation_pct"]) / 100 * float(row["memory_gbps"]), 2)
        facts["gbps_derived"] = (
            f"derived from a percentage: the stated {row['utilisation_pct']}% x the stated "
            f"{row['memory_gbps']} GB/s memory bandwidth (the source gives no GB/s)"
        )
        facts["flags"] = ["ANE GB/s derived from a stated utilisation percentage"]
    if row["config"]:
        facts["chip_config"] = row["config"]
    date = re.search(r"\((\d{4}-\d{2})\)", row["source"])
    record = ResultRecord(
        tool=ToolInfo(name=SOURCE_TOOL, version=f"README {date[1] if date else 'utilisation table'}"),
        provenance="published",
        provenance_note="; ".join(filter(None, (row["source"], row["note"]))),
        created=_created(date[1] if date else "2026-09"),
        host=HostInfo(os="macOS", arch="arm64", chip=f"Apple {row['chip']}"),
        engine=EngineInfo(name=PUBLISHED_ANE_ENGINE, device="ane", run_dtype=workload.dtype),
        workload=WorkloadInfo.of(workload, weight_bytes, source="anemll-bench artifact"),
        method=MethodInfo(runs=None, warmup_policy=None, warmup_runs=None, timer="not stated",
                          statistic="mean", timing="end-to-end predict()"),
        summary=Summary(n=None),
        gbps=gbps,
        source=SourceFacts(**facts),
    )
    return record.with_id()


def published_records() -> list[ResultRecord]:
    """Results.MD's rows, then the README utilisation rows that state a figure Results.MD lacks."""
    results = published_rows()
    records = [row_to_record(row) for row in results]
    records += [utilisation_record(row) for row in utilisation_rows() if not _restates(row, results)]
    return records
