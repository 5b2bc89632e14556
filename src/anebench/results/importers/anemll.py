"""Import anemll-bench's own result files (JSON, JSON pasted in text, its HTML report) as records.

Mapping rules (each record also carries them):
- chip: ``system_info.cpu.brand`` through the chip catalog. A brand that is not an Apple chip in the
  catalog refuses the file: its figures could not be placed in the by-chip matrix, and a typo must not
  invent a chip. A new chip goes into ``data/chips.csv`` first.
- workload: the canonical one by ``model_name``, so the fingerprint matches anebench's own builds.
- engine: the published one (``engines.PUBLISHED_ANE_ENGINE``), device from ``backend``; statistic
  "mean", timing "end-to-end predict()"; run count and warmup unknown unless the file states them;
  provenance "imported".
- checks: the file's ``throughput_gb_s`` must equal ``model_size_mb / inference_time_ms`` (the tool's
  own size convention) within 0.5%, and ``model_size_mb`` must fit the named model (a lut6 result
  labelled as the fp16 head is refused): otherwise the file was edited, broken or mislabelled.
- bytes: ``workload.weight_bytes`` are anebench's exact bytes for the weights as stored
  (``Workload.stored_bytes``; fp16: vocab x hidden x 2; lutN: the packed N-bit palette indices plus
  the fp16 lookup tables, as the published records count them) and ``gbps`` is recomputed from them.
  The tool counts weight.bin with its blob headers (and LUTs); source.size_convention shows its size,
  the exact bytes and their ratio.

A file is imported whole or not at all. Record ids are content hashes that leave out the file's name
and format, so the same run ingested again, or through its HTML report, is a no-op in the store.
"""

from __future__ import annotations

import hashlib
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ...engines import PUBLISHED_ANE_ENGINE, published_compute_units
from ...errors import UserError
from ...model import (
    EngineInfo,
    HostInfo,
    MethodInfo,
    ResultRecord,
    SourceFacts,
    Summary,
    ToolInfo,
    WorkloadInfo,
    gbps,
)
from ...system.chips import Chip, catalog, lookup_chip
from ...util.validation import error_lines
from ...workloads import CATALOG, PUBLISHED_HEADS, Workload
from ..validate import InvalidFile
from .anemll_format import (
    SOURCE,
    ToolDocument,
    ToolResult,
    ToolSystemInfo,
    find_documents,
    parse_document,
    read_text,
)

IMPORTER = "anebench.importers.anemll/1"  # in every record: a changed mapping gives new record ids
THROUGHPUT_TOLERANCE = 0.005  # the file's GB/s vs its model_size_mb / inference_time_ms
SIZE_FIT = (0.999, 1.05)  # the tool's size over the exact bytes: headers and LUTs add a little
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"
MODEL_NAMES = PUBLISHED_HEADS
DEVICES = {"ANE": "ane", "GPU": "gpu", "CPU": "cpu"}
# the tool loads each backend with the compute units anebench uses for the same device
COMPUTE_UNITS = {backend: published_compute_units()[device] for backend, device in DEVICES.items()}


def canonical_workload(model_name: str) -> Workload:
    """The catalog workload the tool's model stands for."""
    if model_name not in MODEL_NAMES:
        raise UserError(
            f"model_name {model_name!r} is not one of {SOURCE}'s canonical heads; "
            f"valid: {', '.join(MODEL_NAMES)}"
        )
    if model_name in CATALOG:
        return CATALOG[model_name]
    raise UserError(f"model_name {model_name!r} has no workload in anebench's catalog")


def apple_chip(brand: str) -> Chip:
    """The catalog chip for ``cpu.brand``; anything but an Apple chip in the catalog is refused."""
    chip = lookup_chip(brand)
    if chip is None or chip.vendor != "Apple":
        valid = ", ".join(f"Apple {c.key}" for c in catalog() if c.vendor == "Apple")
        reason = "is not an Apple chip in the catalog" if chip is None else "is not Apple silicon"
        raise UserError(
            f"system_info.cpu.brand {brand!r} {reason}; valid: {valid} (add a new chip to data/chips.csv)"
        )
    return chip


