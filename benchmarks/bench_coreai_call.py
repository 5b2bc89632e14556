"""What driving Core AI's async InferenceFunction costs per call: the coreai engine's way (one event loop made
at prepare, ``run_until_complete`` per call) against a new loop per call (``asyncio.run``), the reference
measured in the same run. Target: the engine's way adds <= 1/4 of asyncio.run's per-call cost.

    python benchmarks/bench_coreai_call.py [--calls N]

The awaited function is a stand-in that yields to the loop once and returns (as a call whose result
arrives from another thread does), so the figures are the driver's cost alone, not the model's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

TARGET_RATIO = 0.25


async def inference(inputs: dict) -> dict:
    await asyncio.sleep(0)  # the result arrives later, through the loop
    return inputs


def per_call_seconds(drive, calls: int) -> float:
    inputs = {"hidden_states": None}
    rounds = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            drive(inference(inputs))
        rounds.append((time.perf_counter() - started) / calls)
    return statistics.median(rounds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    loop = asyncio.new_event_loop()
    try:
        reused = per_call_seconds(loop.run_until_complete, args.calls)
    finally:
        loop.close()
    fresh = per_call_seconds(asyncio.run, args.calls)
    ratio = reused / fresh
    print(f"reference: asyncio.run per call (a new loop each time): {fresh * 1e6:.1f} us")
    print(f"coreai engine: run_until_complete on one loop: {reused * 1e6:.1f} us per call")
    verdict = "ok" if ratio <= TARGET_RATIO else "FAIL"
    print(f"ratio {ratio:.3f} (target <= {TARGET_RATIO}): {verdict}")
    raise SystemExit(0 if ratio <= TARGET_RATIO else 1)


if __name__ == "__main__":
    main()
