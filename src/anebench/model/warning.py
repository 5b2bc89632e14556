"""A record's warnings, typed: ``{kind, text}`` (hyperfine's ``output/warnings.rs``).

The kind is what code reads (grouping on the console, the report's re-judging of the checks); the text
is what a person reads. Records stored before warnings had kinds hold plain strings: a string loads as a
warning whose kind is classified from the prefix its producer always wrote, or ``note`` where none fits.
"""

from __future__ import annotations

import re
from typing import Any, Literal, get_args

from pydantic import ConfigDict, model_validator

from .base import LongStr, StrictModel

WarningKind = Literal[
    "few-samples",  # fewer than 10 samples: the confidence interval is wide
    "unstable",  # the samples' coefficient of variation is above its limit
    "drift",  # the last tenth of the samples moved away from the first tenth
    "cache-resident",  # the weights fit a cache: not a memory bandwidth
    "warmup-cap",  # warmup stopped at its cap without becoming steady
    "device-gap",  # wall clock far above device time: host-side overhead
    "busy",  # the machine was busy when measuring started
    "engine",  # the engine's own finding while preparing (e.g. where its ops run)
    "energy",  # an energy figure unreliable or a component's counter idle
    "dram-traffic",  # the memory controllers' view disagrees with the weight stream
    "gpu-throttle",  # the GPU was held below its clocks (NVML)
    "keep-awake",  # the keep-awake spinner did not hold its CPU share
    "concurrency",  # the copies barely overlapped, or were off the CPU / between calls
    "compute-bound",  # a compute suite's point was not clearly compute-bound
    "note",  # anything else: an old string no prefix classifies, a caller's own note
]
WARNING_KINDS: tuple[str, ...] = get_args(WarningKind)

# The prefixes each producer has always written: how a stored plain-string warning gets its kind.
_PREFIXES: tuple[tuple[str, WarningKind], ...] = (
    (r"only \d+ samples\b", "few-samples"),
    (r"unstable:", "unstable"),
    (r"drift:", "drift"),
    (r"cache-resident:", "cache-resident"),
    (r"warmup hit its cap\b", "warmup-cap"),
    (r"wall clock is .* above device time\b", "device-gap"),
    (r"busy machine:", "busy"),
    (r"DRAM traffic:", "dram-traffic"),
    (r"energy(:| figure )", "energy"),
    (r"GPU (throttled|clocks held down)\b", "gpu-throttle"),
    (r"keep-awake failed\b", "keep-awake"),
    (r"(only \d+ whole call|the copies were )", "concurrency"),
    (r"not clearly compute-bound\b", "compute-bound"),
)
_CLASSIFIED = tuple((re.compile(pattern), kind) for pattern, kind in _PREFIXES)


def classify(text: str) -> WarningKind:
    """The kind of a warning stored as plain text, from its producer's prefix; ``note`` where none fits."""
    for pattern, kind in _CLASSIFIED:
        if pattern.match(text):
            return kind
    return "note"


class RecordWarning(StrictModel):
    """One warning of a record: what kind of problem (for code) and what it says (for people)."""

    model_config = ConfigDict(frozen=True)  # a value: hashable, so a list of them can drop repeats

    kind: WarningKind
    text: LongStr

    @model_validator(mode="before")
    @classmethod
    def _from_text(cls, data: Any) -> Any:
        """A plain string (a record stored before warnings had kinds) is classified from its text."""
        return {"kind": classify(data), "text": data} if isinstance(data, str) else data

    @classmethod
    def of(cls, warning: str | RecordWarning) -> RecordWarning:
        """``warning`` as a typed warning (a string is classified from its text)."""
        return warning if isinstance(warning, RecordWarning) else cls.model_validate(warning)

    def __str__(self) -> str:
        return self.text
