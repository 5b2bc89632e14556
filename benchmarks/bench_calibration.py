"""Calibration: does a run's printed headline interval contain the next run's median?

    python benchmarks/bench_calibration.py                       # K = 6 runs per mode, both modes
    python benchmarks/bench_calibration.py -k 2 -w lm_head:256x4096:fp32 --runs 30   # a quick check

K consecutive `anebench run` invocations (each its own process, as a user runs them) of one workload;
for each pair (k, k+1): is run k+1's median inside run k's between-run interval (the headline), and
inside run k's within-run CI (the old figure, for contrast)? Target: headline coverage >= 80% on an
idle machine. Modes: the default (repetitions in one process) and --fresh-processes. Run it alone:
it streams about a gigabyte per call for a few minutes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

TARGET = 0.80
SRC = Path(__file__).resolve().parent.parent / "src"


@dataclass
class Run:
    median_s: float
    between: tuple[float, float] | None
    within: tuple[float, float]
    gbps: float
    repetitions: int
    wall_s: float


def one_run(engine: str, workload: str, extra: list[str]) -> Run:
    env = dict(os.environ)
    if SRC.is_dir():  # measure this checkout, not whatever anebench is installed
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC), env.get("PYTHONPATH")]))
    argv = [sys.executable, "-m", "anebench", "run", "-e", engine, "-w", workload, "--no-save", "--json",
            *extra]
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"anebench run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    (record,) = json.loads(done.stdout)["results"]
    summary, reps = record["summary"], record.get("repetitions") or {}
    between = reps.get("between_run") or {}
    interval = (between["low_s"], between["high_s"]) if between.get("low_s") else None
    return Run(summary["median"], interval, (summary["ci95_low"], summary["ci95_high"]), record["gbps"],
               len(reps.get("runs", [])), wall)


def inside(value: float, interval: tuple[float, float] | None) -> bool:
    return interval is not None and interval[0] <= value <= interval[1]


def half(interval: tuple[float, float] | None, centre: float) -> str:
    if interval is None:
        return "unknown"
    return f"±{max(interval[1] / centre - 1, 1 - interval[0] / centre):.2%}"


def calibrate(label: str, k: int, engine: str, workload: str, extra: list[str]) -> tuple[float, float]:
    runs: list[Run] = []
    print(f"\n{label}: {k} x `anebench run -e {engine} -w {workload} {' '.join(extra)}`".rstrip("` ") + "`")
    print(f"{'run':>3} {'median ms':>10} {'between-run':>12} {'within-run':>11} {'GB/s':>8} {'reps':>4} "
          f"{'wall s':>7}  next median inside: between / within")
    for i in range(k):
        run = one_run(engine, workload, extra)
        runs.append(run)
        if i > 0:
            prev = runs[-2]
            print(f"{'':>63}  run {i}: {'yes' if inside(run.median_s, prev.between) else 'no'} / "
                  f"{'yes' if inside(run.median_s, prev.within) else 'no'}")
        print(f"{i + 1:>3} {run.median_s * 1e3:>10.3f} {half(run.between, run.median_s):>12} "
              f"{half(run.within, run.median_s):>11} {run.gbps:>8.2f} {run.repetitions:>4} "
              f"{run.wall_s:>7.1f}", flush=True)
    pairs = list(itertools.pairwise(runs))
    between = sum(inside(b.median_s, a.between) for a, b in pairs) / len(pairs)
    within = sum(inside(b.median_s, a.within) for a, b in pairs) / len(pairs)
    spread = max(r.median_s for r in runs) / min(r.median_s for r in runs) - 1
    verdict = "PASS" if between >= TARGET else "FAIL"
    print(f"{label}: headline (between-run) coverage {between:.0%} of {len(pairs)} pairs "
          f"(target >= {TARGET:.0%}): {verdict}; within-run CI coverage {within:.0%}; medians spread "
          f"{spread:.1%}; longest run {max(r.wall_s for r in runs):.1f} s")
    return between, within


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("-k", type=int, default=6, help="consecutive runs per mode (>= 2)")
    parser.add_argument("-e", "--engine", default="numpy")
    parser.add_argument("-w", "--workload", default="lm_head:4096x65536:fp32")
    parser.add_argument("--runs", type=int, default=None, help="--runs of each run (default: run's default)")
    parser.add_argument("--mode", choices=("default", "fresh", "both"), default="both")
    args = parser.parse_args()
    if args.k < 2:
        parser.error("-k must be at least 2: coverage needs a next run")
    extra = ["--runs", str(args.runs)] if args.runs else []
    results = {}
    if args.mode in ("default", "both"):
        results["repetitions in one process"] = calibrate("repetitions in one process", args.k, args.engine,
                                                          args.workload, extra)
    if args.mode in ("fresh", "both"):
        results["--fresh-processes"] = calibrate("--fresh-processes", args.k, args.engine, args.workload,
                                                 [*extra, "--fresh-processes"])
    print()
    for label, (between, within) in results.items():
        print(f"calibration {'PASS' if between >= TARGET else 'FAIL'}: {label}: next run inside the headline "
              f"interval {between:.0%} (target >= {TARGET:.0%}), inside the within-run CI {within:.0%}")


if __name__ == "__main__":
    main()