def parse_timestamp(text: str) -> datetime:
    try:
        # The tool writes the measuring machine's local time without a zone: kept as written, marked UTC.
        return datetime.strptime(text.strip(), TIMESTAMP_FORMAT).replace(tzinfo=timezone.utc)
    except ValueError:
        raise UserError(f"timestamp {text!r} is not 'YYYY-MM-DD HH:MM:SS'") from None


def host_info(info: ToolSystemInfo, chip: Chip) -> HostInfo:
    ram_gb = info.ram.total_gb if info.ram else None
    os_name = info.os.name if info.os and info.os.name else ""
    version = re.search(r"\b(\d+(?:\.\d+)+)\b", info.macos_version or "")
    identity = "|".join([SOURCE, os_name, info.cpu.brand, str(info.mac_model), str(ram_gb)])
    return HostInfo(
        os="macOS" if os_name in ("Darwin", "") else os_name,
        os_version=version[1] if version else "",  # os.release is the Darwin kernel's, not macOS's
        arch=info.cpu.architecture or "not stated",
        cpu_model=info.cpu.brand,
        chip=f"Apple {chip.key}",
        machine_model=info.mac_model,
        cores_physical=info.cpu.cores if info.cpu.cores and info.cpu.cores > 0 else None,
        cores_logical=info.cpu.threads if info.cpu.threads and info.cpu.threads > 0 else None,
        memory_bytes=round(ram_gb * 1024**3) if ram_gb else None,  # the tool rounds to 0.01 GiB
        python=info.python_version or "",
        fingerprint=hashlib.sha256(identity.encode()).hexdigest()[:16],
    )


def check_result(result: ToolResult, workload: Workload) -> list[str]:
    """Why one result's figures cannot be trusted; empty when they are consistent."""
    label = f"{result.model_name} on {result.backend}"
    size_mb = result.model_size_mb
    if not size_mb:
        return [(f"{label}: model_size_mb is missing or 0 (the tool did not find the weights), "
                "so its GB/s cannot be checked")]
    problems = []
    exact = workload.stored_bytes
    if not SIZE_FIT[0] <= size_mb * 1e6 / exact <= SIZE_FIT[1]:
        problems.append(
            f"{label}: model_size_mb {size_mb:g} does not fit {result.model_name} "
            f"(about {exact / 1e6:.2f} MB); the result belongs to another artifact"
        )
    recomputed = size_mb / result.inference_time_ms  # MB per ms is GB per s
    if result.throughput_gb_s is None:
        problems.append(f"{label}: throughput_gb_s is missing, so the file cannot be checked")
    elif abs(result.throughput_gb_s - recomputed) > THROUGHPUT_TOLERANCE * recomputed:
        problems.append(
            f"{label}: throughput_gb_s {result.throughput_gb_s:g} disagrees with model_size_mb / "
            f"inference_time_ms = {recomputed:.4f} by {abs(result.throughput_gb_s / recomputed - 1):.2%} "
            f"(limit {THROUGHPUT_TOLERANCE:.1%}); the file was edited or broken"
        )
    return problems


def _tool_figures(document: ToolDocument, result: ToolResult) -> dict[str, Any]:
    info = document.system_info
    ane_cores = (info.neural_engine or {}).get("cores")
    return {
        "importer": IMPORTER,
        "timestamp": document.timestamp,
        "model_name": result.model_name,
        "backend": result.backend,
        "inference_time_ms": result.inference_time_ms,
        "throughput_gb_s": result.throughput_gb_s,
        "model_size_mb": result.model_size_mb,
        "memory_used_mb": result.memory_used_mb,
        "tflops": result.tflops,
        "input_shape": str(result.input_shape) if result.input_shape is not None else None,
        "macos_version": info.macos_version,
        "ram_total_gb": info.ram.total_gb if info.ram else None,
        "neural_engine_cores": ane_cores if isinstance(ane_cores, (int, str)) else None,
    }


