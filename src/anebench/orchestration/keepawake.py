"""--keep-awake: a separate process keeps one CPU core busy while calls are timed.

Wall-clock predict() understates the Neural Engine when its task is short: the CPU that waits for the
result drops into a deep idle state (~350 us to wake), and that exit latency lands in every sample.
A busy core keeps the CPU cluster out of deep idle. The spinner must be a process: a predict that
holds the GIL for the whole call, so a helper thread would wait for the lock instead of spinning. The
mitigation is recorded with its measured effect (the spinner's CPU time / wall time over the timed
window, read from the OS), and flagged as failed below KEEP_AWAKE_MIN_SHARE.
"""

from __future__ import annotations

import multiprocessing
import time
from typing import Any

import psutil

from ..engines.base import Engine
from ..model import KEEP_AWAKE_MIN_SHARE, KeepAwake, RecordWarning
from ..system.host import SYSTEM_HOST, Host
from ..util.lifeline import creator_info, die_with_parent

START_TIMEOUT_S = 60.0


def spin(flag: Any, ready: Any, parent: tuple[int, bool] | None = None) -> None:
    """The spinner's whole life: busy until the flag is set or its parent dies (a process target)."""
    if parent is not None:
        die_with_parent(*parent)  # a SIGKILLed parent must not leave a core spinning for good
    ready.set()
    while flag.value == 0:
        for _ in range(20_000):  # a few ms of pure bytecode between looks at the flag
            pass


def spinner_threads(engine: Engine, device: str, host: Host = SYSTEM_HOST) -> int | None:
    """A CPU engine's threads beside the spinner: one core fewer, so the spinner has a core of its own
    (sharing one leaves it well below its share: 0.67 measured with numpy on 2 cores). None: no limit."""
    if device != "cpu" or engine.thread_control is None:
        return None
    return max(host.usable_cores() - 1, 1)


def share_warning(section: KeepAwake) -> RecordWarning | None:
    if section.effective:
        return None
    return RecordWarning(kind="keep-awake", text=(
        f"keep-awake failed: its spinner was on a CPU {section.cpu_share:.0%} of the timed window "
        f"(< {section.min_share:.0%}); the machine was busy, so the mitigation did not hold"))


class KeepAwakeProcess:
    """Start (before warmup) and stop (after timing) a spinning process; measures its CPU share."""

    def __init__(self) -> None:
        self._process: Any = None
        self._flag: Any = None
        self._marks: dict[str, tuple[float, float]] = {}

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def start(self) -> KeepAwakeProcess:
        if self.running:
            return self
        ctx = multiprocessing.get_context("spawn")
        self._flag, ready = ctx.Value("b", 0, lock=False), ctx.Event()
        self._process = ctx.Process(
            target=spin, args=(self._flag, ready, creator_info()), name="anebench-keep-awake", daemon=True
        )
        self._process.start()
        if not ready.wait(START_TIMEOUT_S):
            self.stop()
            raise RuntimeError("the keep-awake process did not start")
        self._marks.clear()
        return self

    def _cpu_seconds(self) -> float:
        times = psutil.Process(self._process.pid).cpu_times()
        return times.user + times.system

    def mark(self, name: str) -> None:
        """Read the spinner's CPU time and the wall clock at a phase edge ("timed", "timed-end")."""
        if self.running:
            self._marks[name] = (self._cpu_seconds(), time.perf_counter())

    def section(self) -> KeepAwake | None:
        """The measured share over the timed window, or None where no window was marked."""
        if "timed" not in self._marks or "timed-end" not in self._marks:
            return None
        (cpu0, wall0), (cpu1, wall1) = self._marks["timed"], self._marks["timed-end"]
        return measured(cpu1 - cpu0, wall1 - wall0)

    def stop(self) -> None:
        if self._process is None:
            return
        self._flag.value = 1
        self._process.join(5)
        if self._process.is_alive():
            self._process.terminate()
            self._process.join(5)
        self._process = None

    def __enter__(self) -> KeepAwakeProcess:  # noqa: PYI034 - Self needs Python 3.11
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def measured(cpu_seconds: float, wall_seconds: float) -> KeepAwake:
    share = cpu_seconds / wall_seconds if wall_seconds > 0 else 0.0
    return KeepAwake(cpu_seconds=max(cpu_seconds, 0.0), wall_seconds=max(wall_seconds, 1e-9),
                     cpu_share=min(max(share, 0.0), 64.0), effective=share >= KEEP_AWAKE_MIN_SHARE)
