"""anemll-bench's result format: reading its JSON wherever it was posted, and validating its fields.

The tool writes one object per run (its HTML report builds the same object for its "send results"
button): ``timestamp`` ("YYYY-MM-DD HH:MM:SS", local time), ``system_info`` and ``results``. People post
it as a file, pasted in an issue or an e-mail, or as that HTML report, where the JSON is a JavaScript
string literal. Unknown extra fields are kept out of the way, not refused: the tool adds fields over time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ...errors import UserError
from ...model.statistics import MiB
from ...util.inputs import check_depth, read_input_bytes
from ...util.validation import error_lines
from .embedded_json import find_json_objects

SOURCE = "anemll-bench"
MAX_FILE_BYTES = 32 * MiB  # its HTML report with charts is a few MB; more is not its file
MAX_TEXT_DEPTH = 64  # its JSON nests 4 deep; its HTML report's scripts a few more

FiniteFloat = Annotated[float, Field(allow_inf_nan=False)]


class _ToolModel(BaseModel):
    model_config = ConfigDict(extra="allow")


class ToolCpu(_ToolModel):
    brand: str
    architecture: str | None = None
    cores: int | None = None
    threads: int | None = None


class ToolOs(_ToolModel):
    name: str | None = None
    version: str | None = None
    release: str | None = None


class ToolRam(_ToolModel):
    total_gb: Annotated[FiniteFloat, Field(gt=0, le=1_000_000)] | None = None  # 1 PB: beyond any Mac


class ToolSystemInfo(_ToolModel):
    os: ToolOs | None = None
    cpu: ToolCpu
    ram: ToolRam | None = None
    python_version: str | None = None
    mac_model: str | None = None
    macos_version: str | None = None
    apple_silicon: bool | None = None
    neural_engine: dict[str, Any] | None = None  # its "cores" may be the string "Unknown"


class ToolResult(_ToolModel):
    model_name: str
    backend: str
    inference_time_ms: Annotated[FiniteFloat, Field(gt=0)]  # mean of the timed predict() calls
    throughput_gb_s: Annotated[FiniteFloat, Field(ge=0)] | None = None
    model_size_mb: Annotated[FiniteFloat, Field(ge=0)] | None = None  # weight.bin bytes / 1e6
    memory_used_mb: FiniteFloat | None = None
    tflops: FiniteFloat | None = None
    input_shape: str | list[int] | None = None
    # Not written by anemll-bench today; taken when a file states them.
    num_runs: Annotated[int, Field(ge=1)] | None = None
    warmup_runs: Annotated[int, Field(ge=0)] | None = None


class ToolDocument(_ToolModel):
    timestamp: str
    system_info: ToolSystemInfo
    results: list[ToolResult] = Field(min_length=1)


# The tool's document opens with one of these: a block that does and does not parse is one cut short.
DOCUMENT_KEYS = ("timestamp", "system_info", "results")


def is_tool_document(value: dict) -> bool:
    return "system_info" in value and "results" in value


def read_text(path: Path) -> str:
    """A file's text; a missing, huge, binary, unreadable or non-regular file (device, FIFO) is one
    clear line, and so is text nested deeper than any JSON the tool writes (checked in linear time:
    searching broken, deeply nested JSON from every brace would take minutes)."""
    path = Path(path)
    data = read_input_bytes(path, "", MAX_FILE_BYTES)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UserError(f"{path}: not UTF-8 text; expected {SOURCE}'s JSON or its HTML report") from None
    check_depth(text, str(path), MAX_TEXT_DEPTH)
    return text


def find_documents(text: str) -> tuple[list[dict], list[str]]:
    """The tool's JSON objects in a file's text, or (nothing, the reasons, one line each).

    A file is imported whole or not at all: a block that starts like one of the tool's documents but
    does not parse (a paste cut short) refuses the file, even when other blocks are whole.
    """
    search = find_json_objects(text, is_tool_document, marker='"system_info"', opening_keys=DOCUMENT_KEYS)
    if search.gave_up:
        return [], [search.gave_up]
    if search.objects and search.broken:
        return [], [f"an {SOURCE} result block is broken ({b}); nothing from this file was imported"
                    for b in search.broken]
    if search.objects:
        return search.objects, []
    broken = f" (the JSON there is broken: {search.error})" if search.error and "system_info" in text else ""
    return [], [
        (f"no {SOURCE} result JSON found{broken}; expected an object with timestamp, system_info and "
        "results, as a file, pasted in text, or in the tool's HTML report")
    ]


def parse_document(data: dict) -> tuple[ToolDocument | None, list[str]]:
    """The validated document, or (None, one line per invalid field)."""
    try:
        return ToolDocument.model_validate(data), []
    except ValidationError as exc:
        return None, error_lines(exc, "document")