def _size_convention(result: ToolResult, workload: Workload) -> tuple[int, dict[str, Any]]:
    """The weight bytes the record uses, and how the tool's own size compares with them."""
    size_mb = result.model_size_mb
    if not size_mb:  # check_result refuses such a result before a record is made
        raise UserError(f"{result.model_name}: model_size_mb is missing, so its bytes are unknown")
    tool_bytes = round(size_mb * 1e6)
    exact = workload.stored_bytes
    kind = "packed indices and lookup tables" if workload.quant else "the weights alone"
    note = (f"weight_bytes are anebench's exact bytes ({exact:,}: {kind}); {SOURCE}'s model_size_mb "
            f"{size_mb:g} counts weight.bin with its blob headers")
    return exact, {
        "tool_model_size_mb": size_mb,
        "tool_weight_bytes": tool_bytes,
        "exact_weight_bytes": exact,
        "tool_over_exact": tool_bytes / exact,
        "tool_gbps_recomputed": size_mb / result.inference_time_ms,
        "note": note,
    }


def to_record(document: ToolDocument, result: ToolResult, host: HostInfo, workload: Workload) -> ResultRecord:
    weight_bytes, convention = _size_convention(result, workload)
    mean_s = result.inference_time_ms / 1e3
    return ResultRecord(
        tool=ToolInfo(name=SOURCE, version="not stated"),
        provenance="imported",
        provenance_note=f"imported from {SOURCE} (run of {document.timestamp}, time zone not stated)",
        created=parse_timestamp(document.timestamp),
        suite="run",
        host=host,
        engine=EngineInfo(
            name=PUBLISHED_ANE_ENGINE,
            version="not stated",
            device=DEVICES[result.backend],
            compute_units=COMPUTE_UNITS[result.backend],
            run_dtype=workload.quant or workload.dtype,
        ),
        workload=WorkloadInfo.of(
            workload,
            weight_bytes,
            source=f"{SOURCE} artifact",
            note=f"canonical workload for {SOURCE}'s {result.model_name}; {convention['note']}",
        ),
        method=MethodInfo(
            runs=result.num_runs,
            warmup_policy=f"fixed {result.warmup_runs}" if result.warmup_runs is not None else None,
            warmup_runs=result.warmup_runs,
            timer="not stated",
            statistic="mean",
            timing="end-to-end predict()",
        ),
        summary=Summary(n=result.num_runs, mean=mean_s),
        samples_s=[],
        device_time=f"none: {SOURCE} reports wall-clock predict() time only",
        gbps=gbps(weight_bytes, mean_s),
        source=SourceFacts(tool_figures=_tool_figures(document, result), size_convention=convention),
    ).with_id()


def document_records(document: ToolDocument) -> tuple[list[ResultRecord], list[str]]:
    """Records for every result and every problem found; the records count only when there is none."""
    problems: list[str] = []
    host = None
    try:
        parse_timestamp(document.timestamp)
        host = host_info(document.system_info, apple_chip(document.system_info.cpu.brand))
    except (UserError, ValidationError) as exc:
        problems.append(str(exc) if isinstance(exc, UserError) else f"system_info: {exc.errors()[0]['msg']}")
    records = []
    for index, result in enumerate(document.results):
        where = f"results[{index}]"
        try:
            workload = canonical_workload(result.model_name)
            if result.backend not in DEVICES:
                raise UserError(f"backend {result.backend!r} is not one of {', '.join(DEVICES)}")
        except UserError as exc:
            problems.append(f"{where}: {exc}")
            continue
        found = check_result(result, workload)
        problems += [f"{where}: {p}" for p in found]
        if found or host is None:
            continue
        try:
            records.append(to_record(document, result, host, workload))
        except ValidationError as exc:
            problems.append(f"{where}: {error_lines(exc)[0]}")
    return records, problems


def import_text(text: str, origin: str) -> list[ResultRecord]:
    """The records of every tool document in ``text``; any problem refuses the whole input."""
    documents, problems = find_documents(text)
    records: list[ResultRecord] = []
    for number, data in enumerate(documents, 1):
        prefix = f"document {number}: " if len(documents) > 1 else ""
        document, found = parse_document(data)
        if document is not None:
            made, found = document_records(document)
            records += made
        problems += [prefix + p for p in found]
    if problems:
        raise InvalidFile(origin, [f"{origin}: {p}" for p in problems])
    return records


def import_file(path: Path) -> list[ResultRecord]:
    """anemll-bench's results from its JSON file, a text with the JSON pasted in, or its HTML report."""
    path = Path(path)
    return import_text(read_text(path), str(path))
