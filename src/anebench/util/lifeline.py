"""Child processes die with their parent, SIGKILL included.

``daemon=True`` only helps when the parent exits normally; after ``kill -9``, the OOM killer or a CI
timeout a keep-awake spinner would spin on for good and concurrent copies would wait an hour at their
barrier. Each child therefore calls :func:`die_with_parent` first thing: on Linux the kernel sends it
SIGKILL when its creator dies (``prctl(PR_SET_PDEATHSIG)``), and everywhere (macOS too) a watcher thread
sees the parent's pid change (the child is re-parented) within :data:`POLL_S` and exits.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

POLL_S = 0.2
PR_SET_PDEATHSIG = 1


def creator_info() -> tuple[int, bool]:
    """What the parent passes to a child it starts: its pid, and whether it starts it from its main
    thread (PR_SET_PDEATHSIG fires when the creating *thread* ends, so only the main thread's children
    may use it)."""
    return os.getpid(), threading.current_thread() is threading.main_thread()


def _set_death_signal() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent_pid: int) -> None:
    while True:
        time.sleep(POLL_S)
        if os.getppid() != parent_pid:
            os._exit(1)  # the parent is gone: nothing here is worth finishing


def die_with_parent(parent_pid: int, from_main_thread: bool = True) -> None:
    """Call first in a child process: it ends when ``parent_pid`` ends, however that ends."""
    if from_main_thread:
        _set_death_signal()
    if os.getppid() != parent_pid:  # the parent died before the death signal was armed
        os._exit(1)
    threading.Thread(target=_watch, args=(parent_pid,), name="anebench-parent-watch", daemon=True).start()


__all__ = ["POLL_S", "creator_info", "die_with_parent"]
