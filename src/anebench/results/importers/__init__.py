"""Importers: other tools' result files turned into anebench records (provenance "imported").

Each importer reads one file and returns all of its records, or raises a UserError (``InvalidFile``
with one line per problem) and returns none: a bad file contributes nothing. ``anebench ingest --from
NAME`` uses them by the names below.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ...model import ResultRecord

Importer = Callable[[Path], list[ResultRecord]]


def _anemll_bench(path: Path) -> list[ResultRecord]:
    from .anemll import import_file  # imported on use: the CLI starts without loading every importer

    return import_file(path)


IMPORTERS: dict[str, Importer] = {"anemll-bench": _anemll_bench}
