"""Upgraders for older record schemas (pyperf keeps such upgraders): files and stores of /1 still load.

``anebench.result/1`` kept each suite's analysis, the published sources' facts, energy and concurrency
in one untyped ``extras`` dict. /2 gives each its typed section; the upgrader moves every key it knows
and drops keys that no version of anebench ever read. The upgraded record gets a new content id.
"""

from __future__ import annotations

from typing import Any

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
    upgraded["suite"] = SUITE_RENAMES.get(data.get("suite", "run"), data.get("suite", "run"))
    extras = data.get("extras") or {}
    if not isinstance(extras, dict):
        raise ValueError("extras: expected an object in an anebench.result/1 record")
    for key, section in (("sweep", _sweep), ("roofline", _roofline), ("compute", _same),
                         ("latency", _latency), ("energy", _same), ("concurrency", _same)):
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
