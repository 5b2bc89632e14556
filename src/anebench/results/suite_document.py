"""A results document holds each suite result once, as the store does (``suite_results``).

The file form (``anebench.results/3``): ``suite_results`` lists each suite's analysis once (a sweep's fit
and knee, a roofline's ridge, a concurrency verdict: ``model.suites.ANALYSIS_FIELDS``) under the same
content id the store uses, and each point's section keeps only what identifies the point plus that id.
Loading joins them again, so every record is whole in memory and keeps the content id it had.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import DOCUMENT_SCHEMA
from ..model.suites import ANALYSIS_FIELDS
from .suite_results import REFERENCE, join, split

SUITE_RESULTS = "suite_results"
ENTRY_KEYS = ("id", "kind", "analysis")


def compact(results: list[Any]) -> dict[str, Any]:
    """The document of ``results`` (records' JSON, each whole): each analysis moved to one suite result."""
    suites: dict[str, dict[str, Any]] = {}
    points = []
    for item in results:
        if not isinstance(item, dict):
            points.append(item)  # not a record: left for the loader to name
            continue
        point, found = split(item)
        points.append(point)
        for key, kind, text in found:
            suites.setdefault(key, {"id": key, "kind": kind, "analysis": json.loads(text)})
    return {"schema": DOCUMENT_SCHEMA, SUITE_RESULTS: list(suites.values()), "results": points}


def _analyses(raw: object, where: str) -> tuple[dict[str, tuple[str, dict[str, Any]]], list[str]]:
    """{id: (kind, analysis)} of a document's suite results, and a line for each that is malformed."""
    if not isinstance(raw, list):
        return {}, [f"{where}: {SUITE_RESULTS}: must be a list of suite results"]
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    problems = []
    for index, entry in enumerate(raw, 1):
        label = f"{where}: {SUITE_RESULTS} {index}"
        if not isinstance(entry, dict) or set(entry) != set(ENTRY_KEYS) or not isinstance(entry["id"], str):
            problems.append(f"{label}: must be an object of exactly {', '.join(ENTRY_KEYS)}")
            continue
        kind, analysis = entry["kind"], entry["analysis"]
        if kind not in ANALYSIS_FIELDS:
            problems.append(f"{label}: kind: must be one of {', '.join(ANALYSIS_FIELDS)}")
        elif not isinstance(analysis, dict):
            problems.append(f"{label}: analysis: must be an object")
        elif unknown := sorted(set(analysis) - set(ANALYSIS_FIELDS[kind])):
            problems.append(f"{label}: analysis: field(s) no {kind} analysis has: {', '.join(unknown)}")
        else:
            found[entry["id"]] = (kind, analysis)
    return found, problems


def expand(document: dict[str, Any], where: str) -> tuple[Any, list[str]]:
    """(the document's results with each point's suite result joined in, a line for each reference that
    cannot be joined). Results that are not a list come back as they are, for the loader to name."""
    results = document.get("results")
    analyses, problems = _analyses(document.get(SUITE_RESULTS, []), where)
    if not isinstance(results, list):
        return results, problems
    by_id = {key: analysis for key, (_, analysis) in analyses.items()}
    whole = []
    for index, item in enumerate(results, 1):
        wrong = _reference_problems(item, analyses) if isinstance(item, dict) else []
        problems += [f"{where}: record {index}: {line}" for line in wrong]
        whole.append(join(item, by_id) if isinstance(item, dict) and not wrong else item)
    return whole, problems


def _reference_problems(item: dict[str, Any], analyses: dict[str, tuple[str, dict[str, Any]]]) -> list[str]:
    problems = []
    for kind in ANALYSIS_FIELDS:
        section = item.get(kind)
        if not isinstance(section, dict) or REFERENCE not in section:
            continue
        key = section[REFERENCE]
        held = analyses.get(key) if isinstance(key, str) else None
        if held is None:
            problems.append(f"{kind}.{REFERENCE}: {str(key)[:16]} is not among the document's "
                            f"{SUITE_RESULTS}")
        elif held[0] != kind:
            problems.append(f"{kind}.{REFERENCE}: {key[:16]} is a {held[0]} result, not a {kind} one")
    return problems
