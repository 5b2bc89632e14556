"""P1: the best CPU engine's GB/s on llama_lm_head / a read-only kernel's GB/s, same run. Target >= 0.95.

    python benchmarks/bench_p1_bandwidth.py [--runs 100] [--engines numpy,torch]

OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE slow a current numpy where they are set; to benchmark without
them, unset both in this command only (env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python ...);
the BLAS kernel that ran is printed either way.
"""

from __future__ import annotations

import argparse

from _reference import ReadKernel, blas_line

from anebench.engines import usable_engine
from anebench.measure.warmup import WarmupPolicy
from anebench.session import RunOptions, measure_workload
from anebench.workloads import resolve_workload

TARGET = 0.95


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--engines", default="numpy,torch")
    parser.add_argument("--workload", default="llama_lm_head")
    args = parser.parse_args()
    workload = resolve_workload(args.workload)
    print(blas_line())
    results = {}
    reference = []
    for name in args.engines.split(","):
        engine = usable_engine(name)
        kernel = ReadKernel(engine.bytes_for(workload, "cpu"))
        reference.append(kernel.gbps())
        record = measure_workload(engine, "cpu", workload, RunOptions(runs=args.runs, warmup=WarmupPolicy()))
        del kernel
        results[name] = record
        print(f"{name:6s} {record.engine.run_dtype}: {record.gbps:6.2f} GB/s  (median of {record.method.runs}, "
              f"CI "
              f"{record.summary.ci95_low * 1e3:.2f}-{record.summary.ci95_high * 1e3:.2f} ms) "
              f"reference before it: {reference[-1]:.2f} GB/s")
    kernel = ReadKernel(workload.bytes_as("fp32"))
    reference.append(kernel.gbps())
    ref = max(reference)
    best_name, best = max(results.items(), key=lambda item: item[1].gbps)
    print(f"reference: {kernel.name}: {', '.join(f'{r:.2f}' for r in reference)} GB/s (best {ref:.2f})")
    ratio = best.gbps / ref
    verdict = "PASS" if ratio >= TARGET else "FAIL"
    print(f"P1 {verdict}: best engine {best_name} ({best.engine.run_dtype}) {best.gbps:.2f} GB/s / "
          f"reference {ref:.2f} GB/s = {ratio:.3f} (target >= {TARGET})")


if __name__ == "__main__":
    main()
