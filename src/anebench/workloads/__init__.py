"""Workloads: the catalog of named heads and the specs ``run -w`` takes.

The spec itself (``Workload``, synthetic weights, fingerprints) is in ``spec.py``, re-exported here;
``hf:`` specs are parsed by ``checkpoints`` (local safetensors), imported on first use.
"""

from __future__ import annotations

import re

from ..errors import UserError
from ..util.names import did_you_mean, match_name
from .spec import (
    DTYPE_BYTES,
    FILL_BLOCK_ROWS,
    GEN_BLOCK_ROWS,
    GENERATOR_VERSION,
    LUT_BITS,
    LUT_GROUP_ROWS,
    MAX_DIMENSION,
    MAX_ELEMENTS,
    MAX_SYNTHETIC_SEED,
    NUMPY_DTYPES,
    QUANT_BITS,
    QUANTS,
    SyntheticWeights,
    WeightSource,
    Workload,
    quantized_bytes,
    round_to_bf16,
    synthetic_fingerprint_matches,
    synthetic_fingerprints,
)

__all__ = [
    "DTYPE_BYTES",
    "FILL_BLOCK_ROWS",
    "GEN_BLOCK_ROWS",
    "GENERATOR_VERSION",
    "LUT_BITS",
    "LUT_GROUP_ROWS",
    "MAX_DIMENSION",
    "MAX_ELEMENTS",
    "MAX_SYNTHETIC_SEED",
    "NUMPY_DTYPES",
    "QUANT_BITS",
    "QUANTS",
    "SyntheticWeights",
    "WeightSource",
    "Workload",
    "quantized_bytes",
    "round_to_bf16",
    "synthetic_fingerprint_matches",
    "synthetic_fingerprints",
    "CATALOG",
    "PUBLISHED_HEADS",
    "resolve_workload",
]

# The published anemll-bench heads: Llama-3-8B / DeepHermes-3-Llama-3-8B, hidden 4096, vocab 128256.
CATALOG: dict[str, Workload] = {
    "llama_lm_head": Workload(
        "llama_lm_head", 4096, 128256, "fp16", seed=0, note="Llama-3-8B LM head shape, fp16"
    ),
    "DeepHermes_lm_head": Workload(
        "DeepHermes_lm_head", 4096, 128256, "fp16", seed=1, note="DeepHermes-3-Llama-3-8B LM head shape"
    ),
    # The same weights as llama_lm_head, stored in the bundle as a 6-bit LUT per group of 8 rows
    # (the published ~396.06 MB bundle); only an engine that runs such bundles streams it quantized.
    "llama_lm_head_lut6": Workload(
        "llama_lm_head_lut6", 4096, 128256, "fp16", seed=0, quant="lut6",
        note="llama_lm_head palettised to 6 bits, per-grouped-channel, group size 8",
    ),
}
# The heads anemll-bench publishes figures for, in its order (the Mac campaign runs them on the ANE).
PUBLISHED_HEADS = ("llama_lm_head", "llama_lm_head_lut6", "DeepHermes_lm_head")

_PARAMETRIC = re.compile(r"^lm_head:(\d+)x(\d+)(?::(fp32|fp16|bf16))?$")
_PARAMETRIC_ANY_DTYPE = re.compile(r"^lm_head:\d+x\d+:(\w+)$")  # a well-formed shape, a dtype we lack


def resolve_workload(spec: str) -> Workload:
    """A catalog name, ``lm_head:HIDDENxVOCAB[:DTYPE]``, or ``hf:PATH[:TENSOR]``."""
    spec = spec.strip()
    known = match_name(spec, CATALOG)  # Llama_lm_head is llama_lm_head
    if known is not None:
        return CATALOG[known]
    if spec.startswith("hf:"):
        from .checkpoints import checkpoint_workload

        return checkpoint_workload(spec)
    match = _PARAMETRIC.match(spec)
    if match and max(len(match[1]), len(match[2])) > 9:
        raise UserError(f"workload {spec[:60]!r}...: HIDDEN and VOCAB must be at most {MAX_DIMENSION:,}")
    if match:
        hidden, vocab = int(match[1]), int(match[2])
        dtype = match[3] or "fp16"
        if hidden == 0 or vocab == 0:
            raise UserError(f"workload {spec!r}: HIDDEN and VOCAB must be positive integers")
        return Workload(f"lm_head:{hidden}x{vocab}:{dtype}", hidden, vocab, dtype)
    typed = _PARAMETRIC_ANY_DTYPE.match(spec)
    if typed:
        raise UserError(
            f"workload {spec!r}: unknown dtype {typed[1]!r}; {did_you_mean(typed[1], DTYPE_BYTES)}"
            f"valid: {', '.join(DTYPE_BYTES)}"
        )
    if spec.startswith("lm_head"):
        raise UserError(
            f"workload {spec!r} is malformed; expected lm_head:HIDDENxVOCAB[:fp32|fp16|bf16], "
            "e.g. lm_head:4096x32768:fp32"
        )
    raise UserError(
        f"unknown workload {spec!r}; {did_you_mean(spec, CATALOG)}valid: {', '.join(sorted(CATALOG))}, "
        "lm_head:HIDDENxVOCAB[:DTYPE] or hf:PATH[:TENSOR]"
    )
