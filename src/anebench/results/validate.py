"""Validation before anything is stored: the schema (types, ranges) plus plausibility across fields.

Every problem is one line naming the file, the record and the field, so a contributor can fix a whole
file in one pass instead of one error per attempt.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from pydantic import ValidationError

from ..errors import UserError
from ..measure.clock import MIN_TICKS_PER_CALL
from ..model import ResultRecord, gbps
from ..model.statistics import median
from ..system.bounds import stored_record_bound
from ..system.chips import INVISIBLE
from ..util.validation import error_lines
from ..workloads import DTYPE_BYTES, QUANT_BITS, quantized_bytes, synthetic_fingerprint_matches

# A stated GB/s and a stated latency must agree with the stated bytes within this fraction; the
# published figures are rounded to 2-3 digits, which is well inside it.
CONSISTENCY_TOLERANCE = 0.03
# A record that states its timer's resolution is held to what the timing loop itself enforces (a call
# of at least MIN_TICKS_PER_CALL ticks), so every record the tool writes can be stored (`latency`
# measures sub-microsecond dispatch); one that states no resolution (published, imported) to 1 us.
MIN_LATENCY_S = 1e-6
MAX_MULTIPLIER = 64 * 4096  # --repeat (<= 64) x --batch (<= 4096): reads of the weights per call
QUANT_TOLERANCE = 0.02  # a quantised bundle adds lookup tables, scales and blob headers to the indices
PUBLISHED_SOURCES = ("anebench:",)  # source labels of the packaged data; nothing else may be "published"


def gbps_bound(record: ResultRecord) -> tuple[float, str]:
    """(the highest GB/s this record can honestly show, why): ``system.bounds.stored_record_bound``,
    from the catalog and the weight size only (never the record's own cache size or warnings)."""
    bound = stored_record_bound(record.chip, record.workload.weight_bytes, record.engine.device)
    return bound.gbps, bound.source


def weight_bytes_problem(record: ResultRecord) -> str | None:
    """``weight_bytes`` must be what the shape, dtype and quantisation store, read k times per call
    (batched predicts and repeated weight sets count every read), k a whole number."""
    if record.facts.weight_bytes_unknown:
        return None
    w = record.workload
    if record.decode is not None:  # a decode step streams its accounting, not a whole head k times
        counted = sum(row.streamed_bytes for row in record.decode.accounting)
        if w.weight_bytes == record.decode.stream_bytes == counted:
            return None
        return (f"workload.weight_bytes: {w.weight_bytes:,} is not the decode stream's {counted:,} bytes "
                "(the sum of its accounting)")
    elements = w.shape[0] * w.shape[1]
    quant = w.quant if w.quant in QUANT_BITS else None
    if quant is None and record.engine.run_dtype in QUANT_BITS:
        quant = record.engine.run_dtype
    limit = MAX_MULTIPLIER * max(w.batch, 1)
    if quant is not None:
        expected = quantized_bytes(w.shape[0], w.shape[1], quant)
        k = round(w.weight_bytes / expected)
        if 1 <= k <= limit and abs(w.weight_bytes / (k * expected) - 1) <= QUANT_TOLERANCE:
            return None
        return (f"workload.weight_bytes: {w.weight_bytes:,} does not fit shape {w.shape} stored as {quant} "
                f"(about {expected:,.0f} bytes per read)")
    sizes = sorted({DTYPE_BYTES[d] for d in (w.dtype, record.engine.run_dtype, "fp16") if d in DTYPE_BYTES})
    for size in sizes:
        per_read = elements * size
        if w.weight_bytes % per_read == 0 and 1 <= w.weight_bytes // per_read <= limit:
            return None
    shown = " or ".join(f"{elements * size:,}" for size in sizes)
    return (f"workload.weight_bytes: {w.weight_bytes:,} is not a whole number of reads of shape {w.shape} "
            f"in {w.dtype} ({shown} bytes per read)")


def summary_problems(record: ResultRecord, label: str = "summary") -> list[str]:
    """Order statistics must be in order: min <= p5 <= median <= p95 <= max, mean within [min, max]."""
    s = record.summary if label == "summary" else record.device_summary
    if s is None:
        return []
    problems = []
    if s.min is not None and s.max is not None and s.min > s.max:
        problems.append(f"{label}: min is above max")
    for name in ("median", "mean", "p5", "p95"):
        value = getattr(s, name)
        if value is None:
            continue
        if s.min is not None and value < s.min * (1 - 1e-9):
            problems.append(f"{label}: {name} {value:g} is below min {s.min:g}")
        if s.max is not None and value > s.max * (1 + 1e-9):
            problems.append(f"{label}: {name} {value:g} is above max {s.max:g}")
    if s.p5 is not None and s.p95 is not None and s.p5 > s.p95:
        problems.append(f"{label}: p5 is above p95")
    if s.median is not None and s.p5 is not None and s.p95 is not None and not s.p5 <= s.median <= s.p95:
        problems.append(f"{label}: median lies outside [p5, p95]")
    return problems


def identity_problems(record: ResultRecord) -> list[str]:
    """What names the figure must be what it claims: a synthetic workload's fingerprint is recomputed
    from its description (shape, dtype, batch, tokens, quantisation and a seed), so a small head cannot
    borrow llama_lm_head's fingerprint and pair with its figures; device names carry no invisible
    characters (a zero-width space would make a catalog chip "unknown" and its row a separate one)."""
    problems = []
    w = record.workload
    # a decode step's fingerprint names its model config and depth, not one head's shape: not recomputed here
    if w.source == "synthetic" and record.decode is None and not synthetic_fingerprint_matches(
        w.fingerprint, (w.shape[0], w.shape[1]), w.dtype, w.batch, w.tokens, w.quant
    ):
        problems.append(f"workload.fingerprint: {w.fingerprint[:12]} is not the fingerprint of a synthetic "
                        f"{w.dtype} head of shape {w.shape} (batch {w.batch}, tokens {w.tokens}, quant "
                        f"{w.quant}); it belongs to another workload")
    gpu = record.engine.details.get("gpu")
    for field, value in (("host.chip", record.host.chip),
                         ("engine.details.gpu", gpu if isinstance(gpu, str) else None)):
        found = INVISIBLE.search(value or "")
        if found:
            problems.append(f"{field}: contains an invisible character (U+{ord(found.group(0)):04X})")
    return problems


def physics_problems(record: ResultRecord) -> list[str]:
    """What arithmetic and the hardware forbid: impossible GB/s, bytes that do not fit the shape,
    statistics out of order."""
    problems = []
    bound, why = gbps_bound(record)
    for field, value in (("gbps", record.gbps), ("device_gbps", record.device_gbps)):
        if value is not None and value > bound:
            problems.append(f"{field}: {value:g} GB/s is above what the device can read ({why})")
    implied = None
    latency = record.latency_s()
    if latency and not record.facts.weight_bytes_unknown:
        implied = gbps(record.workload.weight_bytes, latency)
        if record.gbps is None and implied > bound:
            problems.append(f"summary.{record.method.statistic}: implies {implied:.4g} GB/s, above what the "
                            f"device can read ({why})")
    found = weight_bytes_problem(record)
    if found:
        problems.append(found)
    problems += summary_problems(record, "summary") + summary_problems(record, "device_summary")
    return problems


def min_latency(record: ResultRecord) -> tuple[float, str]:
    """The shortest latency the record can honestly state, and why: 20 ticks of its stated timer."""
    resolution = record.method.timer_resolution_s
    if resolution is None:
        return MIN_LATENCY_S, "no timer resolution stated: 1 us is the floor"
    return (MIN_TICKS_PER_CALL * resolution,
            f"{MIN_TICKS_PER_CALL} ticks of its {record.method.timer} timer, {resolution * 1e9:g} ns each")


class InvalidFile(UserError):
    """A file with at least one invalid record: nothing from it is stored. ``problems``: one line each."""

    def __init__(self, path: str | Path, problems: list[str]):
        self.path = str(path)
        self.problems = problems
        super().__init__(f"{path}: {len(problems)} problem(s); nothing from this file was stored")


def plausibility_problems(record: ResultRecord) -> list[str]:
    """Cross-field checks the schema cannot express; an empty list means the record is plausible."""
    problems = []
    if not record.tool.name.strip() or not record.tool.version.strip():
        problems.append("tool: name and version are required provenance")
    if record.provenance in ("published", "imported") and not record.provenance_note.strip():
        problems.append(f"provenance_note: required for {record.provenance} records (name the source)")
    latency = record.latency_s()
    if record.gbps is None and latency is None:
        problems.append(f"gbps / summary.{record.method.statistic}: the record states no figure at all")
    floor, why = min_latency(record)
    if latency is not None and latency < floor:
        problems.append(f"summary.{record.method.statistic}: {latency:g} s is below {floor:g} s ({why})")
    if record.gbps is not None and latency is not None and not record.facts.weight_bytes_unknown:
        implied = gbps(record.workload.weight_bytes, latency)
        if abs(implied - record.gbps) / record.gbps > CONSISTENCY_TOLERANCE:
            problems.append(
                f"gbps: {record.gbps:g} disagrees with weight_bytes / latency = {implied:.4g} GB/s"
            )
    stated = record.summary.median
    if record.provenance != "measured" and record.samples_s and stated is not None:
        truth = median(record.samples_s)  # a stated record is not re-derived, but must not contradict itself
        if abs(stated - truth) > 1e-6 * max(abs(truth), 1e-12):
            problems.append(f"summary.median: {stated:g} s contradicts the record's own samples, whose "
                            f"median is {truth:g} s")
    resolution = record.method.timer_resolution_s
    shortest = min(record.samples_s, default=None)
    if resolution is not None and shortest is not None and shortest < resolution:
        # no clock reads less than one of its own ticks: such a sample was not measured
        problems.append(f"samples_s: {shortest:g} s is shorter than one tick of the record's timer "
                        f"({resolution:g} s)")
    if record.provenance == "measured":
        if not record.samples_s:
            problems.append("samples_s: a measured record must keep its raw samples")
        elif record.method.runs is not None and record.method.runs != len(record.samples_s):
            problems.append(f"method.runs: {record.method.runs} but {len(record.samples_s)} samples")
        if record.method.runs is None:
            problems.append("method.runs: a measured record must state its run count")
    s = record.summary
    problems += physics_problems(record) + identity_problems(record)
    if (s.median is not None and s.ci95_low is not None and s.ci95_high is not None
            and not s.ci95_low <= s.median <= s.ci95_high):
        problems.append("summary: median lies outside its 95% confidence interval")
    created = record.created if record.created.tzinfo else record.created.replace(tzinfo=timezone.utc)
    if created > datetime.now(timezone.utc) + timedelta(days=1):
        problems.append(f"created: {record.created.isoformat()} is in the future")
    if record.id is not None and record.id != record.content_id():
        problems.append("id: does not match the record's content (edited after it was made?)")
    return problems


def validate_raw(data: object, where: str) -> tuple[ResultRecord | None, list[str]]:
    """One raw record (parsed JSON) from a user's file -> (record with id, []) or (None, problems).

    A file may not claim provenance "published": that is reserved for the figures shipped in the
    package (``ingest --published``); such a record is refused, not downgraded, so nobody's edit can
    pass for a published figure.
    """
    try:
        record = ResultRecord.model_validate(data)
    except ValidationError as exc:
        return None, [f"{where}: {line}" for line in error_lines(exc)]
    problems = [f"{where}: {p}" for p in plausibility_problems(record)]
    if record.provenance == "published":
        problems.append(f"{where}: provenance: 'published' is reserved for the figures shipped with anebench "
                        "(ingest --published); a file can be 'measured' or 'imported'")
    if problems:
        return None, problems
    return (record if record.id else record.with_id()), []


def validate_records(records: list[ResultRecord], label: str) -> list[str]:
    problems = []
    for index, record in enumerate(records, 1):
        problems += [f"{label}: record {index}: {p}" for p in plausibility_problems(record)]
    return problems
