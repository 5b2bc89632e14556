"""`anebench quant`: fp16, int8, lut6 and lut4 of the same head, and what their latencies say is streamed.

Each variant is the same weights stored differently (a bundle's per-channel int8, 6- and 4-bit tables
per group of 8 rows); the stated rule of ``measure.quant`` turns the latencies into an inference. An engine
that cannot run a variant as stored does not run it under that name: the suite says which variants
each engine can run as stored, and measures only where fp16 and at least one quantised variant can.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import cast

from ...engines.base import Engine
from ...errors import UserError
from ...measure.quant import QuantInference, VariantPoint, infer_streaming
from ...model import QuantSection, ResultRecord
from ...model.quant import Verdict
from ...workloads import Workload
from ..session import RunOptions
from .bundle_plan import BundlePlan, calls_text, measure_bundle, plan_bundle
from .common import ProgressFactory, latency_of, no_progress, synthetic_only

VARIANTS = ("fp16", "int8", "lut6", "lut4")


@dataclass
class QuantResult:
    records: list[ResultRecord]
    inference: QuantInference


def unquantized(base: Workload) -> Workload:
    """The fp16 head a quantised catalog head (llama_lm_head_lut6) was made from."""
    if base.quant in (None, "fp16"):
        return replace(base, quant=None)
    return replace(base, quant=None, name=base.name.removesuffix(f"_{base.quant}"))


def variant_workload(base: Workload, variant: str) -> Workload:
    """fp16 keeps the head's own fingerprint; llama_lm_head + lut6 is the catalog's llama_lm_head_lut6."""
    head = unquantized(base)
    if variant == "fp16":
        return head
    return replace(head, name=f"{head.name}_{variant}", quant=variant,
                   note=f"{head.name} stored as {variant} (quantisation suite)")


def as_stored(engine: Engine, device: str, base: Workload) -> dict[str, str | None]:
    """Per variant: None where the engine runs it as stored, else why not."""
    found: dict[str, str | None] = {}
    for variant in VARIANTS:
        workload = variant_workload(base, variant)
        if variant == "fp16":
            choice = engine.dtype_for(workload, device)
            found[variant] = None if choice.run_dtype == "fp16" else f"streams {choice.run_dtype}"
        elif variant in engine.quantized_storage:
            found[variant] = None
        else:
            found[variant] = f"{engine.name} has no {variant} weight storage"
    return found


def measurable(capabilities: dict[str, str | None]) -> list[str]:
    """The variants to measure: fp16 and the quantised ones run as stored, or none when that is not two."""
    runs = [v for v, why in capabilities.items() if why is None]
    return runs if "fp16" in runs and len(runs) >= 2 else []


def plan_quant(engine, device: str, base: Workload, variants: list[str], runs: int,
               budget_s: float | None) -> BundlePlan:
    synthetic_only(base, "quant")
    if base.tokens != 1 or base.batch != 1:
        raise UserError("quant: give the head itself; the suite compares single-token predicts")
    bundles = [plan_bundle(engine, variant_workload(base, v),
                           calls_text(engine, device, f"{v} {engine.call_name}", runs, budget_s))
               for v in variants]
    return BundlePlan("quant", engine.name, device, bundles, [])


def run_quant(engine, device: str, plan: BundlePlan, options: RunOptions,
              progress: ProgressFactory = no_progress) -> QuantResult:
    records = [measure_bundle(engine, device, bundle, options, progress, "quant") for bundle in plan.bundles]
    fp16_bytes = next(r.workload.weight_bytes for r, b in zip(records, plan.bundles) if b.quant == "fp16")
    inference = infer_streaming([VariantPoint(b.quant, r.workload.weight_bytes, latency_of(r))
                                 for r, b in zip(records, plan.bundles)], fp16_bytes)
    updated = []
    for record, verdict in zip(records, inference.variants):
        section = QuantSection(
            variant=verdict.variant,
            stored_bytes=verdict.stored_bytes,
            fp16_bytes=fp16_bytes,
            gbps_as_stored=verdict.gbps_as_stored,
            gbps_fp16_equivalent=verdict.gbps_fp16_equivalent,
            latency_ratio=verdict.latency_ratio,
            bytes_ratio=verdict.bytes_ratio,
            verdict=cast(Verdict | None, verdict.verdict),
            inference=inference.inference,
            rule=inference.rule,
            tolerance=inference.tolerance,
        )
        updated.append(record.model_copy(update={"quant": section}).with_id())
    return QuantResult(updated, inference)
