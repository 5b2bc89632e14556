"""Issue 21's "Done when" figures, each with its pass/fail and a reference measured in the same run.

    python benchmarks/bench_noise.py [--skip concurrent,sweep,interleave,latency,roofline]

Run it on an idle machine (it prints the load average before each part): the figures describe the
host, and a loaded one fails them for the host's reasons, not the tool's. About 6-10 minutes on the
project's 2-core machine. Every part runs the real CLI in a subprocess, as a user would:

1. concurrent: two 1-thread copies of lm_head:512x512:fp32 (L2-resident: independent units), at
   --runs 2000 and 20000; pass: "independent units" and every copy busy >= 90% of the common window.
   Reference: a bare two-process numpy loop's scaling (two processes' calls / one process's).
2. sweep: the default `sweep -e numpy` three times, each between two runs of the C read kernel
   (benchmarks/read_kernel.c, 1 GB); pass: the fit passes its gates, the fitted overhead >= 0 (a free
   intercept negative within two standard errors is refitted at 0, "below resolution"; one beyond them
   fails the fit), bandwidth 0.8-1.25x the mean of the kernel before and after.
3. interleave: `run --interleave` of one configuration with itself (3 times; pass: n.s. each time) and of
   numpy with 1 vs 2 BLAS threads on a head 4x the last-level cache (3 times; pass: significant each
   time); `compare FILE` pairs them round by round. Reference: the read kernel's GB/s.
4. latency: `latency -e numpy --no-sweep --store --db TMP`; pass: exit 0 and the record stored.
5. roofline: the default `roofline -e numpy`; pass: done in under 60 s with a ridge or a stated refusal
   (exit 0 or 3, never a ridge from unsteady points).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _reference  # puts src/ on the path when run from a checkout

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
RESULTS: list[tuple[str, bool]] = []


def load() -> str:
    return "load " + Path("/proc/loadavg").read_text().split()[0] if Path("/proc/loadavg").exists() else ""


def anebench(*argv: str, timeout: float = 600) -> tuple[int, str, str, float]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "anebench", *argv], capture_output=True, text=True,
                          env=ENV, timeout=timeout, check=False)
    return done.returncode, done.stdout, done.stderr, time.perf_counter() - start


def records_of(stdout: str) -> list[dict]:
    """The records of a `--json` document, each joined with its suite result: since results/3 a suite's
    analysis (a sweep's fit, a concurrency verdict) is listed once under ``suite_results``."""
    from anebench.results.suite_document import expand

    whole, problems = expand(json.loads(stdout), "stdout")
    if problems:
        raise RuntimeError("; ".join(problems))
    return whole


def verdict(name: str, ok: bool, detail: str) -> None:
    RESULTS.append((name, ok))
    print(f"  {'PASS' if ok else 'FAIL'} {name}: {detail}", flush=True)


# --- 1. concurrent --------------------------------------------------------------------------------


def _bare_copy(seconds: float, out) -> None:
    import numpy as np
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        w = np.random.default_rng(0).standard_normal((512, 512), dtype=np.float32)
        x = np.ones(512, dtype=np.float32)
        calls, end = 0, time.perf_counter() + seconds
        while time.perf_counter() < end:
            w @ x
            calls += 1
    out.put(calls)


def bare_scaling(seconds: float = 3.0) -> float:
    """Calls of two bare numpy processes together / calls of one alone, over the same time."""
    ctx = multiprocessing.get_context("spawn")
    counts = []
    for copies in (1, 2):
        queue = ctx.Queue()
        workers = [ctx.Process(target=_bare_copy, args=(seconds, queue)) for _ in range(copies)]
        for w in workers:
            w.start()
        counts.append(sum(queue.get() for _ in workers))
        for w in workers:
            w.join()
    return counts[1] / counts[0]


def part_concurrent() -> None:
    print(f"1. concurrent ({load()})", flush=True)
    print(f"  reference: bare two-process numpy loop scales {bare_scaling():.2f}x", flush=True)
    for runs in (2000, 20000):
        code, out, err, took = anebench("concurrent", "-e", "numpy", "-w", "lm_head:512x512:fp32",
                                        "--processes", "--copies", "2", "--threads-per-copy", "1",
                                        "--runs", str(runs), "--no-save", "--json")
        if code not in (0, 3):
            verdict(f"concurrent --runs {runs}", False, f"exit {code}: {err.strip()[-300:]}")
            continue
        together = [r["concurrency"] for r in records_of(out)
                    if r["concurrency"]["phase"] == "together"]
        busy = [c["busy_share"] for c in together]
        ok = together[0]["verdict"] == "independent units" and min(busy) >= 0.9
        verdict(f"concurrent --runs {runs}", ok,
                f"{together[0]['verdict']}, scaling {together[0]['scaling']:.2f}, busy "
                + ", ".join(f"{b:.0%}" for b in busy) + f" (need >= 90%), {took:.0f} s")


# --- 2. sweep -------------------------------------------------------------------------------------


def part_sweep(kernel) -> None:
    print(f"2. sweep ({load()}); reference: {kernel.name}, 1 GB", flush=True)
    for attempt in range(1, 4):
        before = kernel.gbps()
        code, out, err, took = anebench("sweep", "-e", "numpy", "--no-save", "--json", timeout=900)
        after = kernel.gbps()
        reference = (before + after) / 2
        point = records_of(out)[0]["sweep"] if out.strip() else None
        fit = point and point["fit"]
        # how the sizes were measured (interleaved rounds, or one after the other and why), each round's fit
        how = "; ".join(n for n in (point["notes"] if point else [])
                        if "interleaved round" in n or "one after the other" in n)
        if not fit:
            reason = point["fit_error"] if point else err.strip()[-300:]
            verdict(f"sweep {attempt}/3", False, f"exit {code}, fit failed: {reason}; read kernel "
                                                 f"{before:.1f} / {after:.1f} GB/s; {took:.0f} s; {how}")
            continue
        ratio = fit["bandwidth_gbps"] / reference
        overhead = fit["overhead_s"] * 1e6
        ok = code == 0 and overhead >= 0 and 0.8 <= ratio <= 1.25
        shown = "below resolution (refitted at 0)" if overhead <= 0 else f"{overhead:.0f} us"
        verdict(f"sweep {attempt}/3", ok,
                f"bandwidth {fit['bandwidth_gbps']:.1f} GB/s = {ratio:.2f}x the read kernel ({before:.1f} "
                f"before, {after:.1f} after; need 0.8-1.25x), overhead {shown} (need >= 0), "
                f"{fit['points']} fit sizes, R² {fit['r_squared']:.3f}, {took:.0f} s; {how}")


# --- 3. interleave --------------------------------------------------------------------------------


def big_head() -> str:
    """lm_head:4096xV:fp32 with the weights 4x the last-level cache (64 MiB where it is unknown)."""
    from anebench.system.host import SYSTEM_HOST

    llc = SYSTEM_HOST.info().llc_bytes or 16 * 2**20
    vocab = -(-4 * llc // (4096 * 4))
    return f"lm_head:4096x{vocab}:fp32"


def interleaved(tmp: Path, name: str, *argv: str) -> dict:
    out = tmp / f"{name}.json"
    code, _, err, _ = anebench("run", "--interleave", *argv, "--repetitions", "5", "--runs", "100",
                               "--out", str(out))
    if code != 0:
        raise RuntimeError(f"run --interleave exit {code}: {err.strip()[-300:]}")
    code, stdout, err, _ = anebench("compare", str(out), "--json")
    if code != 0:
        raise RuntimeError(f"compare exit {code}: {err.strip()[-300:]}")
    return json.loads(stdout)["pairs"][0]


def part_interleave(kernel, tmp: Path) -> None:
    head = big_head()
    print(f"3. interleave ({load()}); {head}; reference: read kernel {kernel.gbps():.1f} GB/s", flush=True)
    for attempt in range(1, 4):
        pair = interleaved(tmp, f"self{attempt}", "-e", "numpy", "-e", "numpy", "-w", head)
        ci = pair["ci95"]
        verdict(f"self-comparison {attempt}/3", pair["verdict"] == "no significant difference",
                f"{pair['verdict']}, ratio {pair['ratio']:.3f} [{ci[0]:.3f}-{ci[1]:.3f}] (need n.s.)")
    for attempt in range(1, 4):
        pair = interleaved(tmp, f"threads{attempt}", "-e", "numpy", "-w", head, "--interleave-threads", "1,2")
        ci = pair["ci95"]
        verdict(f"1 vs 2 BLAS threads {attempt}/3", pair["significant"] is True,
                f"{pair['verdict']}, ratio {pair['ratio']:.3f} [{ci[0]:.3f}-{ci[1]:.3f}] (need significant)")


# --- 4. latency, 5. roofline ----------------------------------------------------------------------


def part_latency(tmp: Path) -> None:
    print(f"4. latency ({load()})", flush=True)
    db = tmp / "store.sqlite"
    code, _, err, took = anebench("latency", "-e", "numpy", "--no-sweep", "--no-save", "--store",
                                  "--db", str(db))
    verdict("latency records ingest", code == 0 and "stored 1 record(s)" in err,
            f"exit {code}, {'stored' if 'stored 1' in err else err.strip()[-200:]}, {took:.0f} s")


def part_roofline() -> None:
    print(f"5. roofline ({load()})", flush=True)
    code, _, err, took = anebench("roofline", "-e", "numpy", "--no-save")
    said = next((line for line in err.splitlines()
                 if line.startswith("numpy:cpu") and ("ridge at" in line or "ridge not found" in line)), "")
    verdict("default roofline on a CPU", code in (0, 3) and took < 60,
            f"exit {code} in {took:.0f} s (need < 60 s): {said[:300]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skip", default="", help="parts to skip, comma-separated")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    kernel = _reference.ReadKernel(2**30)
    print(_reference.blas_line())
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        if "concurrent" not in skip:
            part_concurrent()
        if "sweep" not in skip:
            part_sweep(kernel)
        if "interleave" not in skip:
            part_interleave(kernel, tmp)
        if "latency" not in skip:
            part_latency(tmp)
        if "roofline" not in skip:
            part_roofline()
    passed = sum(ok for _, ok in RESULTS)
    print(f"issue 21: {passed} of {len(RESULTS)} figures pass ({load()} at the end)")
    sys.exit(0 if passed == len(RESULTS) else 1)


if __name__ == "__main__":
    main()
