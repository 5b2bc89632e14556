"""The checks a record's own figures decide (pyperf's ``format_checks``): stability, drift, cache
residency, the warmup cap and the wall-clock/device-time gap.

One function for both uses: the record builder stores what the checks find when it measures, and the
report runs them again on stored records, so an old record is judged by today's thresholds (a record
made before a check existed, or with a looser limit, gets today's warning in the report).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import RecordWarning, ResultRecord, Summary, median, summary_fields
from .stats import cache_warning, stability_warnings

DEVICE_GAP_LIMIT = 0.10  # wall clock more than this fraction above device time: host-side overhead
# The kinds these checks decide: a stored warning of one of them is replaced by the checks' verdict.
CHECK_KINDS = frozenset({"few-samples", "unstable", "drift", "cache-resident", "warmup-cap", "device-gap"})


def checks(samples_s: Sequence[float], *, weight_bytes: int, cache_bytes: int | None,
           warmup_steady: bool | None, warmup_runs: int | None,
           device_samples_s: Sequence[float] | None = None) -> list[RecordWarning]:
    """What a measurement's own figures warn about, with today's thresholds.

    ``cache_bytes`` is the largest cache in front of the device's memory (None: unknown, no check);
    ``warmup_steady`` None means the warmup's outcome is not stated (no check)."""
    samples = list(samples_s)
    if not samples:
        return []
    found = stability_warnings(samples, Summary(**summary_fields(samples)))
    cache = cache_warning(weight_bytes, cache_bytes)
    if cache is not None:
        found.append(cache)
    if warmup_steady is False:
        found.append(RecordWarning(
            kind="warmup-cap", text=f"warmup hit its cap after {warmup_runs} calls without becoming steady"))
    if device_samples_s:
        latency_s, device_latency_s = median(samples), median(list(device_samples_s))
        gap = (latency_s - device_latency_s) / latency_s
        if gap > DEVICE_GAP_LIMIT:
            found.append(RecordWarning(
                kind="device-gap",
                text=f"wall clock is {gap:.0%} above device time: host-side overhead in each call"))
    return found


def record_checks(record: ResultRecord) -> list[RecordWarning]:
    """The checks run again on a stored measured record (a stated record has no samples: none).

    The cache is the host's last-level cache for a CPU device, the one size a record states; for an
    accelerator the record does not state its cache, so cache residency keeps its stored verdict."""
    if record.provenance != "measured":
        return []
    cache = record.host.llc_bytes if record.engine.device == "cpu" else None
    return checks(record.samples_s, weight_bytes=record.workload.weight_bytes, cache_bytes=cache,
                  warmup_steady=record.method.warmup_steady, warmup_runs=record.method.warmup_runs,
                  device_samples_s=record.device_samples_s)


def rejudged(record: ResultRecord) -> list[RecordWarning]:
    """The record's warnings as today's checks see them: what the checks decide comes from
    :func:`record_checks` (a stored one they no longer find is dropped), every other warning as stored.

    For a stated record, or an accelerator's cache residency (the record states no cache size), the
    stored warning stands."""
    if record.provenance != "measured":
        return list(record.warnings)
    today = record_checks(record)
    decided = set(CHECK_KINDS) - ({"cache-resident"} if record.engine.device != "cpu" else set())
    kept = [w for w in record.warnings if w.kind not in decided]
    return list(dict.fromkeys([*today, *kept]))
