"""Describe the running host: OS, CPU, memory, caches, BLAS, power, Rosetta, chip."""

from __future__ import annotations

import ctypes
import errno
import hashlib
import os
import platform
import re
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import psutil

from ..model import HostInfo, HostState, RecordWarning
from ..util.seam import Seam
from .blas import blas_libraries


def sysctl(name: str) -> str | None:
    """A macOS sysctl value, or None where it does not exist (or this is not macOS)."""
    if sys.platform != "darwin":
        return None
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else None


def _linux_cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def _size_to_bytes(text: str) -> int | None:
    match = re.fullmatch(r"(\d+)\s*([KMG]?)", text.strip())
    if not match:
        return None
    return int(match[1]) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match[2]]


def last_level_cache_bytes() -> int | None:
    """The largest cache the CPU reports (Linux sysfs, macOS sysctl); None where unknown."""
    if sys.platform == "darwin":
        # Apple silicon has no L3 for the CPU; the SLC is not reported, so the L2 is the best known bound.
        for key in ("hw.perflevel0.l2cachesize", "hw.l3cachesize", "hw.l2cachesize"):
            value = sysctl(key)
            if value and value.isdigit() and int(value) > 0:
                return int(value)
        return None
    best = None
    for index in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*"):
        try:
            size = _size_to_bytes((index / "size").read_text())
        except OSError:
            continue
        if size and (best is None or size > best):
            best = size
    return best


def power_state() -> tuple[str | None, bool | None]:
    """('ac' | 'battery' | None, low-power mode or None) where readable without privileges."""
    source = None
    try:
        battery = psutil.sensors_battery()
    except (AttributeError, NotImplementedError, OSError):
        battery = None
    if battery is not None:
        source = "ac" if battery.power_plugged else "battery"
    low_power = None
    if sys.platform == "darwin":
        try:
            out = subprocess.run(
                ["pmset", "-g"], capture_output=True, text=True, timeout=5, check=False
            ).stdout
            match = re.search(r"lowpowermode\s+(\d)", out)
            low_power = bool(int(match[1])) if match else None
        except (OSError, subprocess.TimeoutExpired):
            pass
    elif source is None:
        source = "ac"  # a machine with no battery runs on mains power
    return source, low_power


