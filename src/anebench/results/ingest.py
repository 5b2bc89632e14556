"""Ingest: how a file becomes records (the format registry) and how they enter the store (one
transaction per file: a bad file stores nothing and does not stop the others)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..errors import SettingError, UserError
from ..model import ResultRecord
from .files import load_result_file
from .importers import IMPORTERS
from .store import IngestReport, Store, open_store

# How a file becomes records, by format name. Each loader raises UserError (InvalidFile for a list of
# problems) and returns only valid records; other formats register themselves here.
Loader = Callable[[Path], list[ResultRecord]]
LOADERS: dict[str, Loader] = {"anebench": partial(load_result_file, strict=True), **IMPORTERS}
DEFAULT_FORMAT = "anebench"


@dataclass
class IngestOutcome:
    db: Path
    records_in_store: int
    reports: list[IngestReport] = field(default_factory=list)
    failures: list[UserError] = field(default_factory=list)


def loader_for(source_format: str) -> Loader:
    if source_format not in LOADERS:
        raise SettingError(
            "format", f"{source_format!r} is not a known format; valid: {', '.join(sorted(LOADERS))}"
        )
    return LOADERS[source_format]


def ingest_files(
    store: Store, paths: list[Path], loader: Loader
) -> tuple[list[IngestReport], list[UserError]]:
    """Each file in its own transaction: a bad file stores nothing and does not stop the others."""
    reports, failures = [], []
    for path in paths:
        try:
            reports.append(store.ingest(loader(path), str(path)))
        except UserError as exc:
            failures.append(exc)
    return reports, failures


def ingest(
    paths: list[Path], published: bool = False, source_format: str = DEFAULT_FORMAT, db: Path | None = None
) -> IngestOutcome:
    """Store the files' records (and anemll-bench's published figures when ``published``)."""
    if not paths and not published:
        raise UserError("ingest: give result files and/or the published figures")
    loader = loader_for(source_format)
    with open_store(db) as store:
        reports: list[IngestReport] = []
        if published:
            from .published import PUBLISHED_CSV, published_records

            reports.append(store.ingest(published_records(), f"anebench:{PUBLISHED_CSV}"))
        file_reports, failures = ingest_files(store, paths, loader)
        return IngestOutcome(store.path, store.count(), reports + file_reports, failures)


__all__ = ["DEFAULT_FORMAT", "LOADERS", "IngestOutcome", "Loader", "ingest", "ingest_files", "loader_for"]
