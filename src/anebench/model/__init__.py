"""The result model: typed, versioned records. A leaf: it imports nothing else of anebench."""

from .base import (
    FiniteFloat,
    GigabytesPerSecond,
    LongStr,
    NonNegFloat,
    PositiveFloat,
    Scalar,
    Seconds,
    Sha256,
    ShortStr,
    StrictModel,
)
from .concurrency import KEEP_AWAKE_MIN_SHARE, THREADS_OF_ONE_PROCESS, Concurrency, KeepAwake
from .decode import DECODE_NOTE, ChunkTime, DecodeBytes, DecodePrediction, DecodeSection
from .energy import ComponentEnergy, DramTraffic, Energy
from .gpu import EnergyWindowCheck, GpuIdentity, GpuReport, GpuState, PlausibilityBound, StreamingFigure
from .key import MeasurementKey
from .quant import QuantSection
from .record import (
    DOCUMENT_SCHEMA,
    OLD_DOCUMENT_SCHEMAS,
    OLD_SCHEMA_VERSIONS,
    SCHEMA_VERSION,
    EngineInfo,
    HostInfo,
    HostState,
    MethodInfo,
    OutputCheck,
    ResultRecord,
    ResultsDocument,
    Suite,
    Summary,
    ToolInfo,
    WorkloadInfo,
    utc_now,
)
from .repetitions import BetweenRunInterval, Interleave, Repetition, Repetitions
from .source import SourceFacts
from .statistics import (
    BETWEEN_RUN_METHOD,
    GB,
    MB,
    MiB,
    between_run_interval,
    gbps,
    median,
    summary_fields,
    t975,
)
from .suites import ComputeResult, LatencyResult, LineFitInfo, RooflinePoint, SweepPoint
from .warning import WARNING_KINDS, RecordWarning, WarningKind, classify

__all__ = [
    "BETWEEN_RUN_METHOD", "BetweenRunInterval", "Interleave",
    "Repetition", "Repetitions", "between_run_interval", "t975",
    "DOCUMENT_SCHEMA", "GB", "MB", "MiB", "OLD_DOCUMENT_SCHEMAS", "OLD_SCHEMA_VERSIONS", "SCHEMA_VERSION",
    "KEEP_AWAKE_MIN_SHARE", "THREADS_OF_ONE_PROCESS", "ComponentEnergy", "Concurrency", "KeepAwake",
    "ChunkTime", "DECODE_NOTE", "DecodeBytes", "DecodePrediction", "DecodeSection",
    "ComputeResult", "DramTraffic", "Energy", "EnergyWindowCheck", "EngineInfo", "GpuIdentity", "GpuReport",
    "GpuState", "PlausibilityBound", "StreamingFigure", "FiniteFloat", "GigabytesPerSecond", "HostInfo",
    "HostState", "LatencyResult", "LineFitInfo", "LongStr", "MeasurementKey",
    "MethodInfo", "NonNegFloat", "OutputCheck",
    "PositiveFloat", "QuantSection", "ResultRecord", "ResultsDocument", "RooflinePoint", "Scalar", "Seconds",
    "Sha256", "ShortStr", "SourceFacts", "StrictModel", "Suite", "Summary", "SweepPoint", "ToolInfo",
    "WorkloadInfo", "gbps",
    "RecordWarning", "WARNING_KINDS", "WarningKind", "classify", "median", "summary_fields", "utc_now",
]
