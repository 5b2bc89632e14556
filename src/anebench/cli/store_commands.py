"""`anebench store list|show|remove`: what the results store holds, one record at a time."""

from __future__ import annotations

import json
from dataclasses import asdict, astuple, fields
from pathlib import Path

import click
from rich.markup import escape

from ..report.escape import clean_text
from ..report.format import csv_text
from ..results.store import StoredRecord, open_store
from . import options
from .common import err_console, out_console, output_format
from .options import format_option
from .tables import FittingTable, fmt_sig

db_option = options.db_option()


@click.group(invoke_without_command=True)
@click.pass_context
def store(ctx: click.Context) -> None:
    """List, show and remove the records of the results store."""
    if ctx.invoked_subcommand is None:  # bare `anebench store`: its help, as bare `anebench` gives
        click.echo(ctx.get_help())


@store.command("list")
@db_option
@format_option("table", "json", "csv")
@options.json_option()
def store_list(db: Path | None, fmt: str | None, as_json: bool) -> None:
    """List the stored records: id, suite, workload, engine, host, date (oldest first)."""
    with open_store(db, create=False, readonly=True) as opened:
        found, path = opened.listing(), opened.path
    machine = output_format(fmt, as_json)
    if machine == "json":
        click.echo(json.dumps({"db": str(path), "records": [asdict(r) for r in found]}, indent=1))
        return
    if machine == "csv":
        click.echo(csv_text([f.name for f in fields(StoredRecord)], [astuple(r) for r in found]), nl=False)
        return
    rows = [
        [
            r.id[:12],
            r.suite,
            clean_text(r.workload),
            clean_text(f"{r.engine}:{r.device}"),
            clean_text(r.host) or "-",
            r.created[:10],
            fmt_sig(r.gbps) if r.gbps is not None else "-",
            r.provenance,
        ]
        for r in found
    ]
    out_console().print(
        FittingTable(
            ["id", "suite", "workload", "engine:dev", "host", "date", "GB/s", "provenance"],
            rows,
            f"{len(found)} record(s) in {path}",
            "ids: give 8+ leading hex digits to `anebench store show` or `store remove`",
            wrap={"host"},
        )
    )


@store.command("show")
@click.argument("record_id")
@db_option
@format_option("table", "json")
@options.json_option("Same as --format json (the whole stored record).")
def store_show(record_id: str, db: Path | None, fmt: str | None, as_json: bool) -> None:
    """Show one stored record (8+ leading hex digits of its id); --json prints it whole."""
    with open_store(db, create=False, readonly=True) as opened:
        full_id, body = opened.body(record_id.strip().lower())
    if output_format(fmt, as_json) == "json":
        click.echo(json.dumps(json.loads(body), indent=1))
        return
    document = json.loads(body)
    host, engine = document.get("host") or {}, document.get("engine") or {}
    workload = document.get("workload") or {}
    summary = document.get("summary") or {}
    facts = [
        ("id", full_id),
        ("suite", document.get("suite", "")),
        ("provenance", document.get("provenance", "")),
        ("created", document.get("created", "")),
        ("workload", f"{workload.get('name', '')} ({workload.get('fingerprint', '')[:16]})"),
        ("weight bytes", str(workload.get("weight_bytes", ""))),
        ("engine", " ".join(str(engine.get(k) or "") for k in ("name", "version")).strip()
         + f" on {engine.get('device', '')}"),
        ("run dtype", str(engine.get("run_dtype", ""))),
        ("host", " ".join(str(p) for p in (host.get("chip") or host.get("cpu_model"), host.get("os")) if p)),
        ("median", f"{summary['median']:.6g} s" if summary.get("median") else "-"),
        ("GB/s", fmt_sig(document["gbps"]) if document.get("gbps") else "-"),
        ("runs", str((document.get("method") or {}).get("runs") or "-")),
        ("threads", str((document.get("method") or {}).get("threads") or "-")),
    ]
    # a warning is stored as {kind, text}; one stored before warnings had kinds, as its text
    facts += [("warning", str(w.get("text", "")) if isinstance(w, dict) else str(w))
              for w in document.get("warnings") or []]
    out_console().print(
        FittingTable(
            ["field", "value"],
            [[name, clean_text(value)] for name, value in facts],
            "stored record",
            "--json prints the whole record",
            wrap={"value"},
        )
    )


@store.command("remove")
@click.argument("record_ids", nargs=-1, required=True)
@db_option
def store_remove(record_ids: tuple[str, ...], db: Path | None) -> None:
    """Delete records by id (at least 8 leading hex digits), e.g. one that a report skips."""
    with open_store(db, create=False) as opened:
        for removed in opened.remove(*(prefix.strip().lower() for prefix in record_ids)):
            err_console.print(f"removed record {removed} from {escape(str(opened.path))}", highlight=False)


