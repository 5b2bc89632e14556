"""Memory preflight: refuse, before anything is allocated, a workload that cannot fit.

Its own module, below the session, the concurrency plan and the campaign that all check memory, so
none of them imports another for it (it once closed a cycle: session -> fresh_processes -> keepawake
-> concurrency_plan -> session)."""

from __future__ import annotations

from ..engines.base import Engine, check_streams_as_stored
from ..errors import UserError
from ..system.host import SYSTEM_HOST, Host
from ..workloads import Workload

MEMORY_HEADROOM = 1.15  # weights plus the engine's own buffers and the generator's block


def preflight_memory(engine: Engine, device: str, workload: Workload, host: Host = SYSTEM_HOST) -> None:
    """Refuse, before allocating anything, a workload the engine cannot stream as stored or one larger
    than the memory free for it."""
    check_streams_as_stored(engine, workload, device)
    needed = engine.bytes_for(workload, device) * MEMORY_HEADROOM
    free = engine.free_memory(device)
    if free is None:  # the weights live in host memory (0 free on a GPU is an answer, not "unknown")
        free = host.available_memory_bytes()
    if needed > free:
        raise UserError(
            f"workload {workload.name!r} needs {needed / 1e9:.2f} GB for its weights on "
            f"{engine.name}:{device}, but only {free / 1e9:.2f} GB is free; choose a smaller workload"
        )
