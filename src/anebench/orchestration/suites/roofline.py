"""`anebench roofline`: the batch sweep to the ridge; the token path and memory checks compute shares.

Roofline and compute (suites/compute.py) ask the engine which path they take. A matmul engine multiplies
B vectors per call; an engine that builds token-batched bundles (``Engine.plans_bundles`` and
``token_batched``) multiplies T tokens in one call of a bundle: one read of the weights serves T logit
vectors, which is what Apple's ane_transformers note says lifts the ANE out of the bandwidth-bound regime.
The K-calls mitigation re-reads every weight per call, so it is not used there.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ...engines.base import Engine
from ...errors import UserError
from ...measure.roofline import (
    RIDGE_RULE,
    MeasuredBatch,
    RooflineAnalysis,
    analyse_roofline,
    clearly_compute_bound,
    doubling_batches,
)
from ...model import ResultRecord
from ...model import RooflinePoint as RooflineSection
from ...system.chips import figure_chip_name, host_config, memory_bound_gbps
from ...system.host import SYSTEM_HOST, Host
from ...workloads import DTYPE_BYTES, Workload
from ..executor import active_executor
from ..preflight import MEMORY_HEADROOM
from ..session import Measurement, RunOptions
from .bundle_plan import BundlePlan, calls_text, fits_in_memory, plan_bundle
from .common import ProgressFactory, latency_of, no_progress, synthetic_only

REPETITIONS = 3  # each batch in repetitions: their intervals are the ridge's monotonicity gate
# The default roofline on a CPU: a first look in under a minute. The full Llama head at batch 1024 is a
# TFLOP per call (5.5 min and 4 GB on a 2-core machine); a 134 MB head (4x a 32 MiB cache) turns
# compute-bound by batch 16-64 on a CPU, and a budget of calls and of warmup per batch bounds the rest.
CPU_FIRST_LOOK_WORKLOAD = "lm_head:4096x8192:fp32"
CPU_FIRST_LOOK_MAX_BATCH = 256
CPU_FIRST_LOOK_BUDGET_S = 1.5
CPU_FIRST_LOOK_WARMUP_S = 1.0  # per repetition: a steady warmup (10 calls) takes well under it here
DEFAULT_MAX_TOKENS = 512
ALIGNMENT_TOKENS = 32  # Apple: the last axis is padded to 64 bytes = 32 fp16 values


@dataclass(frozen=True)
class FirstLook:
    """The roofline's defaults where a CPU engine runs it with no workload, largest batch or budget."""

    workload: str = CPU_FIRST_LOOK_WORKLOAD
    max_batch: int = CPU_FIRST_LOOK_MAX_BATCH
    budget_s: float = CPU_FIRST_LOOK_BUDGET_S
    warmup_s: float = CPU_FIRST_LOOK_WARMUP_S

    def estimate_s(self) -> float:
        """The most the calls and warmups take: every batch's budget and its repetitions' warmup caps
        (the sweep usually stops earlier, once clearly compute-bound); preparing each batch adds a little."""
        return len(doubling_batches(self.max_batch)) * (self.budget_s + REPETITIONS * self.warmup_s)

    def describe(self) -> str:
        return (f"a first look on the CPU: {self.workload}, batches 1-{self.max_batch} doubling (stopping "
                f"once clearly compute-bound), at most {self.budget_s:g} s of calls per batch in "
                f"{REPETITIONS} repetitions, each warmup capped at {self.warmup_s:g} s: at most "
                f"{self.estimate_s():.0f} s of calls and warmups; give -w llama_lm_head --max-batch 1024 "
                "--time-budget 5 for the full head")


def measured_batches(batches: list[int], records: list[ResultRecord]) -> list[MeasuredBatch]:
    """What the ridge's data gates read from each point's record."""
    found = []
    for batch, record in zip(batches, records):
        low, high = record.between_run() or (None, None)
        found.append(MeasuredBatch(batch, latency_of(record), low, high, record.method.warmup_steady,
                                   len(record.samples_s)))
    return found


@dataclass
class RooflineResult:
    records: list[ResultRecord]
    analysis: RooflineAnalysis


