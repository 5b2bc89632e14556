"""`anebench ingest`, `anebench report`, `anebench submit`: the results store and what reads it."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, astuple, fields
from pathlib import Path

import click
from rich.console import Console
from rich.markup import escape

from ..errors import UserError
from ..model import ResultRecord
from ..report.escape import clean_text
from ..report.format import csv_text
from ..results.ingest import DEFAULT_FORMAT, LOADERS, Loader, ingest_files
from ..results.ingest import ingest as ingest_into_store
from ..results.store import StoredRecord, open_store
from ..results.validate import InvalidFile
from ..util.outputs import check_target
from . import options
from .boundary import error_text
from .common import (
    QUIET,
    err_console,
    flags,
    flush_warnings,
    out_console,
    output_format,
    say,
    verbosity,
    warn,
)
from .console import error_line, result_line
from .options import format_option
from .tables import FittingTable, fmt_sig

# Where `submit`'s issue body goes; the same placeholder as [tool.anebench] submit-url in pyproject.toml
# (a test keeps them equal) until the project has a public tracker.
SUBMIT_URL = "https://github.com/anebench/anebench/issues/new?template=result.md"


db_option = options.db_option()


def _print_problems(error: UserError) -> None:
    """The error line, then each problem indented (errors: printed under -q too, wrapped to the width)."""
    error_line("error", error_text(error))
    for line in getattr(error, "problems", [])[:200]:
        say(f"  {line}", quiet_too=True)


@click.command()
@click.argument("files", nargs=-1, type=click.Path(path_type=Path))
@click.option("--published", is_flag=True, help="Import anemll-bench's published figures (package data).")
@click.option(
    "--from",
    "source_format",
    default=DEFAULT_FORMAT,
    show_default=True,
    help="Format of FILES: anebench, anemll-bench (its JSON, pasted or in its HTML report).",
)
@db_option
@options.json_option()
@format_option("table", "json")
def ingest(
    files: tuple[Path, ...],
    published: bool,
    source_format: str,
    db: Path | None,
    as_json: bool,
    fmt: str | None = None,
) -> None:
    """Validate result files and store them (one transaction per file; duplicates are no-ops)."""
    if not files and not published:
        raise UserError("ingest: give result FILES and/or --published")
    machine = output_format(fmt, as_json)
    with flags(format="--from"):
        outcome = ingest_into_store(list(files), published, source_format, db)
    rows = [[clean_text(r.source_label), str(r.added), str(r.duplicates)] for r in outcome.reports]
    table = FittingTable(
        ["source", "added", "duplicates"], rows, f"ingested into {outcome.db}", wrap={"source"}
    )
    if not outcome.reports:
        pass  # nothing went in: an empty table above the error line would only hide it
    elif machine == "table":
        out_console().print(table)
    elif verbosity() > QUIET:
        err_console.print(table)
    for failure in outcome.failures:
        _print_problems(failure)
    if machine == "json":
        sys.stdout.write(
            json.dumps(
                {
                    "db": str(outcome.db),
                    "records_in_store": outcome.records_in_store,
                    "ingested": [
                        {"source": r.source_label, "added": r.added, "duplicates": r.duplicates}
                        for r in outcome.reports
                    ],
                    "failed": [
                        {"error": error_text(f), "problems": getattr(f, "problems", [error_text(f)])}
                        for f in outcome.failures
                    ],
                }
            )
            + "\n"
        )
    if outcome.failures:
        sys.exit(UserError.exit_code)


@click.command()
@options.format_option("md", "html", "csv", "json", default="md", help="Output format.")
@options.out_file_option("Write the report here (Markdown also writes its chart PNGs beside it).")
@options.force_option()
@db_option
def report(fmt: str, out: Path | None, force: bool, db: Path | None) -> None:
    """Generate the results matrix by chip from the store (tiers, utilisation, verdicts, coverage)."""
    from ..report.build import render_report, renderable
    from ..results.store import default_db_path

    db_path = db if db is not None else default_db_path()
    if out is not None:
        check_target(out, "--out", force, [(db_path, "the results store (--db)")])
    with open_store(db_path, create=False, readonly=True) as store:  # a reader never creates a database
        rows = store.rows()
        source = f"store {store.path}"
    if not rows:
        raise UserError(
            f"--db {store.path}: the store is empty; run `anebench ingest --published` or "
            "`anebench ingest FILE...` first"
        )
    records, skipped = renderable(rows)
    for record_id, why in skipped:
        warn(
            f"record {record_id[:16]} skipped: it cannot be rendered ({why}); "
            f"`anebench store remove {record_id[:16]}` deletes it"
        )
    flush_warnings()
    if not records:
        raise UserError(f"--db {store.path}: no record in the store can be rendered")
    text = render_report(
        records, fmt, out, source, force=force, protected=[(db_path, "the results store (--db)")]
    )
    if out is None:
        sys.stdout.write(text)
    else:
        err_console.print(
            f"wrote {fmt} report of {len(records)} record(s) to {escape(str(out))}", highlight=False
        )


@click.command()
@click.argument("result", type=click.Path(path_type=Path))
@options.out_dir_option("Directory for the submission file and the issue body [default: .].")
@click.option(
    "--out-dir",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    hidden=True,
    help="Former name of --out.",
)
@click.option(
    "--drop-host-ids",
    is_flag=True,
    help="Remove the host fingerprint, machine model, host and login names, paths and private "
    "model folder names, everywhere (file names too).",
)
@options.force_option("Replace read-only output files.")
@click.option(
    "--doctor",
    "doctor_file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Attach `anebench doctor`'s diagnostic file (host identifiers dropped with --drop-host-ids).",
)
@click.option(
    "--into",
    "into",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="A results repository: write REPO/submissions/<chip>/<run-id>.json (never replaced) instead.",
)
@click.option(
    "--log",
    "log",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="With --into: the run's console output, kept in the submission.",
)
def submit(result: Path, out: Path | None, out_dir: Path | None, drop_host_ids: bool, force: bool,
           doctor_file: Path | None = None, into: Path | None = None, log: Path | None = None) -> None:
    """Validate RESULT.json and write a submission file plus a Markdown issue body to file as a new issue
    (no network: the command says where); with --into REPO, an immutable submission in a results
    repository."""
    from ..report.submission import write_submission

    if into is not None:
        if out is not None or out_dir is not None or force:
            raise UserError(
                f"--into {into}: a repository submission is never replaced; drop --out and --force"
            )
        if doctor_file is not None:
            raise UserError(f"--doctor {doctor_file}: only with an issue body, not with --into")
        submit_into_repository(result, into, drop_host_ids, log)
        return
    if log is not None:
        raise UserError(f"--log {log}: only with --into REPO (the issue body has no room for a log)")
    if out is not None and out_dir is not None and out != out_dir:
        raise UserError(
            f"--out {out} and --out-dir {out_dir}: --out-dir is the former name of --out; give one"
        )
    flag = "--out" if out is not None or out_dir is None else "--out-dir"
    folder = out if out is not None else out_dir if out_dir is not None else Path(".")
    if not folder.is_dir():
        raise UserError(f"{flag} {folder}: no such directory")
    try:
        submission, body = write_submission(result, folder, drop_host_ids, force, doctor_file)
    except InvalidFile as exc:
        _print_problems(exc)
        sys.exit(UserError.exit_code)
    result_line(f"submission: {clean_text(str(submission))}")
    result_line(f"issue body: {clean_text(str(body))}")
    if doctor_file is not None:
        attached = body.with_name(body.name.removesuffix(".issue.md") + ".doctor.txt")
        result_line(f"doctor file: {clean_text(str(attached))}")
    say(
        f"to submit: open {SUBMIT_URL} (a placeholder until the project has a public tracker), paste the "
        "issue body and attach the submission file; nothing was sent"
    )


def submit_into_repository(result: Path, into: Path, drop_host_ids: bool, log: Path | None) -> None:
    from ..report.leaderboard_submit import submit_into

    try:
        written = submit_into(result, into, drop_host_ids, log)
    except InvalidFile as exc:
        _print_problems(exc)
        sys.exit(UserError.exit_code)
    result_line(f"submission: {clean_text(str(written))}")
    say(f"next: `anebench leaderboard build {into}`, then open a pull request with the new file and the "
        "regenerated ones; nothing was sent")


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


def store_measured(records: list[ResultRecord], db: Path | None, source: str = "anebench run") -> None:
    """`anebench run --store` (and every suite's): the records into the store, one transaction."""
    with open_store(db) as store:
        done = store.ingest(records, source)
        say(f"stored {done.added} record(s) in {store.path} ({done.duplicates} already there)")


def store_options(func, db: bool = True):
    """`--store [--db PATH]` for `run` and every suite; the values wait in the click context for
    finish_run / suite_output.finish. ``db=False``: the command has its own --db (latency)."""

    if db:
        func = options.db_option(
            "Results database for --store (default: the user data dir).", remember=True
        )(func)
    return click.option(
        "--store",
        is_flag=True,
        expose_value=False,
        callback=options.remember_value,
        help="Also store the measured records in the results database.",
    )(func)


def finish_run(records: list[ResultRecord], as_json: bool) -> None:
    """After a run is saved: store it if asked, then show it beside the published figures (stderr
    under --json, so stdout stays one JSON document)."""
    meta = click.get_current_context().meta
    if meta.get("anebench.store"):
        store_measured(records, meta.get("anebench.db"))
    show_family_comparison(records, err_console if as_json else out_console())


def show_family_comparison(records: list[ResultRecord], console: Console) -> None:
    """End of `anebench run`: the user's figure beside the published ones of the same chip family (each
    published point judged against the run's between-run interval) where there are any; else beside
    the published ranges by device kind, said once for the whole run."""
    from ..measure.uncertainty import gbps_cell
    from ..report.compare import versus_label
    from ..report.published_context import published_context

    if verbosity() <= QUIET:
        return
    context = published_context(records)
    if context.family_rows:
        rows = []
        for row in context.family_rows:
            gbps = f"{row.gbps:.2f}" if row.gbps else "-"
            if row.yours and row.record is not None:  # the same range as the results table above
                gbps = gbps_cell(row.record)
            rows.append(
                [
                    clean_text(row.chip),
                    clean_text(row.config or "-"),
                    clean_text(row.workload),
                    clean_text(row.engine),
                    gbps,
                    "" if row.yours else versus_label(row.versus),
                    f"{fmt_sig(row.latency_ms)} ({row.statistic})" if row.latency_ms else "-",
                    clean_text(row.source),
                ]
            )
        console.print(
            FittingTable(
                ["chip", "config", "workload", "engine:dev", "GB/s", "vs run", "latency ms", "source"],
                rows,
                "your run beside published figures (same chip family, same workload fingerprint)",
                wrap={"config", "source"},
            )
        )
        console.print(
            "published figures are points (their sources give no interval); 'vs run': their GB/s "
            "against yours, 'sig.' outside your run's between-run 95% interval, 'n.s.' inside it, "
            "'?' where your run has one repetition",
            highlight=False,
            markup=False,
        )
    if context.kind_rows:
        rows = []
        for kind in context.kind_rows:
            if kind.low is None or kind.high is None:
                figure = "-"
            elif kind.record is not None:  # the same ± as the results table above
                figure = gbps_cell(kind.record)
            else:
                figure = (
                    fmt_sig(kind.low)
                    if kind.low == kind.high
                    else f"{fmt_sig(kind.low)}-{fmt_sig(kind.high)}"
                )
            rows.append([kind.kind, clean_text(kind.workload), figure, kind.what])
        console.print(
            FittingTable(
                ["device kind", "workload", "GB/s", "what"],
                rows,
                "your run beside published ranges by device kind",
                wrap={"what"},
            )
        )
    for note in context.notes:  # prose: wrapped between words at the console's width
        console.print(clean_text(note), highlight=False, markup=False)


def register(app: click.Group) -> None:
    for command in (ingest, report, submit, store):
        app.add_command(command)


__all__ = [
    "LOADERS",
    "SUBMIT_URL",
    "InvalidFile",
    "Loader",
    "db_option",
    "finish_run",
    "ingest_files",
    "register",
    "show_family_comparison",
    "store_measured",
    "store_options",
]
