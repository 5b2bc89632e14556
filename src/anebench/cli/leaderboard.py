"""`anebench leaderboard build|init|serve` and `compare mine.json --leaderboard REPO`: a results
repository of many machines' submissions, its regenerated matrix and its browsable dataset."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import click

from ..errors import UserError
from ..report.escape import clean_text
from .common import QUIET, err_console, out_console, say, verbosity
from .console import wraps
from .tables import FittingTable

REPO = click.Path(file_okay=False, path_type=Path)


@click.group()
def leaderboard() -> None:
    """A results repository of many machines: build its matrix, start one, browse it."""


@leaderboard.command("build", short_help="Regenerate the matrix from the submissions; --check for CI.")
@click.argument("repo", type=REPO)
@click.option(
    "--check",
    is_flag=True,
    help="Write nothing; exit non-zero when a submission fails validation or a committed generated "
    "file differs from a fresh build (one line each).",
)
def build_command(repo: Path, check: bool) -> None:
    """Regenerate REPO's matrix (README table, leaderboard/: HTML, CSV, JSON, SQLite, Datasette metadata)
    from its submissions alone, validating each as `ingest` does; rejected ones are listed and kept out."""
    from ..report.leaderboard import build
    from ..report.leaderboard import check as check_repo

    if not repo.is_dir():
        raise UserError(f"REPO {repo}: no such directory")
    if check:
        built, problems = check_repo(repo)
        for line in problems:
            err_console.print(
                f"check failed: {clean_text(line, keep_newlines=False)}",
                markup=False,
                highlight=False,
                soft_wrap=not wraps(err_console),
            )
        if problems:
            sys.exit(1)
        click.echo(
            f"leaderboard is up to date: {len(built.repo.accepted)} submission(s), "
            f"{built.agg.records} record(s)"
        )
        return
    built = build(repo)
    for x in built.repo.rejected:
        err_console.print(
            f"rejected {clean_text(x.path)}: {clean_text(x.reason, keep_newlines=False)}",
            markup=False,
            highlight=False,
            soft_wrap=not wraps(err_console),
        )
    click.echo(
        f"built {repo / 'leaderboard'} and README.md: {len(built.repo.accepted)} submission(s) accepted, "
        f"{len(built.repo.rejected)} rejected, {len(built.agg.rows)} matrix row(s)"
    )


@leaderboard.command("init", short_help="Write a results repository's skeleton and build it.")
@click.argument("repo", type=REPO)
@click.option("--title", default=None, help="The repository's title (README, HTML page, dataset).")
@click.option(
    "--install",
    "install",
    default=None,
    help="What CI's `pip install` installs (a version pin, a path or a git URL) [default: this "
    "anebench's version, pinned, so that CI builds what this version builds].",
)
def init_command(repo: Path, title: str | None, install: str) -> None:
    """Write a results repository's skeleton in REPO (README with markers, CI workflow, PR template,
    CONTRIBUTING) and build it once; an existing file is never replaced."""
    from ..report.leaderboard import Settings, build
    from ..report.leaderboard_init import init

    written, kept = init(repo, title or Settings.title, install)
    build(repo)
    for name in written:
        click.echo(f"wrote {clean_text(str(repo / name))}")
    for name in kept:
        say(f"kept {clean_text(str(repo / name))} (it exists)")
    say(f"next: `anebench submit RESULT.json --into {repo}` and `anebench leaderboard build {repo}`")


@leaderboard.command("serve", short_help="Browse the built dataset with Datasette on 127.0.0.1.")
@click.argument("repo", type=REPO)
@click.option("--port", type=click.IntRange(1, 65535), default=8001, show_default=True)
def serve_command(repo: Path, port: int) -> None:
    """Serve REPO's built dataset read-only on 127.0.0.1 with Datasette (facets, canned queries); needs
    `pip install "anebench[dataset]"`."""
    from ..report.leaderboard import DB, METADATA

    if importlib.util.find_spec("datasette") is None:
        raise UserError('leaderboard serve: needs Datasette; pip install "anebench[dataset]"')
    db, metadata = repo / DB, repo / METADATA
    for path in (db, metadata):
        if not path.is_file():
            raise UserError(f"{path}: missing; run `anebench leaderboard build {repo}` first")
    command = [
        sys.executable,
        "-m",
        "datasette",
        "serve",
        "--immutable",
        str(db),
        "--metadata",
        str(metadata),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    say(f"serving {db} read-only at http://127.0.0.1:{port}/ (Ctrl-C stops)")
    child = subprocess.Popen(command)
    try:
        code = child.wait()
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the server goes too
        code = 0
    finally:
        if child.poll() is None:
            child.terminate()
            try:
                child.wait(10)
            except subprocess.TimeoutExpired:
                child.kill()
    if code:
        raise UserError(f"leaderboard serve: Datasette exited with status {code}")


def show_placement(files: tuple[Path, ...], repo: Path, machine: str) -> None:
    """`compare mine.json --leaderboard REPO`."""
    from ..results.files import load_result_file
    from ..results.leaderboard import scan
    from ..results.leaderboard_compare import place

    if len(files) != 1:
        raise UserError(f"--leaderboard {repo}: give one result file to place (got {len(files)})")
    mine = load_result_file(files[0], strict=True)
    placed = place(mine, scan(repo))
    header = [
        "chip",
        "engine:dev",
        "workload",
        "your GB/s",
        "rank",
        "submitters min / median / max",
        "spread",
    ]
    rows = []
    for p in placed.rows:
        spread = p.spread()
        rows.append(
            [
                clean_text(p.chip),
                clean_text(f"{p.engine}:{p.device}"),
                clean_text(p.workload),
                f"{p.gbps:.2f}",
                f"{p.rank} of {p.of}",
                "-" if spread is None else f"{spread[0]:.2f} / {spread[1]:.2f} / {spread[2]:.2f}",
                "-" if spread is None else f"{spread[3]:.1%}",
            ]
        )
    table = FittingTable(
        header,
        rows,
        f"your run within its chip's submissions in {clean_text(str(repo))}",
        "rank: 1 = the fastest of the other submissions and your run; spread: (max - min) / "
        "median between submitters, each submission counted once",
    )
    if machine == "json":
        if verbosity() > QUIET:
            err_console.print(table)
        document = [
            {
                "chip": p.chip,
                "engine": p.engine,
                "device": p.device,
                "workload": p.workload,
                "fingerprint": p.fingerprint,
                "gbps": p.gbps,
                "rank": p.rank,
                "of": p.of,
                "peers": [{"submission": s, "gbps": g} for s, g in p.peers],
                "spread": p.spread(),
                "own_submission": p.own_submission,
            }
            for p in placed.rows
        ]
        sys.stdout.write(json.dumps({"placements": document, "notes": placed.notes}, indent=1) + "\n")
    elif machine == "table":
        out_console().print(table)
    else:
        raise UserError(f"--format {machine}: with --leaderboard give table or json")
    for note in placed.notes:
        say(clean_text(note))


def register(app: click.Group) -> None:
    app.add_command(leaderboard)


__all__ = ["leaderboard", "register", "show_placement"]
