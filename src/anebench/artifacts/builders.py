"""The artifacts `anebench build` writes, by engine name: what each is, the options it takes, how it is
built, and the summary rows its manifest gives. The CLI looks a builder up here and names none.

Building works on any OS; running what was built needs a Mac.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UserError, setting
from ..workloads import Workload

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class BuildRequest:
    workload: Workload  # with the tokens per call asked for
    quant: str | None
    lut_mode: str
    repeat: int
    max_split_rows: int


@dataclass(frozen=True)
class Built:
    manifest: dict
    package: Path
    reused: bool


def _splits(splits: list[int]) -> str:
    return f"{len(splits)} x {splits[0]}" + ("" if len(set(splits)) == 1 else f" .. {splits[-1]}")


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [""])[0][:300]


class Builder(ABC):
    engine: str  # the -e name that loads what this writes
    what: str  # what it writes, for --engine's help
    file_kind: str  # the package's suffix, for --out's help
    kind: str  # the JSON key of the written package ("bundle", "asset")
    title: str  # the summary table's title

    def check(self, request: BuildRequest) -> None:  # noqa: B027 - most builders take every option
        """Refuse an option this artifact cannot hold, before anything is hashed or built."""

    @abstractmethod
    def ready(self, request: BuildRequest) -> str:
        """Refuse a missing install or an option out of range before anything is drawn; the label of
        what will be built."""

    @abstractmethod
    def build(self, request: BuildRequest, cache_dir: Path | None, progress: Progress) -> Built:
        """Built into the cache (or reused from it); a failed build leaves the cache clean and says why."""

    @abstractmethod
    def summary_rows(self, manifest: dict, package: Path, reused: bool) -> list[tuple[str, str]]: ...


class BundleBuilder(Builder):
    engine = "coreml"
    what = "an .mlpackage for Core ML"
    file_kind = ".mlpackage"
    kind = "bundle"
    title = "anebench build"

    def ready(self, request: BuildRequest) -> str:
        from ._coremltools import coremltools

        spec = self._spec(request)
        coremltools()  # a missing install is refused before the progress bar is drawn
        tokens = request.workload.tokens
        return f"{spec.workload.name} ({spec.quant}" + (f", {tokens} tokens)" if tokens > 1 else ")")

    def _spec(self, request: BuildRequest) -> Any:
        from .coreml import BuildSpec

        return BuildSpec.for_workload(request.workload, request.quant, lut_mode=request.lut_mode,
                                      repeat=request.repeat, max_split_rows=request.max_split_rows)

    def build(self, request: BuildRequest, cache_dir: Path | None, progress: Progress) -> Built:
        from .cache import build_or_reuse

        spec = self._spec(request)
        try:
            artifact = build_or_reuse(spec, cache_dir, progress)
        except (ValueError, RuntimeError, ImportError) as exc:  # from coremltools: the cache is left clean
            raise UserError(f"build {spec.workload.name} ({spec.quant}): coremltools failed: "
                            f"{type(exc).__name__}: {_first_line(exc)}") from None
        return Built(artifact.manifest, artifact.package, artifact.reused)

    def summary_rows(self, manifest: dict, package: Path, reused: bool) -> list[tuple[str, str]]:
        lut = f" ({manifest['lut_mode']}, group {manifest['group_size']})" if manifest.get("lut_mode") else ""
        weight_bytes = manifest["weight_bytes"]
        rows = [
            ("workload", manifest["workload"]),
            ("quant", manifest["quant"] + lut),
            ("splits", _splits(manifest["splits"])),
            ("weight sets", str(manifest["repeat"])),
            ("tokens per predict", str(manifest.get("tokens", 1))),
            ("input", ", ".join(f"{t['name']} {t['shape']} {t['dtype']}" for t in manifest["inputs"])),
            ("outputs", f"{manifest['outputs'][0]['name']} .. {manifest['outputs'][-1]['name']}"),
            ("weight bytes", f"{weight_bytes:,} ({weight_bytes / 1e6:.2f} MB, from the program)"),
            ("weight.bin",
             f"{manifest['weight_file_bytes']:,} bytes, sha256 {manifest['weight_sha256'][:16]}…"),
            ("workload fingerprint", manifest["workload_fingerprint"]),
            ("coremltools", manifest["coremltools"]),
            ("bundle", str(package)),
            ("from cache", "yes" if reused else f"no (built in {manifest['build_seconds']:.1f} s)"),
        ]
        return rows + [("note", note) for note in manifest.get("notes", [])]


class AssetBuilder(Builder):
    """The Core AI asset: what coreai-core's own summary says it stores, beside what was encoded."""

    engine = "coreai"
    what = "an .aimodel for Core AI (macOS 27+ to run) with the same weights, fp16 or int8"
    file_kind = ".aimodel"
    kind = "asset"
    title = "anebench build --engine coreai"

    def check(self, request: BuildRequest) -> None:
        if request.repeat != 1:
            raise UserError(f"{setting('repeat')} {request.repeat}: weight sets per predict are a Core ML "
                            "bundle option; a Core AI asset holds one")

    def ready(self, request: BuildRequest) -> str:
        from ._coreai import authoring

        authoring()  # a missing install is refused before anything is hashed or drawn
        spec = self._spec(request)
        return f"{spec.workload.name} ({spec.quant}, Core AI" + (f", {spec.tokens} tokens)" if spec.tokens > 1
                                                                 else ")")

    def _spec(self, request: BuildRequest) -> Any:
        from .coreai import AssetSpec

        return AssetSpec.for_workload(request.workload, request.quant, max_split_rows=request.max_split_rows)

    def build(self, request: BuildRequest, cache_dir: Path | None, progress: Progress) -> Built:
        from .coreai_cache import build_or_reuse_asset

        spec = self._spec(request)
        try:
            artifact = build_or_reuse_asset(spec, cache_dir, progress)
        except (ValueError, RuntimeError, TypeError) as exc:  # from coreai-core: the cache is left clean
            raise UserError(f"build {spec.workload.name} ({spec.quant}, Core AI): failed: "
                            f"{type(exc).__name__}: {_first_line(exc)}") from None
        return Built(artifact.manifest, artifact.package, artifact.reused)

    def summary_rows(self, manifest: dict, package: Path, reused: bool) -> list[tuple[str, str]]:
        function = manifest["summary"]["functions"][manifest["function"]]
        stored = manifest["summary"]["storage_types"]
        storage = ", ".join(f"{dtype} x {count:,}" for dtype, count in stored.items())
        distribution = manifest["summary"]["operation_distribution"]
        ops = ", ".join(f"{op} x {count}" for op, count in distribution.items())
        weight_bytes = manifest["weight_bytes"]
        rows = [
            ("workload", manifest["workload"]),
            ("quant", manifest["quant"]),
            ("splits", _splits(manifest["splits"])),
            ("tokens per call", str(manifest["tokens"])),
            ("input", ", ".join(f"{name} {kind}" for name, kind in function["inputs"])),
            ("outputs", f"{function['outputs'][0][0]} .. {function['outputs'][-1][0]}"),
            ("stored (asset summary)", storage),
            ("operations", ops),
            ("weight bytes", f"{weight_bytes:,} ({weight_bytes / 1e6:.2f} MB, each blob found byte for "
                             "byte in the program)"),
            ("weights sha256",
             f"{manifest['weights_sha256'][:16]}… (the Core ML bundle's for the same bytes)"),
            ("workload fingerprint", manifest["workload_fingerprint"]),
            ("main.mlirb",
             f"{manifest['program_file_bytes']:,} bytes, sha256 {manifest['program_sha256'][:16]}…"),
            ("coreai-core", manifest["coreai_core"]),
            ("asset", str(package)),
            ("from cache", "yes" if reused else f"no (built in {manifest['build_seconds']:.1f} s)"),
        ]
        return rows + [("note", note) for note in manifest.get("notes", [])]


# In --engine's order; the first is the default.
BUILDERS: dict[str, Builder] = {b.engine: b for b in (BundleBuilder(), AssetBuilder())}
DEFAULT_BUILDER = next(iter(BUILDERS))
LUT_MODES_HELP = (
    "LUT tables: uniform (fast, for synthetic weights), kmeans (optimal 1-D k-means per group with "
    "kmeans1d, as coremltools' palettizer; for real weights); auto picks by the weights' source."
)
