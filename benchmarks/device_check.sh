#!/usr/bin/env bash
# device_check.sh: one prepared check of the CUDA path, under 5 minutes on one GPU, offline.
#
# 1. what the machine offers: nvidia-smi, python, whether a CUDA build of torch and anebench import
# 2. the CUDA-marked tests
# 3. a read-ceiling kernel per GPU (x.sum() over a tensor >> L2, timed with CUDA events): the GPU's read
#    reference, measured in this run
# 4. `anebench run -e torch -d cuda:i -w llama_lm_head --power` on every GPU (per-call, device-time and
#    streaming figures, NVML state, energy window)
# 5. the multi-device suite, if this checkout has `anebench concurrent --devices`
# Figures with their expected ranges go to $OUT if set, else ./device_check_out/ (summary.txt, *.json).
# Without a GPU it ends with a "no GPU here" report and exit 0. Nothing is downloaded: the checkout's
# src/ is put on PYTHONPATH and the installed packages are used as they are.
#
# Environment: PYTHON (interpreter; default: the checkout's .venv, else python3), NVIDIA_SMI (default
# nvidia-smi), OUT (output folder).
set -u

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OUT_DIR="${OUT:-./device_check_out}"
mkdir -p "$OUT_DIR"
OUT_DIR="$(cd "$OUT_DIR" && pwd)"
REPORT="$OUT_DIR/summary.txt"
: >"$REPORT"
NVSMI="${NVIDIA_SMI:-nvidia-smi}"
if [ -n "${PYTHON:-}" ]; then
    PY="$PYTHON"
elif [ -x "$REPO/.venv/bin/python" ]; then
    PY="$REPO/.venv/bin/python"
else
    PY="$(command -v python3 || command -v python || echo python3)"
fi
export PYTHONPATH="$REPO/src${PYTHONPATH:+:$PYTHONPATH}"

say() { echo "$*" | tee -a "$REPORT"; }
section() { say ""; say "== $* =="; }
STARTED=$(date +%s)

section "machine"
say "host: $(uname -srm)"
say "checkout: $REPO ($(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo 'not a git checkout'))"
GPU_LINES=""
if command -v "$NVSMI" >/dev/null 2>&1; then
    GPU_LINES="$("$NVSMI" -L 2>/dev/null | grep '^GPU ' || true)"
    "$NVSMI" >"$OUT_DIR/nvidia-smi.txt" 2>&1 || true
    QUERY=index,name,uuid,pci.bus_id,driver_version,memory.total,clocks.max.sm,clocks.max.mem
    QUERY=$QUERY,power.limit,persistence_mode,mig.mode.current,ecc.mode.current
    "$NVSMI" --query-gpu="$QUERY" --format=csv >"$OUT_DIR/gpus.csv" 2>&1 || true
    say "nvidia-smi: $(head -1 "$OUT_DIR/nvidia-smi.txt" 2>/dev/null | cut -c1-100)"
    sed 's/^/  /' "$OUT_DIR/gpus.csv" | tee -a "$REPORT"
else
    say "nvidia-smi: not found ($NVSMI)"
fi
GPU_COUNT=$(printf '%s' "$GPU_LINES" | grep -c '^GPU ' || true)
say "GPUs listed by nvidia-smi: $GPU_COUNT"
if ! command -v "$PY" >/dev/null 2>&1; then
    say "python: not found ($PY)"
    PY_OK=0
else
    say "python: $("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])' 2>&1)"
    PY_OK=1
fi

TORCH_CUDA=0
if [ "$PY_OK" = 1 ]; then
    TORCH_LINE="$("$PY" - 2>&1 <<'EOF'
try:
    import torch
except Exception as exc:
    print(f"torch: not importable ({type(exc).__name__}: {exc})")
    print("CUDA_DEVICES=0")
else:
    ok = torch.cuda.is_available()
    count = torch.cuda.device_count() if ok else 0
    build = torch.version.cuda or "none (a CPU build)"
    print(f"torch {torch.__version__}: CUDA build {build}; CUDA available: {ok}; devices: {count}")
    print(f"CUDA_DEVICES={count}")
EOF
)"
    say "$(printf '%s\n' "$TORCH_LINE" | grep -v '^CUDA_DEVICES=')"
    TORCH_CUDA=$(printf '%s\n' "$TORCH_LINE" | sed -n 's/^CUDA_DEVICES=//p' | tail -1)
    TORCH_CUDA=${TORCH_CUDA:-0}
    for pkg in pynvml pytest pydantic click rich; do
        if "$PY" -c "import $pkg" >/dev/null 2>&1; then say "$pkg: importable"; else say "$pkg: missing"; fi
    done
    ANEBENCH_LINE="$("$PY" -c 'import anebench.cli, anebench as a; print(a.__version__, "from", a.__file__)' \
        2>&1 | tail -1)"
    say "anebench: $ANEBENCH_LINE"
