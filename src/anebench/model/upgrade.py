"""Upgraders for older record schemas (pyperf keeps such upgraders): files and stores of /1 still load.

``anebench.result/1`` kept each suite's analysis, the published sources' facts, energy and concurrency
in one untyped ``extras`` dict. /2 gives each its typed section; the upgrader moves every key it knows
and drops keys that no version of anebench ever read. The upgraded record gets a new content id.
"""

from __future__ import annotations

from typing import Any

from .concurrency import THREADS_OF_ONE_PROCESS

V1 = "anebench.result/1"
V2 = "anebench.result/2"
SUITE_RENAMES = {"concurrent": "concurrency"}
SOURCE_KEYS = {"chip_config": "chip_config", "gbps_derived": "gbps_derived",
               "weight_bytes_unknown": "weight_bytes_unknown", "source_flags": "flags",
               "size_convention": "size_convention", "anemll-bench": "tool_figures"}
ROOFLINE_DROPPED = {"peak_tflop_per_s"}  # derivable from peak_flop_per_s


def upgrade_record(data: dict[str, Any]) -> dict[str, Any]:
    """The /2 form of a /1 record's JSON (other versions pass through for validation to judge)."""
    if data.get("schema") != V1:
        return data
    upgraded = {k: v for k, v in data.items() if k not in ("extras", "id")}
    upgraded["schema"] = V2
    suite = data.get("suite", "run")
    if not isinstance(suite, str):  # a list or an object would not even be a dict key
        raise ValueError(f"suite: expected a string in an anebench.result/1 record, not "
                         f"{type(suite).__name__}")
    upgraded["suite"] = SUITE_RENAMES.get(suite, suite)
    extras = data.get("extras") or {}
    if not isinstance(extras, dict):
        raise ValueError("extras: expected an object in an anebench.result/1 record")
    for key, section in (("sweep", _sweep), ("roofline", _roofline), ("compute", _same),
                         ("latency", _latency), ("energy", _same), ("concurrency", _concurrency)):
        if key in extras:
            upgraded[key] = section(extras[key])
    source = {new: extras[old] for old, new in SOURCE_KEYS.items() if old in extras}
    if source:
        upgraded["source"] = source
    return upgraded


def _same(value: Any) -> Any:
    return value


def _sweep(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    point = {k: value[k] for k in ("point", "points", "in_fit", "cache_bytes", "knee_bytes", "knee_rule",
                                   "fit_error", "cache_peak_gbps", "cache_peak_bytes", "notes") if k in value}
    fit = value.get("fit")
    if isinstance(fit, dict):
        bandwidth = fit.get("bandwidth_bps")
        point["fit"] = {
            "overhead_s": fit.get("overhead_s"), "overhead_se_s": fit.get("overhead_se_s"),
            "overhead_resolved": value.get("overhead_resolved", False),
            "bandwidth_gbps": bandwidth / 1e9 if isinstance(bandwidth, (int, float)) else bandwidth,
            "r_squared": fit.get("r_squared"), "median_abs_rel_residual": fit.get("median_abs_rel_residual"),
            "max_abs_rel_residual": fit.get("max_abs_rel_residual"), "points": fit.get("points"),
            "method": fit.get("method", ""),
        }
    return point


def _roofline(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    return {k: v for k, v in value.items() if k not in ROOFLINE_DROPPED}


def _latency(value: Any) -> Any:
    return value


PUBLISHED_PHASES = {"dual-solo": "solo", "dual-parallel": "together", "dual-combined": "combined"}
CONCURRENCY_KEPT = (
    "copies",
    "phase",
    "base_fingerprint",
    "calls",
    "whole_calls_in_window",
    "calls_in_window",
    "window_s",
    "solo_gbps",
    "together_gbps",
    "combined_gbps",
    "scaling",
    "verdict",
    "rule",
    "copies_note",
)


def _concurrency(value: Any) -> Any:
    """/1 concurrency: the suite's copies (mode threads or "processes (spawn)"), or a published dual row
    (mode dual-solo/-parallel/-combined, 1-based instance: anemll-bench ran its copies as threads)."""
    if not isinstance(value, dict):
        return value
    mode = value.get("mode")
    if mode in PUBLISHED_PHASES:
        instance = value.get("instance")
        return {
            "mode": "threads",
            "copy": instance - 1 if isinstance(instance, int) else None,
            "copies": 2,
            "phase": PUBLISHED_PHASES[mode],
            "call_releases_gil": False,
            "flags": [THREADS_OF_ONE_PROCESS],
        }
    section = {k: value[k] for k in CONCURRENCY_KEPT if k in value}
    section["mode"] = "processes" if isinstance(mode, str) and mode.startswith("processes") else mode
    if "copy" in value:
        section["copy"] = value["copy"]
    if isinstance(value.get("combined_definition"), str):
        section["definitions"] = [value["combined_definition"]]
    return section
