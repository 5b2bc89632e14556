"""Upgraders for older results documents (the record's own schema is upgraded by ``model.upgrade``).

``anebench.results/1`` and ``/2`` held each suite's analysis in every point's record; ``/3`` holds each
suite result once (``results.suite_document``). An older document is brought to the /3 form, then loaded
as any /3 document, so the loader has one path.
"""

from __future__ import annotations

from typing import Any

from ..model import DOCUMENT_SCHEMA, OLD_DOCUMENT_SCHEMAS
from .suite_document import compact

DOCUMENT_SCHEMAS = (DOCUMENT_SCHEMA, *OLD_DOCUMENT_SCHEMAS)


def upgrade_document(data: dict[str, Any]) -> dict[str, Any]:
    """The /3 form of a /1 or /2 document (its other top-level fields kept, for the loader to judge); a
    /3 document as it is."""
    if data.get("schema") not in OLD_DOCUMENT_SCHEMAS:
        return data
    results = data.get("results")
    rest = {key: value for key, value in data.items() if key not in ("schema", "results")}
    if not isinstance(results, list):
        return {**rest, "schema": DOCUMENT_SCHEMA, "results": results}
    return {**rest, **compact(results)}
