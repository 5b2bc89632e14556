"""Can this host reach the Neural Engine? Clear answers before any work: macOS, Rosetta, Intel Mac.

Every answer is a function of the platform facts (host.PlatformFacts): passed in, or the active host's
(``SYSTEM_HOST.platform()``), which a test states with ``host.use_host`` instead of patching this module.
Rosetta is the kernel's own flag, sysctl.proc_translated (host.translated_by_rosetta).
"""

from __future__ import annotations

from ..errors import UserError
from .host import SYSTEM_HOST, PlatformFacts

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


def _facts(facts: PlatformFacts | None) -> PlatformFacts:
    """The facts asked about: those passed in, else the active host's (tests state one with use_host)."""
    return facts if facts is not None else SYSTEM_HOST.platform()


def on_macos(facts: PlatformFacts | None = None) -> bool:
    return _facts(facts).system == "darwin"


def machine(facts: PlatformFacts | None = None) -> str:
    """The machine this Python runs as (arm64, x86_64)."""
    return _facts(facts).machine


def macos_version_text(facts: PlatformFacts | None = None) -> str:
    """The running macOS version ("15.5"), "" off macOS or where unknown."""
    facts = _facts(facts)
    return ".".join(map(str, facts.macos_version)) if on_macos(facts) else ""


def under_rosetta(facts: PlatformFacts | None = None) -> bool:
    """An x86_64 Python translated on Apple silicon (the kernel's flag; see host.translated_by_rosetta)."""
    facts = _facts(facts)
    return on_macos(facts) and facts.rosetta


def apple_silicon(facts: PlatformFacts | None = None) -> bool:
    """Native arm64, or translated (Rosetta only exists on Apple silicon)."""
    facts = _facts(facts)
    return on_macos(facts) and (facts.machine == "arm64" or under_rosetta(facts))


def intel_mac(facts: PlatformFacts | None = None) -> bool:
    facts = _facts(facts)
    return on_macos(facts) and not apple_silicon(facts)


def check_native_host(facts: PlatformFacts | None = None) -> None:
    """Stop before any work under Rosetta: every engine's figures would be those of translated code."""
    if under_rosetta(facts):
        raise UserError(ROSETTA_MESSAGE)


def _system_name(facts: PlatformFacts) -> str:
    return {"linux": "Linux", "win32": "Windows"}.get(facts.system, facts.system)


def prediction_problem(framework: str, facts: PlatformFacts | None = None) -> str | None:
    """Why ``framework`` (the engine's, as text names it) cannot predict here: the bundles are macOS 15
    ML programs run natively; None when it can."""
    facts = _facts(facts)
    if not on_macos(facts):
        return NOT_MACOS_MESSAGE.format(framework=framework, system=_system_name(facts))
    if under_rosetta(facts):
        return ROSETTA_MESSAGE
    version = facts.macos_version
    if version and version < MIN_MACOS:
        return (
            f"the bundles are macOS 15 (iOS18) ML programs and this Mac runs macOS "
            f"{'.'.join(map(str, version))}; update macOS to run them"
        )
    return None


def coreai_problem(older_macos_hint: str = "", facts: PlatformFacts | None = None) -> str | None:
    """Why Core AI cannot specialise and run an .aimodel here (macOS 27+, native), or None when it can."""
    facts = _facts(facts)
    if not on_macos(facts):
        return (f"Core AI needs macOS 27 (this host runs {_system_name(facts)}); `anebench build --engine "
                "coreai` still writes the .aimodel assets here, run them on a Mac with macOS 27")
    if under_rosetta(facts):
        return ROSETTA_MESSAGE
    version = facts.macos_version
    if not version or version < MIN_MACOS_COREAI:
        running = ".".join(map(str, version)) if version else "an unknown version"
        return f"Core AI needs macOS 27 (this Mac runs macOS {running}){older_macos_hint}"
    return None


def ane_problem(framework: str, facts: PlatformFacts | None = None) -> str | None:
    """Why the Neural Engine in particular is out of reach through ``framework`` (which may still run)."""
    facts = _facts(facts)
    intel = INTEL_MESSAGE.format(framework=framework) if intel_mac(facts) else None
    return prediction_problem(framework, facts) or intel


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
