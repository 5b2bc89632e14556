"""`anebench ingest` and `anebench submit`, and `--store` for `run` and every suite: results into the store
and out to a submission. The store's other commands: `report` (cli/report_command.py) and `store list|
show|remove` (cli/store_commands.py); registered here with these."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from ..errors import UserError
from ..model import ResultRecord
from ..report.escape import clean_text
from ..results.ingest import DEFAULT_FORMAT
from ..results.ingest import ingest as ingest_into_store
from ..results.store import open_store
from ..results.validate import InvalidFile
from . import options
from .boundary import error_text
from .common import QUIET, err_console, flags, out_console, output_format, say, verbosity
from .console import error_line, result_line
from .options import format_option
from .report_command import report
from .store_commands import store
from .tables import FittingTable

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


def store_measured(records: list[ResultRecord], db: Path | None, source: str = "anebench run") -> None:
    """`anebench run --store` (and every suite's): the records into the store, one transaction."""
    with open_store(db) as store:
        done = store.ingest(records, source)
        say(f"stored {done.added} record(s) in {store.path} ({done.duplicates} already there)")




def register(app: click.Group) -> None:
    for command in (ingest, report, submit, store):
        app.add_command(command)


__all__ = [
    "SUBMIT_URL",
    "register",
    "store_measured",
]
