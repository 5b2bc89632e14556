"""`anebench submit`: a validated submission file plus a ready Markdown issue body. No network."""

from __future__ import annotations

import getpass
import re
import socket
from pathlib import Path

from ..engines import ENGINE_FACTORIES
from ..errors import UserError, setting
from ..measure.checks import rejudged
from ..measure.uncertainty import CONVENTION, gbps_cell
from ..model import ResultRecord
from ..results.files import document_json, load_result_file
from ..system.chips import lookup_chip
from ..system.host import host_label
from ..util.outputs import atomic_write_text, check_target
from .escape import md_cell

DROPPED = "<dropped>"
# Absolute paths under a home or a private folder, with or without a user name in them.
_PATH = re.compile(
    r"(?<![\w.])(?:[A-Za-z]:)?(?:/|\\)(?:Users|home|root|private|var|tmp|mnt|media|Volumes|opt|srv|data|work)"
    r"(?:[/\\][^\s\"'`|,;:]*)?"
)


def host_identifying_strings() -> set[str]:
    """This machine's host names, its login name and home folder's name."""
    found = {socket.gethostname(), socket.gethostname().split(".")[0], host_label(), Path.home().name}
    try:
        found.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    return found


def _longest_first(found: set[str]) -> list[str]:
    return sorted((s for s in found if s and len(s) >= 2 and s not in COMMON_WORDS), key=len, reverse=True)


def drop_host_identifiers_from_text(text: str, also: tuple[str, ...] = ()) -> str:
    """A text (e.g. `anebench doctor`'s file) without host and login names, absolute paths, or ``also``."""
    scrubbed = _scrub(text, _longest_first(host_identifying_strings() | set(also)))
    assert isinstance(scrubbed, str)
    return scrubbed


def _identifying_strings(record: ResultRecord) -> list[str]:
    """Strings that name this machine or its owner: host and login names, home folder, and a local
    checkpoint's folder and file names (a model found in the Hugging Face cache keeps its public name)."""
    found = host_identifying_strings()
    origin = record.workload.origin
    model, file = origin.get("model"), origin.get("file")
    from_hub = bool(origin.get("revision"))
    if isinstance(model, str) and model and not from_hub:
        found.add(model)
    if isinstance(file, str) and file:
        found.update(part for part in Path(file).parts[:-1] if part not in ("/", "\\"))
    return _longest_first(found)


COMMON_WORDS = {
    "root",
    "user",
    "home",
    "model",
    "models",
    "anebench",
    "localhost",
    "snapshots",
    "hub",
    "cache",
    "huggingface",
    "Users",
    "work",
    "data",
    "tmp",
    "var",
    "private",
    "lm_head",
    "weight",
    "fp16",
    "fp32",
    "bf16",
    *ENGINE_FACTORIES,
    "cpu",
    "gpu",
    "ane",
    "run",
}


# Device and network identifiers, wherever they appear in a string: a GPU's UUID (NVML: GPU-..., MIG-...)
# or any UUID, a PCI bus id, a MAC address, a file server (\\server\share, //server/share, smb://, nfs
# host:/export) and a host in a private DNS zone.
_DEVICE_IDS = re.compile(
    r"(?i)(?:\b(?:GPU|MIG)-)?\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"
    r"|\b[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]\b"
    r"|\b(?:[0-9a-f]{2}:){5}[0-9a-f]{2}\b"
    r"|(?:\b(?:smb|cifs|nfs|afp|ftp|sftp|ssh|webdav)://|\\\\|(?<![\w:/])//)[\w.-]+(?:[/\\][^\s\"'`|,;]*)?"
    r"|\b[\w-]+(?:\.[\w-]+)+:/[^\s\"'`|,;]*"
    r"|\b[\w-]+(?:\.[\w-]+)*\.(?:local|lan|corp|internal|intranet|home\.arpa|localdomain)\b"
)
# Keys whose value identifies one device wherever they sit in a record (engine details, GPU identity).
_IDENTIFYING_KEYS = {"uuid", "gpu_uuid", "pci_bus_id", "serial", "serial_number", "board_id", "hostname",
                     "host_name", "user", "username", "mac_address", "board_serial"}


