"""Decode: anebench's stream measurement and prediction beside a real model's decode, same config, same run.

    python benchmarks/bench_decode.py [--model qwen3-0.6b] [--tokens 16] [--runs 10] [--layers N]

A real model is made with transformers' config classes and random weights (nothing downloaded), fp32 on the
CPU, and decoded with torch ``generate`` (KV cache, greedy, batch 1): its decode tok/s is the time of
``1 + tokens`` new tokens minus the time of 1 (prefill and the first token), over ``tokens``. Beside it:
anebench's decode stream of the same config measured on numpy and torch, and the tok/s predicted from a
small sweep run here. Prints each ratio and the load average (the targets hold on an idle machine:
predicted / measured stream within 15%). Needs the `bench` extra (transformers) and torch.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from anebench.engines import usable_engine
from anebench.engines.decode import DecodeEngine
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.orchestration.suites.common import no_progress
from anebench.orchestration.suites.decode import DecodeTarget, predict, quick_curve
from anebench.workloads.model_config import ModelConfig, resolve_model
from anebench.workloads.models import decode_workload

TARGET = 0.15  # |predicted / measured - 1| for the stream, on an idle machine


def load() -> str:
    with open("/proc/loadavg") as handle:
        return handle.read().split()[0]


def real_model(facts: ModelConfig):
    """A transformers model of the config's shapes with random weights, fp32, eval mode."""
    import torch
    import transformers

    config = transformers.AutoConfig.for_model(
        facts.family,
        hidden_size=facts.hidden,
        intermediate_size=facts.intermediate,
        num_hidden_layers=facts.layers,
        num_attention_heads=facts.heads,
        num_key_value_heads=facts.kv_heads,
        head_dim=facts.head_dim,
        vocab_size=facts.vocab,
        tie_word_embeddings=facts.tied,
    )
    torch.manual_seed(0)
    with torch.device("cpu"):
        model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    return model.eval()


def real_tokens_per_s(model, prompt: int, tokens: int, rounds: int = 3) -> float:
    import torch

    ids = torch.arange(1, prompt + 1).reshape(1, prompt)

    def generate(new: int) -> float:
        started = time.perf_counter()
        with torch.inference_mode():
            model.generate(
                ids,
                max_new_tokens=new,
                min_new_tokens=new,
                do_sample=False,
                use_cache=True,
                num_beams=1,
                pad_token_id=0,
            )
        return time.perf_counter() - started

    generate(2)  # warm up
    rates = [tokens / (generate(tokens + 1) - generate(1)) for _ in range(rounds)]
    return statistics.median(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen3-0.6b", help="a known config name or a config folder")
    parser.add_argument("--tokens", type=int, default=16)
    parser.add_argument("--prompt", type=int, default=8)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--layers", type=int, default=None, help="fewer layers (a smaller model, faster)")
    args = parser.parse_args()
    facts, _ = resolve_model(args.model)
    if args.layers:
        facts = replace(facts, layers=args.layers)
    depth = args.prompt + args.tokens // 2  # the mean KV depth of the real decode
    workload = decode_workload(facts, depth)
    print(f"model {facts.name} ({facts.family}, {facts.layers} layers), depth {depth}; load average {load()}")
    options = RunOptions(runs=args.runs, suite="decode")
    stream = {}
    for name in ("numpy", "torch"):
        engine = usable_engine(name)
        curve, source = quick_curve(DecodeTarget(engine, "cpu"), options, no_progress, print)
        record = measure_workload(DecodeEngine(engine), "cpu", workload, options)
        measured = 1 / (record.latency_s() or 1)
        line = f"{name}: stream {measured:.3g} tok/s ({record.gbps:.2f} GB/s, "
        line += f"{record.workload.weight_bytes / 1e6:.0f} MB/token)"
        if curve is None:
            print(f"{line}; prediction failed: {source}")
        else:
            predicted = predict(workload, name, record.engine.run_dtype, curve, source).tokens_per_s
            ratio = predicted / measured
            verdict = "within" if abs(ratio - 1) <= TARGET else "outside"
            print(
                f"{line}; predicted {predicted:.3g} tok/s; predicted / measured = {ratio:.3f} "
                f"({verdict} {TARGET:.0%})"
            )
        stream[name] = measured
    real = real_tokens_per_s(real_model(facts), args.prompt, args.tokens)
    print(f"torch generate (real model, fp32, KV cache, greedy, batch 1): {real:.3g} tok/s")
    print(
        f"stream (torch) / real decode = {stream['torch'] / real:.3f}; "
        f"stream (numpy) / real decode = {stream['numpy'] / real:.3f}; load average {load()}"
    )


if __name__ == "__main__":
    main()