def activation_element_bytes(workload: Workload, run_dtype: str) -> int:
    """Bytes per input or output element: the run dtype's, or the workload's own where the engine
    streams the weights quantized (a lut6 bundle: the activations stay fp16)."""
    return DTYPE_BYTES.get(run_dtype, DTYPE_BYTES[workload.dtype])


def activation_bytes(workload: Workload, run_dtype: str) -> int:
    return (
        workload.batch
        * (workload.hidden + workload.vocab)
        * max(activation_element_bytes(workload, run_dtype), 4)
    )


def check_activations_fit(engine: Engine, device: str, workload: Workload, host: Host = SYSTEM_HOST) -> None:
    run_dtype = engine.dtype_for(workload, device).run_dtype
    needed = (engine.bytes_for(workload, device) + activation_bytes(workload, run_dtype)) * MEMORY_HEADROOM
    free = host.available_memory_bytes()
    if needed > free:
        raise UserError(
            f"batch {workload.batch} of {workload.name!r} needs {needed / 1e9:.2f} GB with its "
            f"inputs and outputs; only {free / 1e9:.2f} GB is free: "
            "lower the batch (the roofline's largest, or compute's)"
        )


def run_roofline(
    engine: Engine,
    device: str,
    base: Workload,
    max_batch: int,
    options: RunOptions,
    progress: ProgressFactory = no_progress,
) -> RooflineResult:
    """Batches 1, 2, 4, ... up to ``max_batch``, stopping once clearly compute-bound; each batch in
    REPETITIONS repetitions (fewer only where --runs is smaller)."""
    synthetic_only(base, "roofline")
    options = replace(options, repetitions=min(max(options.repetitions, REPETITIONS), options.runs))
    measured: list[Measurement] = []
    batches: list[int] = []
    planned = doubling_batches(max_batch)
    for index, batch in enumerate(planned, 1):
        workload = base.with_batch(batch)
        check_activations_fit(engine, device, workload, options.host)
        # "(i/N)" of the batches planned: the time-left estimate is an upper bound, as the suite stops
        # once clearly compute-bound
        label = f"roofline {engine.name}:{device} batch {batch} ({index}/{len(planned)})"
        measure = active_executor().measure_parts
        measured.append(measure(engine, device, workload, options, progress(label, options.runs)))
        batches.append(batch)
        if clearly_compute_bound(batches, [latency_of(m.draft) for m in measured]):
            break
    drafts = [m.draft for m in measured]
    first = drafts[0]
    chip = figure_chip_name(first.engine.device, first.engine.details, first.host.chip)
    analysis = analyse_roofline(
        batches,
        [latency_of(r) for r in drafts],
        base.vocab,
        base.hidden,
        first.workload.weight_bytes,
        activation_element_bytes(base, first.engine.run_dtype),
        memory_bound_gbps(chip, host_config(first.host.cores_physical, first.host.memory_bytes)),
        measured_batches(batches, drafts),
    )
    note = f"not clearly compute-bound by batch {batches[-1]} ({RIDGE_RULE}); raise the largest batch"
    return RooflineResult(roofline_records(measured, analysis, note), analysis)


def roofline_records(measured: list[Measurement], analysis: RooflineAnalysis, not_bound_note: str
                     ) -> list[ResultRecord]:
    """Each point's record, built once with its roofline section; the last point also says
    ``not_bound_note`` when the sweep never turned clearly compute-bound."""
    last = len(measured) - 1
    return [
        measurement.record({"roofline": section},
                           [not_bound_note] if i == last and not analysis.compute_bound else [])
        for i, (measurement, section) in enumerate(zip(measured, roofline_sections(analysis)))
    ]


def roofline_sections(analysis: RooflineAnalysis) -> list[RooflineSection]:
    """Each point's typed roofline section (its batch or tokens, and the shared analysis)."""
    sections = []
    for point in analysis.points:
        section = RooflineSection(
            batch=point.batch,
            flop_per_s=point.flop_per_s,
            bytes_per_flop=point.bytes_per_flop,
            ridge_batch=analysis.ridge_batch,
            ridge_error=analysis.ridge_error,
            baseline_batch=analysis.baseline_batch,
            model_ridge_batch=analysis.model_ridge_batch,
            peak_flop_per_s=analysis.peak_flop_per_s,
            memory_gbps=analysis.memory_gbps,
            compute_bound=analysis.compute_bound,
            rule=analysis.rule,
        )
        sections.append(section)
    return sections