def _scrub(value: object, secrets: list[str]) -> object:
    """Every string field, not only known keys: paths, the machine's and owner's names (any case) and
    device identifiers become ``<dropped>``; values of identifying keys are dropped whole."""
    if isinstance(value, str):
        text = _PATH.sub(DROPPED, value)
        text = _DEVICE_IDS.sub(DROPPED, text)
        for secret in secrets:  # whole words only: a host called "mac" leaves "macOS" alone
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", DROPPED, text,
                          flags=re.IGNORECASE)
        return text
    if isinstance(value, dict):
        return {k: DROPPED if isinstance(k, str) and k.lower() in _IDENTIFYING_KEYS and isinstance(v, str)
                else _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    return value


def drop_host_identifiers(record: ResultRecord) -> ResultRecord:
    """Keep what a comparison needs (chip, OS, cores, memory, the workload's fingerprint); remove what
    identifies the machine or its owner everywhere in the record: the host fingerprint and machine
    model, host and login names, absolute paths and a local checkpoint's folder names."""
    body = record.model_dump(mode="json", by_alias=True, exclude={"id"})
    body["host"].update(fingerprint="", machine_model=None)
    for key in ("file",):
        body["workload"]["origin"].pop(key, None)
    scrubbed = _scrub(body, _identifying_strings(record))
    assert isinstance(scrubbed, dict)  # a dict scrubs to a dict
    # a warning's kind is a fixed word, never an identifier (a host named "drift" must not drop it)
    scrubbed["warnings"] = [{**w, "kind": kept.kind}
                            for w, kept in zip(scrubbed["warnings"], record.warnings, strict=True)]
    return ResultRecord.model_validate(scrubbed).with_id()


def issue_body(records: list[ResultRecord], submission_name: str, anonymized: bool,
               doctor_name: str | None = None) -> str:
    lines = [
        "## anebench result submission",
        "",
        f"Attach `{md_cell(submission_name)}` (the validated results document) to this issue.",
        "",
    ]
    if doctor_name:
        lines += [f"Attach `{md_cell(doctor_name)}` too: `anebench doctor`'s check of this Mac's paths.", ""]
    lines += [
        "| chip | catalog entry | engine:device | workload | GB/s | latency ms | runs | warmup | timing |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        name = r.chip  # the GPU for a CUDA run, as the report files it
        chip = lookup_chip(name)
        latency = r.latency_s()
        lines.append(
            "| "
            + " | ".join(
                md_cell(v)
                for v in (
                    name or r.host.cpu_model or "-",
                    chip.key if chip else "not in catalog",
                    f"{r.engine.name}:{r.engine.device}",
                    r.workload.name,
                    gbps_cell(r),
                    f"{latency * 1e3:.3f} ({r.method.statistic})" if latency else "-",
                    r.method.runs if r.method.runs is not None else "not stated",
                    r.method.warmup_policy or "not stated",
                    r.method.timing,
                )
            )
            + " |"
        )
    lines += [
        "",
        f"{CONVENTION}.",
        "",
        f"- tool: {md_cell(records[0].tool.name)} {md_cell(records[0].tool.version)}",
        (
            f"- host: {md_cell(records[0].host.os)} {md_cell(records[0].host.os_version)}, "
            f"{md_cell(records[0].host.arch)}"
        ),
        f"- host identifiers: {'dropped' if anonymized else 'included (fingerprint, machine model)'}",
        f"- record ids: {', '.join(md_cell((r.id or r.content_id())[:12]) for r in records)}",
        "",
    ]
    energies = [r for r in records if r.energy is not None]
    if energies:
        from ..system.energy_figures import energy_line

        lines += ["Energy (an unavailable figure says why; it is never 0 W):", ""] + [
            f"- {md_cell(r.workload.name)} on {md_cell(f'{r.engine.name}:{r.engine.device}')}: "
            f"{md_cell(energy_line(r.energy))}" for r in energies if r.energy is not None] + [""]
    # today's checks of each record's figures (measure.checks), and what else its measurement recorded
    warnings = [f"{r.workload.name}: {w.text}" for r in records for w in rejudged(r)]
    if warnings:
        lines += (
            ["Warnings (today's checks of the recorded figures, and what the measurement recorded):", ""]
            + [f"- {md_cell(w)}" for w in warnings] + [""]
        )
    return "\n".join(lines)


DOCTOR_HEADER = "# anebench doctor"
DOCTOR_HOST_IDS = "host identifiers:"


def read_doctor_file(path: Path) -> str:
    """`anebench doctor`'s diagnostic file, or a one-line refusal naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UserError(f"{setting('doctor')} {path}: cannot be read ({exc.__class__.__name__}: "
                        f"{exc})") from exc
    if not text.startswith(DOCTOR_HEADER):
        raise UserError(f"{setting('doctor')} {path}: not a file written by `anebench doctor` (it starts "
                        f"with {DOCTOR_HEADER!r})")
    return text


def write_submission(result: Path, out_dir: Path, anonymize: bool, force: bool = False,
                     doctor: Path | None = None) -> tuple[Path, Path]:
    doctor_text = read_doctor_file(doctor) if doctor is not None else None
    records = load_result_file(result, strict=True)
    if not records:
        raise UserError(f"{result}: the results document holds no records; nothing to submit")
    if anonymize:
        records = [drop_host_identifiers(r) for r in records]
        # the input's name may hold the host name
        stem = f"anebench-submission-{(records[0].id or records[0].content_id())[:12]}"
    else:
        stem = result.name.removesuffix(".json")
    submission = out_dir / f"{stem}.submission.json"
    body = out_dir / f"{stem}.issue.md"
    attached = out_dir / f"{stem}.doctor.txt" if doctor_text is not None else None
    protected = [(result, "the RESULT file being submitted")]
    if doctor is not None:
        protected.append((doctor, "the --doctor file"))
    for target in (submission, body, attached):  # all refused, or none written
        if target is not None:
            check_target(target, "submission file", force, protected)
    atomic_write_text(submission, document_json(records), "submission file", force, protected)
    if attached is not None and doctor_text is not None:
        text = doctor_text
        if anonymize:  # the fingerprint and machine model line goes, then names and paths
            text = "\n".join(line for line in text.split("\n") if not line.startswith(DOCTOR_HOST_IDS))
            text = drop_host_identifiers_from_text(text)
        atomic_write_text(attached, text, "doctor file", force, protected)
    text = issue_body(records, submission.name, anonymize, attached.name if attached else None)
    atomic_write_text(body, text, "issue body", force, protected)
    return submission, body


def scrub_text(text: str, record: ResultRecord) -> str:
    """Free text from the same run (its log) with the same identifiers dropped as from its records."""
    return str(_scrub(text, _identifying_strings(record)))
