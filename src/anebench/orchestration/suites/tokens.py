"""The Neural Engine's roofline and peak throughput on token-batched bundles (T tokens per predict).

Where a matmul engine's roofline multiplies B vectors per call, Core ML's multiplies T tokens in one
predict of a token-batched bundle: one read of the weights serves T logit vectors, which is what
Apple's ane_transformers note says lifts the ANE out of the bandwidth-bound regime. The K-predicts
mitigation re-reads every weight per predict, so it is not used here.
"""

from __future__ import annotations

from dataclasses import replace

from ...engines.coreml_engine import CoreMLEngine
from ...errors import UserError
from ...measure.roofline import (
    RIDGE_RULE,
    analyse_roofline,
    clearly_compute_bound,
    doubling_batches,
)
from ...model import ResultRecord
from ...workloads import Workload
from ..executor import active_executor
from ..session import RunOptions
from .common import ProgressFactory, latency_of, no_progress, synthetic_only
from .coreml_plan import CoreMLPlan, PlannedBundle, calls_text, fits_in_memory, plan_bundle
from .roofline import RooflineResult, compute_result, measured_batches, with_roofline_sections

DEFAULT_MAX_TOKENS = 512
ALIGNMENT_TOKENS = 32  # Apple: the last axis is padded to 64 bytes = 32 fp16 values
TOKEN_RULE = f"{RIDGE_RULE} (Core ML: batch = tokens per predict of a token-batched bundle)"


def token_counts(
    engine: CoreMLEngine, device: str, base: Workload, max_tokens: int
) -> tuple[list[int], list[str]]:
    """1, 2, 4, ... max_tokens, without the counts whose inputs and logits would not fit in memory."""
    counts, notes = [], []
    for tokens in doubling_batches(max_tokens):
        if fits_in_memory(engine, device, base.with_tokens(tokens)):
            counts.append(tokens)
        else:
            notes.append(
                f"tokens {tokens} and above skipped: the bundle with its inputs and logits would not "
                "fit in the memory free now"
            )
            break
    if not counts:
        raise UserError(f"{base.name}: not even one token fits in the memory free now")
    return counts, notes


def check_base(base: Workload, suite: str) -> None:
    synthetic_only(base, suite)
    if base.tokens != 1 or base.batch != 1:
        raise UserError(f"{suite}: give the head itself; the suite sets the tokens per predict")


def plan_token_roofline(engine: CoreMLEngine, device: str, base: Workload, max_tokens: int, runs: int,
                        budget_s: float | None) -> CoreMLPlan:
    check_base(base, "roofline")
    counts, notes = token_counts(engine, device, base, max_tokens)
    bundles = [plan_bundle(engine, base.with_tokens(t), calls_text(engine, device, f"{t}-token predict", runs,
                                                                   budget_s))
               for t in counts]
    notes.append("stops early once latency grows as tokens^0.75 or faster (clearly compute-bound)")
    return CoreMLPlan("roofline", device, bundles, notes)


def run_token_roofline(engine: CoreMLEngine, device: str, plan: CoreMLPlan, options: RunOptions,
                       progress: ProgressFactory = no_progress) -> RooflineResult:
    records: list[ResultRecord] = []
    counts: list[int] = []
    for bundle in plan.bundles:
        label = f"roofline {engine.name}:{device} {bundle.tokens} tokens"
        records.append(
            active_executor().measure(engine, device, bundle.workload, options, progress(label, options.runs))
        )
        counts.append(bundle.tokens)
        if clearly_compute_bound(counts, [latency_of(r) for r in records]):
            break
    base = plan.bundles[0].workload
    analysis = analyse_roofline(counts, [latency_of(r) for r in records], base.vocab, base.hidden,
                                records[0].workload.weight_bytes, 2,  # fp16 activations whatever the storage
                                measured=measured_batches(counts, records))
    analysis = replace(analysis, rule=TOKEN_RULE)
    updated = with_roofline_sections(records, analysis)
    if not analysis.compute_bound:
        note = (f"not clearly compute-bound by {counts[-1]} tokens per predict ({RIDGE_RULE}); "
                "raise the most tokens per predict")
        updated[-1] = updated[-1].model_copy(update={"warnings": [*updated[-1].warnings, note]}).with_id()
    return RooflineResult(updated, analysis)


def alignment_note(points: list[tuple[int, float]]) -> str | None:
    """Apple's 64-byte last-axis alignment predicts a flat latency up to 32 tokens: what was measured."""
    latency = dict(points)
    if 2 not in latency or ALIGNMENT_TOKENS not in latency:
        return None
    ratio = latency[ALIGNMENT_TOKENS] / latency[2]
    return (
        f"alignment: {ALIGNMENT_TOKENS} tokens take {ratio:.2f}x the latency of 2 (Apple's 64-byte last-axis "
        f"alignment predicts ~1.0x up to {ALIGNMENT_TOKENS} fp16 tokens)"
    )


def plan_token_compute(engine: CoreMLEngine, device: str, base: Workload, max_tokens: int, runs: int,
                       budget_s: float | None) -> CoreMLPlan:
    check_base(base, "compute")
    counts, notes = token_counts(engine, device, base, max_tokens)
    if counts[-1] < 2:
        raise UserError("compute: at least 2 tokens must fit (the suite compares T with T/2)")
    top = counts[-1]
    bundles = [plan_bundle(engine, base.with_tokens(t), calls_text(engine, device, f"{t}-token predict", runs,
                                                                   budget_s))
               for t in (top // 2, top)]
    return CoreMLPlan(
        "compute", device, bundles, [*notes, f"peak TFLOP/s at {top} tokens, the largest that fits"]
    )


def run_token_compute(engine: CoreMLEngine, device: str, plan: CoreMLPlan, options: RunOptions,
                      progress: ProgressFactory = no_progress) -> ResultRecord:
    half_bundle, full_bundle = plan.bundles
    half = measure(engine, device, half_bundle, options, progress, "compute")
    full = measure(engine, device, full_bundle, options, progress, "compute")
    workload, half_tokens = full_bundle.workload, half_bundle.tokens
    compute = compute_result(workload.vocab, workload.hidden, workload.tokens, half_tokens, latency_of(full),
                             latency_of(half), unit="tokens per predict")
    warnings = list(full.warnings)
    if not compute.compute_bound:
        warnings.append(f"not clearly compute-bound: latency grew only {compute.growth_from_half:.2f}x from "
                        f"{half_tokens} to {workload.tokens} tokens per predict; "
                        "raise the most tokens per predict if memory allows")
    return full.model_copy(update={"compute": compute, "warnings": warnings}).with_id()


def measure(engine: CoreMLEngine, device: str, bundle: PlannedBundle, options: RunOptions,
            progress: ProgressFactory, suite: str) -> ResultRecord:
    label = f"{suite} {engine.name}:{device} {bundle.workload.name} {bundle.quant} {bundle.tokens} tokens"
    return active_executor().measure(engine, device, bundle.workload, options, progress(label, options.runs))


__all__ = ["DEFAULT_MAX_TOKENS", "alignment_note", "plan_token_compute", "plan_token_roofline",
           "run_token_compute", "run_token_roofline", "token_counts"]
