"""`anebench submit RESULT.json --into REPO`: one immutable submission file in a results repository."""

from __future__ import annotations

import json
import subprocess
from importlib import metadata
from pathlib import Path

from .. import __version__
from ..errors import UserError, setting
from ..results.files import load_result_file
from ..results.leaderboard import (
    SubmittingTool,
    duplicate_record,
    envelope,
    relative_path,
    submission_json,
)
from ..util.inputs import read_input_bytes
from ..util.outputs import atomic_write_bytes
from .submission import drop_host_identifiers, scrub_text


def _git(args: list[str], where: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


def tool_state() -> SubmittingTool:
    """This anebench: its version, and the git commit and dirty flag of its source where known (a
    checkout it runs from, or the commit pip recorded when it was installed from git)."""
    source = Path(__file__).resolve().parents[1]
    top = _git(["rev-parse", "--show-toplevel"], source)
    project = Path(top.strip()) / "pyproject.toml" if top else None
    ours = project is not None and project.is_file() and 'name = "anebench"' in project.read_text("utf-8")
    head = _git(["rev-parse", "HEAD"], source) if ours else None
    if head:
        status = _git(["status", "--porcelain", "--untracked-files=no", "--", "."], source)
        return SubmittingTool(
            version=__version__, commit=head.strip(), dirty=None if status is None else bool(status.strip())
        )
    try:
        direct = metadata.distribution("anebench").read_text("direct_url.json")
        commit = json.loads(direct or "{}").get("vcs_info", {}).get("commit_id")
    except (metadata.PackageNotFoundError, ValueError, AttributeError):
        commit = None
    return SubmittingTool(version=__version__, commit=commit, dirty=False if commit else None)


def submit_into(
    result: Path,
    repo: Path,
    drop_host_ids: bool = False,
    log: Path | None = None,
    tool: SubmittingTool | None = None,
) -> Path:
    """Validate RESULT (as `ingest` does), wrap it with its environment and log, and write it as
    ``REPO/submissions/<chip>/<run-id>.json``; never replaces a file, refuses a record already submitted."""
    repo = Path(repo)
    if not repo.is_dir():
        raise UserError(f"{setting('into')} {repo}: no such directory; `anebench leaderboard init {repo}` "
                        "makes one")
    records = load_result_file(Path(result), strict=True)
    if not records:
        raise UserError(f"{result}: the results document holds no records; nothing to submit")
    log_text = None
    if log is not None:
        log_text = read_input_bytes(Path(log), setting("log"), 4_000_000).decode("utf-8", "replace")
    if drop_host_ids:
        original = records[0]
        records = [drop_host_identifiers(r) for r in records]
        log_text = scrub_text(log_text, original) if log_text is not None else None
    refused = duplicate_record(repo, records)
    if refused:
        raise UserError(refused)
    note = "" if log_text is not None else "no log given (submit --log FILE keeps the run's console output)"
    sub = envelope(records, tool or tool_state(), log_text, host_ids=not drop_host_ids, log_note=note)
    target = repo / relative_path(sub)
    try:
        atomic_write_bytes(target, submission_json(sub).encode(), "submission", exclusive=True)
    except FileExistsError:
        raise UserError(f"{target}: already exists; a submission is never replaced") from None
    return target


__all__ = ["submit_into", "tool_state"]