@lru_cache(maxsize=1)
def describe_host() -> HostInfo:
    if sys.platform == "darwin":
        os_name, os_version = "macOS", platform.mac_ver()[0]
        cpu_model = sysctl("machdep.cpu.brand_string") or platform.processor()
        machine_model = sysctl("hw.model")
    else:
        os_name, os_version = platform.system(), platform.release()
        cpu_model, machine_model = _linux_cpu_model(), None
    chip = cpu_model if cpu_model.startswith("Apple ") else None
    source, low_power = power_state()
    identity = "|".join([platform.node(), os_name, platform.machine(), cpu_model, str(machine_model)])
    return HostInfo(
        os=os_name,
        os_version=os_version,
        arch=platform.machine(),
        cpu_model=cpu_model[:200],
        chip=chip,
        machine_model=machine_model,
        cores_physical=psutil.cpu_count(logical=False),
        cores_logical=psutil.cpu_count(logical=True),
        memory_bytes=psutil.virtual_memory().total,
        llc_bytes=last_level_cache_bytes(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        rosetta=translated_by_rosetta(sys.platform) if sys.platform == "darwin" else None,
        blas=blas_libraries(),
        power_source=source,
        low_power_mode=low_power,
        fingerprint=hashlib.sha256(identity.encode()).hexdigest()[:16],
    )


def available_memory_bytes() -> int:
    return psutil.virtual_memory().available


def cpu_governor(root: Path = Path("/sys/devices/system/cpu/cpu0/cpufreq")) -> str | None:
    try:
        return (root / "scaling_governor").read_text().strip() or None
    except OSError:
        return None


def usable_cores() -> int:
    """The cores this process may run on: its CPU affinity where the OS has one (a container or taskset
    may allow fewer than the machine has), else every logical core."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def busy_threshold(cores: int | None) -> float:
    """Load average above which a measurement is taken on a busy machine: half the logical cores."""
    return max(cores or 1, 1) / 2


class Host:
    """The machine a run measures on: its facts, its free memory and its state now.

    One object per run is passed down (``RunOptions.host``), so tests give a fake host instead of
    patching the functions each module imported.
    """

    def info(self) -> HostInfo:
        return describe_host()

    def available_memory_bytes(self) -> int:
        return available_memory_bytes()

    def usable_cores(self) -> int:
        return usable_cores()

    def platform(self) -> PlatformFacts:
        return detect_platform()

    def state(self) -> HostState:
        try:
            load: float | None = os.getloadavg()[0]
        except (AttributeError, OSError):
            load = None
        try:
            freq = psutil.cpu_freq()
        except (AttributeError, NotImplementedError, OSError):
            freq = None
        source, _ = power_state()
        cores = self.info().cores_logical
        return HostState(
            load_average_1m=load,
            cpu_freq_mhz=freq.current if freq and freq.current else None,
            cpu_freq_max_mhz=freq.max if freq and freq.max else None,
            governor=cpu_governor(),
            power_source=source,
            busy=None if load is None else load > busy_threshold(cores),
        )


# --- Platform facts and the active host (the seam tests state a host through) ---------------------------


@dataclass(frozen=True)
class PlatformFacts:
    """What this Python runs on, as preflight, power and the engines ask it: read once from the real
    machine (``detect_platform``) or stated by a test (tests/fakehost.py)."""

    system: str  # sys.platform: "darwin", "linux", "win32"
    machine: str  # what this interpreter runs as: "arm64", "x86_64" (x86_64 too under Rosetta)
    macos_version: tuple[int, ...] = ()  # (15, 5); () off macOS or where unknown
    rosetta: bool = False  # an x86_64 Python translated on Apple silicon (sysctl.proc_translated = 1)
    chip: str | None = None  # "Apple M4 Pro"; None where the CPU is not an Apple chip


def _libc():
    """The C library, for sysctlbyname (macOS's libSystem; elsewhere a libc without that function)."""
    import ctypes.util

    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def proc_translated(libc=None) -> int | None:
    """sysctl.proc_translated read in-process, as Apple documents it ("About the Rosetta translation
    environment"): sysctlbyname with an int buffer. 1: translated, 0: native (ENOENT: a kernel without
    Rosetta, an Intel Mac), None: could not be read here (no sysctlbyname, another error).
    """
    try:
        function = (libc or _libc()).sysctlbyname
    except (OSError, AttributeError):
        return None
    value, size = ctypes.c_int(0), ctypes.c_size_t(ctypes.sizeof(ctypes.c_int))
    ctypes.set_errno(0)
    try:
        status = function(b"sysctl.proc_translated", ctypes.pointer(value), ctypes.pointer(size), None,
                          ctypes.c_size_t(0))
    except (OSError, ctypes.ArgumentError):
        return None
    if status == -1:
        return 0 if ctypes.get_errno() == errno.ENOENT else None
    return value.value


def translated_by_rosetta(system: str, libc=None,
                          sysctl_command: Callable[[str], str | None] = sysctl) -> bool:
    """The in-process sysctlbyname first; where it cannot answer, the `sysctl` command (a child process).

    The published tool compares two machine names that both read x86_64 under Rosetta and so never
    notices translation; the kernel's own flag does, so that is what is asked."""
    if system != "darwin":
        return False
    translated = proc_translated(libc)
    if translated is None:
        return sysctl_command("sysctl.proc_translated") == "1"
    return translated == 1


def _macos_version() -> tuple[int, ...]:
    text = platform.mac_ver()[0]
    return tuple(int(part) for part in text.split(".") if part.isdigit()) if text else ()


@lru_cache(maxsize=1)
def detect_platform() -> PlatformFacts:
    """This machine's platform facts (read once: they do not change while the process runs)."""
    system = sys.platform
    return PlatformFacts(
        system=system,
        machine=platform.machine(),
        macos_version=_macos_version() if system == "darwin" else (),
        rosetta=translated_by_rosetta(system),
        chip=describe_host().chip,
    )


NATIVE_HOST = Host()
# The host this process measures on: the native machine, or the one stated with use_host, whose facts
# the library answers wherever it asks SYSTEM_HOST (the CLI, preflight, power) while the block runs: a test
# states a Mac, a Linux box or a busy machine there instead of patching what each module imported.
HOST_SEAM: Seam[Host] = Seam(NATIVE_HOST)
active_host = HOST_SEAM.get
use_host = HOST_SEAM.use


class ActiveHost(Host):
    """``SYSTEM_HOST``: every public attribute is the active host's, so a default ``host=SYSTEM_HOST``
    follows the host a test states without each caller taking one."""

    def __getattribute__(self, name: str):
        if name.startswith("_"):
            return object.__getattribute__(self, name)
        return getattr(active_host(), name)


SYSTEM_HOST: Host = ActiveHost()


def busy_warning(state: HostState, cores: int | None) -> RecordWarning | None:
    """The warning for a run started on a busy machine (None when it is not, or when unknown)."""
    if not state.busy or state.load_average_1m is None:
        return None
    return RecordWarning(kind="busy", text=(
        f"busy machine: load average {state.load_average_1m:.2f} is above half the {cores or 1} logical "
        "cores when measuring started; figures may be far below this host's"))


def host_label() -> str:
    """A short file-name-safe label for the host, used in default result file names."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", platform.node() or "host")[:40] or "host"


def catalog_chip(host: HostInfo | None = None):
    """This host's entry in the chip catalog (anebench.system.chips), or None where it is not listed.

    Only the chip name is used (e.g. "Apple M4 Pro"); a GPU's entry comes from the record's device."""
    from .chips import lookup_chip

    return lookup_chip((host or SYSTEM_HOST.info()).chip)
