"""P2: harness overhead per timed call = (timing loop's wall time - bare loop's) / calls. Target <= 2 us.

    python benchmarks/bench_p2_overhead.py [--calls 20000] [--engines numpy,torch,mlx]

Both loops run the same prepared engine call on a tiny workload (so the call itself is short and the
difference is visible); they alternate, and the median of the per-repeat differences is reported.
"""

from __future__ import annotations

import argparse
import statistics
import time

import _reference  # noqa: F401  (puts src/ on the path when run from a checkout)

from anebench.engines import usable_engine
from anebench.measure.clock import PERF_COUNTER
from anebench.measure.timing import timed_runs
from anebench.workloads import resolve_workload

TARGET_US = 2.0


def bare_loop(call, calls: int) -> float:
    start = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - start) / calls


def harness_loop(prepared, calls: int) -> float:
    start = time.perf_counter_ns()
    timed_runs(prepared, calls, PERF_COUNTER)
    return (time.perf_counter_ns() - start) / calls


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
        differences, bares = [], []
        for _ in range(args.repeats):
            bare = bare_loop(prepared.call, args.calls)
            harness = harness_loop(prepared, args.calls)
            bares.append(bare)
            differences.append(harness - bare)
        overhead_us = statistics.median(differences) / 1e3
        quartiles = statistics.quantiles(differences, n=4)
        iqr_us = (quartiles[2] - quartiles[0]) / 1e3
        worst = max(worst, overhead_us)
        print(f"{name:6s} call {statistics.median(bares) / 1e3:7.2f} us bare; harness overhead "
              f"{overhead_us:+.3f} us per call (IQR of the {len(differences)} repeats: {iqr_us:.2f} us)")
        prepared.close()
    verdict = "PASS" if worst <= TARGET_US else "FAIL"
    print(f"P2 {verdict}: worst harness overhead {worst:.3f} us per call (target <= {TARGET_US} us)")


if __name__ == "__main__":
    main()
