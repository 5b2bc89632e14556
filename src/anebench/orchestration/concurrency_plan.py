"""What `anebench concurrent` will run, decided and checked before anything is loaded.

Copies run as processes where threads could not overlap (an engine whose call holds the GIL, such as
a predict that holds it) or could crash (MLX is not thread-safe), and always with several devices (copy i on
device i, in its own process). A CPU engine's copies get cores / copies threads each by default, so two
copies on two cores do not starve each other. Memory is checked per device (a device's own memory, or
host memory where the weights live there).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace

from ..engines.base import Engine
from ..errors import UserError, setting
from ..system.host import SYSTEM_HOST, Host
from ..workloads import Workload
from .preflight import MEMORY_HEADROOM, preflight_memory

CPU_DEVICES = ("cpu",)
HOST = "host memory"


@dataclass(frozen=True)
class MemoryCheck:
    pool: str  # a device with memory of its own, or HOST
    copies: int
    needed_bytes: float
    free_bytes: int


@dataclass(frozen=True)
class ConcurrencyPlan:
    engine: Engine
    workload: Workload
    devices: list[str]  # copy i runs on devices[i]
    mode: str  # "threads" | "processes"
    why: str  # why this mode
    threads_per_copy: int | None  # None: the engine's own default (not set)
    memory: list[MemoryCheck]

    @property
    def copies(self) -> int:
        return len(self.devices)


def resolve_devices(engine: Engine, devices: str) -> list[str]:
    """--devices cuda:0,cuda:1 or all (every device of the engine here but the CPU)."""
    here = engine.devices()
    if devices.strip() == "all":
        chosen = [d for d in here if d not in CPU_DEVICES]
        if not chosen:
            raise UserError(f"{setting('devices')} all: {engine.name} has no accelerator here (devices here: "
                            f"{', '.join(here) or 'none'})")
        return chosen
    chosen = [d.strip() for d in devices.split(",") if d.strip()]
    if not chosen:
        raise UserError(f"{setting('devices')}: give devices separated by commas (e.g. cuda:0,cuda:1) or all")
    for device in chosen:
        if device not in here:
            raise UserError(f"{setting('devices')} {device}: not a device of {engine.name} here (devices "
                            f"here: {', '.join(here) or 'none'})")
    repeated = sorted(d for d, n in Counter(chosen).items() if n > 1)
    if repeated:
        raise UserError(
            f"{setting('devices')}: {', '.join(repeated)} given twice; use {setting('copies')} for copies "
            "on one device"
        )
    return chosen


def choose_mode(engine: Engine, requested: str | None, several_devices: bool) -> tuple[str, str]:
    """(mode, why); refuses in one line a request for threads that could not overlap or run safely."""
    if not engine.releases_gil:
        why = (f"{engine.name}'s call holds the Python GIL for the whole call, so copies in threads of one "
               "process would run one at a time")
        if requested == "threads":
            raise UserError(f"{setting('threads')}: {why}; its copies run as processes")
        return "processes", why
    if not engine.thread_safe:
        why = f"{engine.name} is not thread-safe"
        if requested == "threads":
            raise UserError(f"{setting('threads')}: {why}; its copies run as processes")
        return "processes", why
    if several_devices:
        why = "each device's copy runs in its own process"
        if requested == "threads":
            raise UserError(f"{setting('threads')}: with {setting('devices')} {why}")
        return "processes", why
    if requested == "processes":
        return "processes", "asked for (--processes)"
    return "threads", f"{engine.name}'s call releases the GIL, so threads overlap"


def threads_for(engine: Engine, devices: list[str], requested: int | None,
                host: Host = SYSTEM_HOST) -> int | None:
    """--threads-per-copy, or cores / copies for CPU copies (at least 1); None where not set."""
    if requested is not None:
        if engine.thread_control is None:
            raise UserError(f"{setting('threads_per_copy')}: {engine.name} has no setting for its threads")
        return requested
    if engine.thread_control is None or any(d not in CPU_DEVICES for d in devices):
        return None
    return max(host.usable_cores() // len(devices), 1)


def check_memory(engine: Engine, devices: list[str], workload: Workload,
                 host: Host = SYSTEM_HOST) -> list[MemoryCheck]:
    """Every copy is resident at once: per device with memory of its own, and host memory for the rest."""
    per_device = Counter(devices)
    pools: dict[str, list[tuple[str, int]]] = {}
    for device, copies in per_device.items():
        pool = device if engine.free_memory(device) is not None else HOST
        pools.setdefault(pool, []).append((device, copies))
    checks = []
    for pool, members in pools.items():
        copies = sum(n for _, n in members)
        needed = sum(engine.bytes_for(workload, d) * n for d, n in members) * MEMORY_HEADROOM
        free = engine.free_memory(pool) if pool != HOST else host.available_memory_bytes()
        checks.append(MemoryCheck(pool, copies, needed, free or 0))
        # The same head with every copy's rows: same dtype and quantization, so the same bytes per row.
        total = replace(workload, name=f"{copies} copies of {workload.name}", vocab=workload.vocab * copies,
                        source=None)
        if pool == HOST:
            preflight_memory(engine, members[0][0], total, host)
        else:
            _device_fits(engine, pool, total, needed, free or 0)
    return checks


def _device_fits(engine: Engine, device: str, total: Workload, needed: float, free: int) -> None:
    if needed > free:
        raise UserError(f"workload {total.name!r} needs {needed / 1e9:.2f} GB on {engine.name}:{device}, but "
                        f"only {free / 1e9:.2f} GB of its memory is free; choose a smaller workload")


def plan_concurrent(engine: Engine, device: str, workload: Workload, copies: int | None = None,
                    mode: str | None = None, devices: str | None = None,
                    threads_per_copy: int | None = None, host: Host = SYSTEM_HOST) -> ConcurrencyPlan:
    """Everything `concurrent` decides before loading: placement, mode, threads and memory."""
    if devices is not None:
        placed = resolve_devices(engine, devices)
        if copies is not None and copies != len(placed):
            raise UserError(f"{setting('copies')} {copies}: {setting('devices')} places one copy on each of "
                            f"{len(placed)} devices")
    else:
        copies = 2 if copies is None else copies
        placed = [device] * copies
    if len(placed) < 2:
        raise UserError(f"{setting('copies')} {len(placed)}: concurrency needs at least 2 copies"
                        + (" (give at least 2 devices)" if devices is not None else ""))
    chosen, why = choose_mode(engine, mode, devices is not None)
    threads = threads_for(engine, placed, threads_per_copy, host)
    memory = check_memory(engine, placed, workload, host)
    return ConcurrencyPlan(engine, workload, placed, chosen, why, threads, memory)


def describe_plan(plan: ConcurrencyPlan) -> list[str]:
    """The plan as lines, for a dry run."""
    unit = "process" if plan.mode == "processes" else "thread"
    lines = [
        f"{plan.copies} copies of {plan.workload.name} on {plan.engine.name}, as {plan.mode} ({plan.why})"
    ]
    for i, device in enumerate(plan.devices):
        lines.append(f"copy {i}: {device}, its own {unit}, seed + {i}")
    threads = (f"{plan.threads_per_copy} per copy ({plan.engine.thread_control})" if plan.threads_per_copy
               else "the engine's default")
    lines.append(f"threads: {threads}")
    for check in plan.memory:
        lines.append(f"memory on {check.pool}: {check.copies} copies need {check.needed_bytes / 1e9:.3f} GB, "
                     f"{check.free_bytes / 1e9:.3f} GB free")
    return lines
