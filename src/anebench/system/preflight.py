"""Can this host reach the Neural Engine? Clear answers before any work: macOS, Rosetta, Intel Mac.

The published tool compares two machine names that both read x86_64 under Rosetta and so never
notices translation; the kernel's own flag (sysctl.proc_translated) does, so that is what we ask: in
process through sysctlbyname (Apple's recipe), or, where that cannot answer, with the `sysctl` command.
"""

from __future__ import annotations

import ctypes
import errno
import platform
import sys

from ..errors import UserError
from . import host

MIN_MACOS = (15, 0)  # the bundles are iOS18 / macOS 15 ML programs (per-grouped-channel LUTs)
MIN_MACOS_COREAI = (27, 0)  # Core AI, Apple's newer ML framework, ships with macOS 27

ROSETTA_MESSAGE = (
    "this Python is an x86_64 build running under Rosetta 2 (sysctl.proc_translated = 1): the Neural "
    "Engine is unreachable from it and every figure would be a translated one. Use a native arm64 Python "
    "(python.org's universal2 installer, Homebrew's in /opt/homebrew, or `arch -arm64 python3 -m venv "
    ".venv`), check that `python3 -c 'import platform; print(platform.machine())'` prints arm64, and "
    "reinstall anebench there"
)
NOT_MACOS_MESSAGE = (
    "{framework} prediction needs macOS (this host runs {system}); `anebench build` still writes the "
    "bundles here, run them on a Mac"
)
INTEL_MESSAGE = "this Mac has an Intel CPU and no Neural Engine: {framework} can use only its CPU and GPU"


def _system() -> str:
    return sys.platform


def _machine() -> str:
    return platform.machine()


def _macos_version() -> tuple[int, ...]:
    text = platform.mac_ver()[0]
    return tuple(int(part) for part in text.split(".") if part.isdigit()) if text else ()


def on_macos() -> bool:
    return _system() == "darwin"


def machine() -> str:
    """The machine this Python runs as (arm64, x86_64), as the preflight seam states it."""
    return _machine()


def macos_version_text() -> str:
    """The running macOS version ("15.5"), "" off macOS or where unknown, as the preflight seam states it."""
    return ".".join(map(str, _macos_version())) if on_macos() else ""


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


def under_rosetta() -> bool:
    """The in-process sysctlbyname first; where it cannot answer, the `sysctl` command (a child process)."""
    if not on_macos():
        return False
    translated = proc_translated()
    if translated is None:
        return bool(host.running_under_rosetta())
    return translated == 1


def apple_silicon() -> bool:
    """Native arm64, or translated (Rosetta only exists on Apple silicon)."""
    return on_macos() and (_machine() == "arm64" or under_rosetta())


def intel_mac() -> bool:
    return on_macos() and not apple_silicon()


def check_native_host() -> None:
    """Stop before any work under Rosetta: every engine's figures would be those of translated code."""
    if under_rosetta():
        raise UserError(ROSETTA_MESSAGE)


def prediction_problem(framework: str) -> str | None:
    """Why ``framework`` (the engine's, as text names it) cannot predict here: the bundles are macOS 15
    ML programs run natively; None when it can."""
    if not on_macos():
        system = {"linux": "Linux", "win32": "Windows"}.get(_system(), _system())
        return NOT_MACOS_MESSAGE.format(framework=framework, system=system)
    if under_rosetta():
        return ROSETTA_MESSAGE
    version = _macos_version()
    if version and version < MIN_MACOS:
        return (
            f"the bundles are macOS 15 (iOS18) ML programs and this Mac runs macOS "
            f"{'.'.join(map(str, version))}; update macOS to run them"
        )
    return None


def coreai_problem(older_macos_hint: str = "") -> str | None:
    """Why Core AI cannot specialise and run an .aimodel here (macOS 27+, native), or None when it can."""
    if not on_macos():
        system = {"linux": "Linux", "win32": "Windows"}.get(_system(), _system())
        return (f"Core AI needs macOS 27 (this host runs {system}); `anebench build --engine coreai` "
                "still writes the .aimodel assets here, run them on a Mac with macOS 27")
    if under_rosetta():
        return ROSETTA_MESSAGE
    version = _macos_version()
    if not version or version < MIN_MACOS_COREAI:
        running = ".".join(map(str, version)) if version else "an unknown version"
        return f"Core AI needs macOS 27 (this Mac runs macOS {running}){older_macos_hint}"
    return None


def ane_problem(framework: str) -> str | None:
    """Why the Neural Engine in particular is out of reach through ``framework`` (which may still run)."""
    intel = INTEL_MESSAGE.format(framework=framework) if intel_mac() else None
    return prediction_problem(framework) or intel


ANE_CORES_PER_ENGINE = 16


def neural_engine_count(chip: str | None) -> int:
    """Neural Engines on the chip: an Ultra joins two dies of 16 ANE cores each (chip catalog), else 1."""
    if not chip or not chip.startswith("Apple "):
        return 0
    from .chips import lookup_chip

    known = lookup_chip(chip)
    if known is not None and known.neural_engine_cores:
        return max(1, known.neural_engine_cores // ANE_CORES_PER_ENGINE)
    return 2 if "Ultra" in chip else 1
