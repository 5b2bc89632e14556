"""`anebench doctor`: the self-check of every macOS path, printed and written to one diagnostic file."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from .. import __version__
from ..model import utc_now
from ..orchestration.doctor import diagnose
from ..report.escape import clean_text
from ..report.submission import DOCTOR_HEADER, DOCTOR_HOST_IDS, drop_host_identifiers_from_text
from ..system.host import SYSTEM_HOST
from ..util.outputs import atomic_write_text, check_target
from .common import say
from .console import result_line

DEFAULT_OUT = Path("anebench-doctor.txt")


def diagnostic_text(lines: list[str], drop_host_ids: bool) -> str:
    info = SYSTEM_HOST.info()  # module-level: tests state the host's facts here
    chip = info.chip or info.cpu_model or "unknown chip"
    host = [f"host: {chip}, {info.os} {info.os_version}, {info.arch}"]
    if not drop_host_ids:
        host.append(
            f"{DOCTOR_HOST_IDS} fingerprint {info.fingerprint or '-'}, model {info.machine_model or '-'}"
        )
    text = "\n".join([f"{DOCTOR_HEADER} {__version__}, {utc_now().isoformat(timespec='seconds')}", *host,
                      "", *lines, ""])
    return drop_host_identifiers_from_text(text) if drop_host_ids else text


@click.command()
@click.option("--out", "-o", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help=f"The diagnostic file [default: {DEFAULT_OUT}].")
@click.option("--drop-host-ids", is_flag=True,
              help="Leave out the host fingerprint and machine model; remove host and login names and paths.")
@click.option("--force", is_flag=True, help="Replace a read-only diagnostic file.")
def doctor(out: Path | None, drop_host_ids: bool, force: bool) -> None:
    """Check every macOS path in about a minute on a small head: versions, chip, Rosetta, MLComputePlan per
    unit, the ANE engine's duration against wall clock, the IOReport and PMP channels, Core AI. Each line is
    "ok", "FAIL" (what is wrong) or "skip"; they go to one file that `anebench submit --doctor` attaches.
    Exits 1 when a check fails; off a Mac it lists what it would check, writes nothing and exits 0."""
    target = out or DEFAULT_OUT
    diagnosis = diagnose(SYSTEM_HOST, progress=lambda text: say(f"doctor: {text}"))
    for line in diagnosis.lines():
        result_line(line)  # wrapped to the width, as every command's output
    if not diagnosis.on_mac:
        return
    check_target(target, "--out", force)
    atomic_write_text(target, diagnostic_text(diagnosis.lines(), drop_host_ids), "diagnostic file", force)
    failed = len(diagnosis.failed)
    say(f"diagnostic file: {clean_text(str(target))}; {len(diagnosis.checks) - failed} ok or skipped, "
        f"{failed} failed; attach it with `anebench submit RESULT --doctor {clean_text(str(target))}`",
        quiet_too=True)
    if failed:
        sys.exit(1)


def register(app: click.Group) -> None:
    app.add_command(doctor)
