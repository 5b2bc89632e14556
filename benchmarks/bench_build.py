"""Building the published Core ML heads here: llama_lm_head fp16 <= 30 s, lut6 <= 60 s, peak RSS <= 2.5x.

    python benchmarks/bench_build.py [--only fp16|lut6] [--keep DIR]

Each build runs in a fresh process (so its peak RSS is its own) into a temporary cache that is deleted
afterwards. The reference, measured in the same run, is generating the same fp16 weights split by split
without building anything: build / generate says what the Core ML writing itself costs. The published
sizes (weight.bin 1,050,673,728 and 396,055,616 bytes) are checked too. Peak RSS is compared with the
bundle's weight bytes and, for lut6, also with its fp16 source bytes.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))

BUILDS = {
    # workload: (seconds target, published weight.bin bytes, weight bytes the program reads)
    "fp16": ("llama_lm_head", 30.0, 1_050_673_728, 1_050_673_152),
    "lut6": ("llama_lm_head_lut6", 60.0, 396_055_616, 394_002_432 + 2_052_096),
}
RSS_LIMIT = 2.5

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
import anebench.artifacts.coreml  # noqa: F401  (imports coremltools: part of the baseline, not the build)
import coremltools  # noqa: F401
from anebench.artifacts import BuildSpec, build_or_reuse
from anebench.workloads import resolve_workload
baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
workload = resolve_workload(sys.argv[1])
if sys.argv[3] == "generate":
    started = time.perf_counter()
    spec = BuildSpec.for_workload(workload)
    for start, stop in spec.splits:
        rows = workload.weights.read_rows(start, stop).astype("float16")
        del rows
    seconds = time.perf_counter() - started
    print(json.dumps({"seconds": seconds}))
    sys.exit(0)
started = time.perf_counter()
artifact = build_or_reuse(BuildSpec.for_workload(workload), Path(sys.argv[2]))
seconds = time.perf_counter() - started
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"seconds": seconds, "peak_rss": peak, "baseline_rss": baseline,
                  "manifest": artifact.manifest, "package": str(artifact.package)}))
"""


def child(workload: str, cache: Path, mode: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, workload, str(cache), mode], capture_output=True,
                         text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"{workload} {mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=sorted(BUILDS), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="Build into this cache and keep it.")
    args = parser.parse_args()
    cache = args.keep or Path(tempfile.mkdtemp(prefix="anebench-bench-build-"))
    failures = 0
    try:
        generate = child("llama_lm_head", cache, "generate")["seconds"]
        print(f"reference: generating llama_lm_head's fp16 weights split by split: {generate:.2f} s")
        for quant in [args.only] if args.only else list(BUILDS):
            workload, target_s, published_file, weight_bytes = BUILDS[quant]
            result = child(workload, cache, "build")
            manifest = result["manifest"]
            rss_ratio = result["peak_rss"] / manifest["weight_bytes"]
            checks = {
                f"time <= {target_s:.0f} s": result["seconds"] <= target_s,
                f"peak RSS <= {RSS_LIMIT}x weight bytes": rss_ratio <= RSS_LIMIT,
                "weight.bin is the published size": manifest["weight_file_bytes"] == published_file,
                "program reads the published weight bytes": manifest["weight_bytes"] == weight_bytes,
            }
            failures += not all(checks.values())
            print(
                f"\n{workload} ({quant}, {manifest['weight_blobs']} blobs, "
                f"splits {manifest['splits'][:2]}...)"
            )
            print(
                f"  build time       {result['seconds']:8.2f} s   target {target_s:.0f} s   "
                f"ratio {result['seconds'] / target_s:.2f}   "
                f"build/generate {result['seconds'] / generate:.2f}"
            )
            print(f"  peak RSS         {result['peak_rss'] / 1e9:8.3f} GB  (after imports "
                  f"{result['baseline_rss'] / 1e9:.3f} GB; build added "
                  f"{(result['peak_rss'] - result['baseline_rss']) / 1e9:.3f} GB)")
            print(f"  RSS / weight bytes {rss_ratio:6.2f}   target <= {RSS_LIMIT}"
                  + (f"   RSS / fp16 source bytes {result['peak_rss'] / 1_050_673_152:.2f}"
                     if quant != "fp16" else ""))
            print(f"  weight bytes     {manifest['weight_bytes']:,} (program)   weight.bin "
                  f"{manifest['weight_file_bytes']:,} (published {published_file:,})")
            print(f"  sha256           {manifest['weight_sha256']}")
            for name, ok in checks.items():
                print(f"  [{'ok' if ok else 'FAIL'}] {name}")
    finally:
        if args.keep is None:
            shutil.rmtree(cache, ignore_errors=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    started = time.perf_counter()
    main()