def takes_tokens(engine: Engine) -> bool:
    """Whether roofline and compute step this engine's tokens per call (of bundles it builds)."""
    return engine.plans_bundles and engine.token_batched


def run_roofline_suite(engine: Engine, device: str, base: Workload, max_batch: int, max_tokens: int,
                       options: RunOptions, progress: ProgressFactory = no_progress) -> RooflineResult:
    """The roofline on the engine's path: tokens per call of token-batched bundles, else the batch."""
    if takes_tokens(engine):
        plan = plan_token_roofline(engine, device, base, max_tokens, options.runs, options.time_budget_s)
        return run_token_roofline(engine, device, plan, options, progress)
    return run_roofline(engine, device, base, max_batch, options, progress)


def token_counts(engine: Engine, device: str, base: Workload, max_tokens: int) -> tuple[list[int], list[str]]:
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
        raise UserError(f"{suite}: give the head itself; the suite sets the tokens per call")


def token_bundles(engine: Engine, device: str, base: Workload, counts: list[int], runs: int,
                  budget_s: float | None) -> list:
    return [plan_bundle(engine, base.with_tokens(t),
                        calls_text(engine, device, f"{t}-token {engine.call_name}", runs, budget_s))
            for t in counts]


def plan_token_roofline(engine: Engine, device: str, base: Workload, max_tokens: int, runs: int,
                        budget_s: float | None) -> BundlePlan:
    check_base(base, "roofline")
    counts, notes = token_counts(engine, device, base, max_tokens)
    notes.append("stops early once latency grows as tokens^0.75 or faster (clearly compute-bound)")
    return BundlePlan("roofline", engine.name, device,
                      token_bundles(engine, device, base, counts, runs, budget_s), notes)


def run_token_roofline(engine: Engine, device: str, plan: BundlePlan, options: RunOptions,
                       progress: ProgressFactory = no_progress) -> RooflineResult:
    measured: list[Measurement] = []
    counts: list[int] = []
    for bundle in plan.bundles:
        label = f"roofline {engine.name}:{device} {bundle.tokens} tokens"
        measure = active_executor().measure_parts
        measured.append(measure(engine, device, bundle.workload, options, progress(label, options.runs)))
        counts.append(bundle.tokens)
        if clearly_compute_bound(counts, [latency_of(m.draft) for m in measured]):
            break
    base = plan.bundles[0].workload
    drafts = [m.draft for m in measured]
    analysis = analyse_roofline(counts, [latency_of(r) for r in drafts], base.vocab, base.hidden,
                                drafts[0].workload.weight_bytes, 2,  # fp16 activations whatever the storage
                                measured=measured_batches(counts, drafts))
    rule = f"{RIDGE_RULE} (batch = tokens per {engine.call_name} of a token-batched bundle)"
    analysis = replace(analysis, rule=rule)
    note = (f"not clearly compute-bound by {counts[-1]} tokens per {engine.call_name} ({RIDGE_RULE}); "
            f"raise the most tokens per {engine.call_name}")
    return RooflineResult(roofline_records(measured, analysis, note), analysis)


def alignment_note(engine: Engine, points: list[tuple[int, float]]) -> str | None:
    """Apple's 64-byte last-axis alignment predicts a flat latency up to 32 tokens: what was measured
    (None on an engine that steps the batch, not tokens)."""
    latency = dict(points)
    if not takes_tokens(engine) or 2 not in latency or ALIGNMENT_TOKENS not in latency:
        return None
    ratio = latency[ALIGNMENT_TOKENS] / latency[2]
    return (
        f"alignment: {ALIGNMENT_TOKENS} tokens take {ratio:.2f}x the latency of 2 (Apple's 64-byte last-axis "
        f"alignment predicts ~1.0x up to {ALIGNMENT_TOKENS} fp16 tokens)"
    )
