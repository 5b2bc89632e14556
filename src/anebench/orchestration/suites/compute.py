"""`anebench compute`: peak matrix throughput, checked against half the batch (or tokens per call).

Like the roofline (suites/roofline.py, whose token path and memory checks it shares), it asks the engine
which path it takes: B vectors per call of a matmul engine, or T tokens in one call of a token-batched
bundle.
"""

from __future__ import annotations

from ...engines.base import Engine
from ...errors import UserError
from ...measure.roofline import flops_per_call
from ...model import ComputeResult, ResultRecord
from ...workloads import Workload
from ..executor import active_executor
from ..session import RunOptions
from .bundle_plan import BundlePlan, measure_bundle
from .common import ProgressFactory, latency_of, no_progress, synthetic_only, with_dtype
from .roofline import check_activations_fit, check_base, takes_tokens, token_bundles, token_counts

COMPUTE_BOUND_CHECK = 1.6  # compute suite: doubling the batch must grow latency by this much


def compute_result(
    vocab: int, hidden: int, count: int, half_count: int, full_s: float, half_s: float, unit: str = "batch"
) -> ComputeResult:
    """Peak FLOP/s at ``count`` vectors per call, checked against half as many (doubling must cost)."""
    flops = flops_per_call(vocab, hidden, count)
    growth = full_s / half_s * (half_count * 2 / count)
    return ComputeResult(
        flops_per_call=flops,
        tflop_per_s=flops / full_s / 1e12,
        half_batch=half_count,
        half_batch_tflop_per_s=flops_per_call(vocab, hidden, half_count) / half_s / 1e12,
        growth_from_half=growth,
        compute_bound=growth >= COMPUTE_BOUND_CHECK,
        rule=f"compute-bound when doubling the {unit} grows latency >= {COMPUTE_BOUND_CHECK}x",
    )


def run_compute(
    engine: Engine,
    device: str,
    workload: Workload,
    options: RunOptions,
    progress: ProgressFactory = no_progress,
) -> ResultRecord:
    """Peak matrix throughput at ``workload.batch``; also times half the batch to check it is
    compute-bound."""
    synthetic_only(workload, "compute")
    if workload.batch < 2:
        raise UserError(
            "compute: the batch must be at least 2 (the suite compares the batch with half of it)"
        )
    half_workload = workload.with_batch(workload.batch // 2)
    check_activations_fit(engine, device, workload, options.host)
    half = active_executor().measure(
        engine,
        device,
        half_workload,
        options,
        progress(f"compute {engine.name}:{device} batch {half_workload.batch}", options.runs),
    )
    full = active_executor().measure_parts(
        engine,
        device,
        workload,
        options,
        progress(f"compute {engine.name}:{device} batch {workload.batch}", options.runs),
    )
    compute = compute_result(
        workload.vocab,
        workload.hidden,
        workload.batch,
        half_workload.batch,
        full.latency_s(),
        latency_of(half),
    )
    warnings = []
    if not compute.compute_bound:
        warnings.append(
            f"not clearly compute-bound: latency grew only {compute.growth_from_half:.2f}x from batch "
            f"{half_workload.batch} to {workload.batch}; raise the batch"
        )
    return full.record({"compute": compute}, warnings)


def run_compute_suite(engine: Engine, device: str, base: Workload, batch: int, dtypes: tuple[str, ...],
                      max_tokens: int, options: RunOptions,
                      progress: ProgressFactory = no_progress) -> list[ResultRecord]:
    """Peak throughput on the engine's path: the most tokens per call that fit against half of it, else
    ``batch`` vectors per call in each of ``dtypes`` (default: the workload's)."""
    if takes_tokens(engine):
        plan = plan_token_compute(engine, device, base, max_tokens, options.runs, options.time_budget_s)
        return [run_token_compute(engine, device, plan, options, progress)]
    return [run_compute(engine, device, with_dtype(base, dtype).with_batch(batch), options, progress)
            for dtype in dtypes or (base.dtype,)]


def plan_token_compute(engine: Engine, device: str, base: Workload, max_tokens: int, runs: int,
                       budget_s: float | None) -> BundlePlan:
    check_base(base, "compute")
    counts, notes = token_counts(engine, device, base, max_tokens)
    if counts[-1] < 2:
        raise UserError("compute: at least 2 tokens must fit (the suite compares T with T/2)")
    top = counts[-1]
    return BundlePlan("compute", engine.name, device,
                      token_bundles(engine, device, base, [top // 2, top], runs, budget_s),
                      [*notes, f"peak TFLOP/s at {top} tokens, the largest that fits"])


def run_token_compute(engine: Engine, device: str, plan: BundlePlan, options: RunOptions,
                      progress: ProgressFactory = no_progress) -> ResultRecord:
    half_bundle, full_bundle = plan.bundles
    half = measure_bundle(engine, device, half_bundle, options, progress, "compute")
    full = measure_bundle(engine, device, full_bundle, options, progress, "compute")
    workload, half_tokens = full_bundle.workload, half_bundle.tokens
    per_call = f"tokens per {engine.call_name}"
    compute = compute_result(workload.vocab, workload.hidden, workload.tokens, half_tokens,
                             latency_of(full.draft), latency_of(half.draft), unit=per_call)
    warnings: list[str] = []
    if not compute.compute_bound:
        warnings.append(f"not clearly compute-bound: latency grew only {compute.growth_from_half:.2f}x from "
                        f"{half_tokens} to {workload.tokens} {per_call}; "
                        f"raise the most {per_call} if memory allows")
    return full.record({"compute": compute}, warnings)
