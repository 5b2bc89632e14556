"""P3 and peak memory: `anebench run` with no options, end to end, in a child process.

    python benchmarks/bench_p3_default_run.py

Targets: wall time <= 60 s; the median's within-run 95% CI within 1% of the median; peak RSS <= 1.3x the
weight bytes the run streamed. Also printed: the repetitions and the headline (between-run) interval,
whose calibration benchmarks/bench_calibration.py checks.
"""

from __future__ import annotations

import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

WALL_TARGET_S = 60.0
CI_TARGET = 0.01
RSS_TARGET = 1.3


def main() -> None:
    exe = shutil.which("anebench") or str(Path(sys.executable).parent / "anebench")
    start = time.perf_counter()
    done = subprocess.run([exe, "run", "--no-save", "--json"], capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"anebench run failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    peak_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024  # Linux reports KiB
    (record,) = json.loads(done.stdout)["results"]
    summary = record["summary"]
    ci_half = (summary["ci95_high"] - summary["ci95_low"]) / 2 / summary["median"]
    weight_bytes = record["workload"]["weight_bytes"]
    rss_ratio = peak_rss / weight_bytes
    reps = record.get("repetitions") or {}
    between = reps.get("between_run") or {}
    headline = "unknown (one repetition)"
    if between.get("low_s"):
        median = summary["median"]
        headline = f"±{max(between['high_s'] / median - 1, 1 - between['low_s'] / median):.2%}"
    print(
        f"default run: {record['engine']['name']}:{record['engine']['device']} {record['workload']['name']} "
        f"({record['engine']['run_dtype']}, {weight_bytes / 1e6:.1f} MB) {record['gbps']:.2f} GB/s, "
        f"median {summary['median'] * 1e3:.3f} ms over {record['method']['runs']} runs, "
        f"warmup {record['method']['warmup_runs']}; {len(reps.get('runs', []))} repetitions, between-run "
        f"{headline}; warnings: {'; '.join(w['text'] for w in record['warnings']) or 'none'}"
    )
    checks = [
        ("wall time", wall <= WALL_TARGET_S, f"{wall:.1f} s (target <= {WALL_TARGET_S:.0f} s)"),
        ("within-run CI half-width", ci_half <= CI_TARGET,
         f"{ci_half:.2%} of the median (target <= {CI_TARGET:.0%})"),
        ("peak RSS", rss_ratio <= RSS_TARGET,
         f"{peak_rss / 1e6:.0f} MB = {rss_ratio:.2f}x weight bytes (target <= {RSS_TARGET}x)"),
    ]
    for name, ok, text in checks:
        print(f"P3 {'PASS' if ok else 'FAIL'}: {name} {text}")


if __name__ == "__main__":
    main()