fi

if [ "$GPU_COUNT" = 0 ] && [ "$TORCH_CUDA" = 0 ]; then
    section "result"
    say "no GPU here: nvidia-smi lists no GPU and torch sees no CUDA device; nothing measured"
    exit 0
fi
if [ "$TORCH_CUDA" = 0 ]; then
    section "result"
    say "torch with CUDA is missing: $GPU_COUNT GPU(s) listed by nvidia-smi, but no CUDA build of torch is"
    say "importable with $PY (install a CUDA torch, or set PYTHON=); nothing measured"
    exit 0
fi
if ! "$PY" -c 'import anebench.cli' >/dev/null 2>&1; then
    section "result"
    say "anebench does not import with $PY (missing dependencies above); only the machine was reported"
    exit 0
fi
FAILED=0

section "CUDA-marked tests"
if "$PY" -c 'import pytest' >/dev/null 2>&1; then
    (cd "$REPO" && timeout 150 "$PY" -m pytest -m cuda -q -p no:cacheprovider tests) \
        >"$OUT_DIR/cuda_tests.txt" 2>&1
    rc=$?
    tail -3 "$OUT_DIR/cuda_tests.txt" | tee -a "$REPORT"
    [ "$rc" = 0 ] || { say "CUDA tests: FAILED (rc $rc; $OUT_DIR/cuda_tests.txt)"; FAILED=1; }
else
    say "skipped: pytest is not installed"
fi

section "read ceiling (x.sum() over >= 64x L2, CUDA events)"
timeout 120 "$PY" - "$OUT_DIR/read_ceiling.json" 2>&1 <<'EOF' | tee -a "$REPORT"
import json, statistics, sys, time
import torch

found = {}
for i in range(torch.cuda.device_count()):
    props = torch.cuda.get_device_properties(i)
    with torch.cuda.device(i):
        free, _ = torch.cuda.mem_get_info(i)
        nbytes = min(max(64 * props.L2_cache_size, 2 << 30), free // 4)
        x = torch.ones(nbytes // 2, dtype=torch.float16, device=f"cuda:{i}")
        stream = torch.cuda.current_stream(i)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < 2.0:  # warm up: clocks settle
            x.sum()
        torch.cuda.synchronize(i)
        samples = []
        for _ in range(30):
            start.record(stream)
            for _ in range(10):
                x.sum()
            end.record(stream)
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3 / 10)
        best, median = min(samples), statistics.median(samples)
        size = x.numel() * 2
        found[f"cuda:{i}"] = {"name": props.name, "bytes": size, "seconds": samples,
                              "gbps_median": size / median / 1e9, "gbps_best": size / best / 1e9}
        print(f"cuda:{i} {props.name}: {size / median / 1e9:.0f} GB/s median "
              f"({size / best / 1e9:.0f} best) over {size / 1e9:.2f} GB")
        del x
        torch.cuda.empty_cache()
json.dump(found, open(sys.argv[1], "w"), indent=1)
EOF
[ -s "$OUT_DIR/read_ceiling.json" ] || { say "read ceiling: FAILED"; FAILED=1; }

section "anebench run -e torch -w llama_lm_head --power, every GPU"
for ((i = 0; i < TORCH_CUDA; i++)); do
    timeout 150 "$PY" -m anebench run -e torch -d "cuda:$i" -w llama_lm_head --power \
        --out "$OUT_DIR/run_cuda$i.json" >"$OUT_DIR/run_cuda$i.txt" 2>&1
    rc=$?
    tail -12 "$OUT_DIR/run_cuda$i.txt" | tee -a "$REPORT"
    [ "$rc" = 0 ] || { say "run on cuda:$i: FAILED (rc $rc)"; FAILED=1; }
done

section "multi-device suite"
if "$PY" -m anebench concurrent --help 2>/dev/null | grep -q -- '--devices'; then
    timeout 240 "$PY" -m anebench concurrent -e torch --devices all -w llama_lm_head --runs 100 \
        --out "$OUT_DIR/concurrent.json" >"$OUT_DIR/concurrent.txt" 2>&1
    rc=$?
    tail -15 "$OUT_DIR/concurrent.txt" | tee -a "$REPORT"
    [ "$rc" = 0 ] || { say "concurrent --devices: FAILED (rc $rc)"; FAILED=1; }
else
    say "skipped: this checkout's \`anebench concurrent\` has no --devices option"
fi

section "figures against expected ranges"
"$PY" "$REPO/benchmarks/device_figures.py" "$OUT_DIR" 2>&1 | tee -a "$REPORT"
section "result"
say "done in $(( $(date +%s) - STARTED )) s; figures in $OUT_DIR"
say "(summary.txt, figures.json, read_ceiling.json, run_cuda*.json, nvidia-smi.txt)"
[ "$FAILED" = 0 ] && say "all steps ran" || say "some steps FAILED (see above)"
exit "$FAILED"
