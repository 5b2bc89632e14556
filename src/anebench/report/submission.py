"""`anebench submit`: a validated submission file plus a ready Markdown issue body. No network."""

from __future__ import annotations

from pathlib import Path

from ..errors import UserError
from ..measure.comparison import relative_halfwidth
from ..results.files import atomic_write_text, document_json
from ..model import ResultRecord
from ..results.store import record_chip
from ..results.validate import load_result_file
from ..system.chips import lookup_chip
from .escape import md_cell
from .tables import fmt_gbps_pm


def drop_host_identifiers(record: ResultRecord) -> ResultRecord:
    """Keep what a comparison needs (chip, OS, cores, memory); drop what identifies the machine."""
    host = record.host.model_copy(update={"fingerprint": "", "machine_model": None})
    return record.model_copy(update={"host": host, "id": None}).with_id()


def issue_body(records: list[ResultRecord], submission_name: str, anonymized: bool) -> str:
    lines = ["## anebench result submission", "",
             f"Attach `{md_cell(submission_name)}` (the validated results document) to this issue.", "",
             "| chip | catalog entry | engine:device | workload | GB/s | latency ms | runs | warmup | timing |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        name = record_chip(r)  # the GPU for a CUDA run, as the report files it
        chip = lookup_chip(name)
        latency = r.latency_s()
        lines.append("| " + " | ".join(md_cell(v) for v in (
            name or r.host.cpu_model or "-", chip.key if chip else "not in catalog",
            f"{r.engine.name}:{r.engine.device}", r.workload.name,
            fmt_gbps_pm(r.gbps, relative_halfwidth(r)), f"{latency * 1e3:.3f} ({r.method.statistic})" if latency else "-",
            r.method.runs if r.method.runs is not None else "not stated",
            r.method.warmup_policy or "not stated", r.method.timing,
        )) + " |")
    lines += ["", "GB/s: ± is the between-run 95% interval of the run's repetitions; none: one repetition.",
              "", f"- tool: {md_cell(records[0].tool.name)} {md_cell(records[0].tool.version)}",
              (f"- host: {md_cell(records[0].host.os)} {md_cell(records[0].host.os_version)}, "
              f"{md_cell(records[0].host.arch)}"),
              f"- host identifiers: {'dropped' if anonymized else 'included (fingerprint, machine model)'}",
              f"- record ids: {', '.join(md_cell(r.id[:12]) for r in records)}", ""]
    warnings = [f"{r.workload.name}: {w}" for r in records for w in r.warnings]
    if warnings:
        lines += ["Warnings recorded with the measurement:", ""] + [f"- {md_cell(w)}" for w in warnings] + [""]
    return "\n".join(lines)


def write_submission(result: Path, out_dir: Path, anonymize: bool) -> tuple[Path, Path]:
    records = load_result_file(result)
    if not records:
        raise UserError(f"{result}: the results document holds no records; nothing to submit")
    if anonymize:
        records = [drop_host_identifiers(r) for r in records]
    stem = result.name.removesuffix(".json")
    submission = out_dir / f"{stem}.submission.json"
    body = out_dir / f"{stem}.issue.md"
    atomic_write_text(submission, document_json(records))
    atomic_write_text(body, issue_body(records, submission.name, anonymize))
    return submission, body
