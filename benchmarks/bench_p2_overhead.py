"""P2: harness overhead per timed call = (timing loop's wall time - bare loop's) / calls. Target <= 2 us.

    python benchmarks/bench_p2_overhead.py [--calls 20000] [--engines numpy,torch,mlx]

Both loops run the same prepared engine call on a tiny workload (so the call itself is short and the
difference is visible); they alternate, and the median of the per-repeat differences is reported.
The one timing loop is measured under each of its stop rules' shapes: timed runs (N runs, the plain
loop), and the concurrency "together" phase (every call's start recorded, the copies' shared bounds
and done flags checked between chunks; here with one copy, so it stops after its runs) with the
suites' default time budget (`concurrent`: 10 s) at 200 and at 50,000 calls: its cost per call must not
grow with the run count (it once re-summed every counted call after each call, O(n^2) in all).
"""

from __future__ import annotations

import argparse
import statistics
import time

import _reference  # noqa: F401  (puts src/ on the path when run from a checkout)

from anebench.engines import usable_engine
from anebench.measure.clock import PERF_COUNTER
from anebench.measure.timing import Runs, UntilAllDone, timing_loop
from anebench.model import median
from anebench.workloads import resolve_workload

TARGET_US = 2.0


def bare_loop(call, calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - start) / calls


def harness_loop(prepared, calls: int) -> float:
    """Timed runs: the plain loop (clock, call, clock, append; the rule asked every 1% of the runs)."""
    start = time.perf_counter_ns()
    timing_loop(prepared, PERF_COUNTER, Runs(calls), RESOLUTION_S)
    return (time.perf_counter_ns() - start) / calls


SUITE_BUDGET_S = 10.0  # `concurrent`'s default --time-budget


def together_loop(prepared, calls: int) -> float:
    """The together phase's shape: starts recorded, the suites' default budget set."""
    bounds, done_at = [0, 0], [0]
    rule = UntilAllDone(calls, 0, bounds, done_at, time_budget_s=SUITE_BUDGET_S)
    start = time.perf_counter_ns()
    loop = timing_loop(prepared, PERF_COUNTER, rule, RESOLUTION_S, spans=True)
    return (time.perf_counter_ns() - start) / len(loop.samples_s)


LOOPS = {"timed runs": (harness_loop, None), "together 200": (together_loop, 200),
         "together 50k": (together_loop, 50_000)}
RESOLUTION_S = PERF_COUNTER.resolution_s()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--engines", default="numpy,torch,mlx")
    parser.add_argument("--workload", default="lm_head:64x256:fp32")
    args = parser.parse_args()
    workload = resolve_workload(args.workload)
    worst = 0.0
    for name in args.engines.split(","):
        prepared = usable_engine(name).prepare(workload, "cpu")
        bare_loop(prepared.call, args.calls // 10)
        for label, (loop, fixed_calls) in LOOPS.items():
            calls = fixed_calls or args.calls
            repeats = args.repeats if calls <= 5 * args.calls else max(args.repeats // 8, 3)
            differences, bares = [], []
            for _ in range(repeats):
                bare = bare_loop(prepared.call, calls)
                harness = loop(prepared, calls)
                bares.append(bare)
                differences.append(harness - bare)
            overhead_us = median(differences) / 1e3
            quartiles = statistics.quantiles(differences, n=4)
            iqr_us = (quartiles[2] - quartiles[0]) / 1e3
            worst = max(worst, overhead_us)
            print(
                f"{name:6s} {label:12s} call {median(bares) / 1e3:7.2f} us bare; harness overhead "
                f"{overhead_us:+.3f} us per call (IQR of the {len(differences)} repeats: {iqr_us:.2f} us)"
            )
        prepared.close()
    verdict = "PASS" if worst <= TARGET_US else "FAIL"
    print(f"P2 {verdict}: worst harness overhead {worst:.3f} us per call (target <= {TARGET_US} us)")


if __name__ == "__main__":
    main()
