"""`anebench doctor`: a one-minute self-check of every macOS path on a small head, one line per check.

Each line is "ok", "FAIL" (what is wrong) or "skip" (why it was not checked). On a Mac it checks the
versions, the chip and Rosetta, the published Neural Engine engine's own paths (``Engine.self_check``:
where the head is placed on each compute unit, the engine's duration against wall clock), the IOReport
channels found (with their units) and how far each moves over an idle 0.1 s window and over a 1 s window
of Neural Engine work, the PMP channels, and Core AI where an engine of that name is registered. Off a Mac
it lists what it would check and checks nothing. The lines go to one diagnostic file that
`anebench submit --doctor` attaches.
"""

from __future__ import annotations

import importlib.metadata
import platform
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass

from ..engines import PUBLISHED_ANE_ENGINE, Registry, active_engines, get_engine
from ..engines.base import Check, Engine
from ..system import ioreport, preflight
from ..system.chips import lookup_chip
from ..system.host import SYSTEM_HOST, Host, PlatformFacts, use_host
from ..system.ioreport_parse import (
    ENERGY_GROUP,
    Channel,
    channel_joules,
    component_of,
    die_bandwidth,
    is_ane_traffic,
    is_dram_total,
    sources_found,
)
from ..workloads import Workload

DOCTOR_HEAD = Workload("doctor_head", hidden=1024, vocab=8192, dtype="fp16", seed=11)  # 16.8 MB of fp16
IDLE_WINDOW_S, BUSY_WINDOW_S = 0.1, 1.0
OTHER_PACKAGES = ("actop", "mlx", "torch", "numpy", "coreai-core")


def ane_engine(engines: Registry | None = None) -> Engine:
    """The engine whose paths the doctor checks: the one the published Neural Engine figures used."""
    return get_engine(PUBLISHED_ANE_ENGINE, engines)


def versions(engine: Engine) -> tuple[str, ...]:
    return ("anebench", *engine.packages, *OTHER_PACKAGES)


def would_check() -> list[str]:
    engine = ane_engine()
    return [
        f"versions: macOS (15+), Python, {', '.join(versions(engine))}",
        "chip: the Apple chip and its entry in the chip catalog",
        "Rosetta: the Python process is native arm64, not translated",
        *engine.doctor_plan(DOCTOR_HEAD),
        f"IOReport channels: the Energy Model channels found with their units, and how far each moves over "
        f"an idle {IDLE_WINDOW_S:g} s window and a {BUSY_WINDOW_S:g} s window of Neural Engine work",
        "PMP channels: the memory controllers' AMCC RD+WR histograms and the ANE's own RD / WR histograms",
        "Core AI: the coreai engine's availability, where one is registered",
    ]


@dataclass
class Diagnosis:
    on_mac: bool
    checks: list[Check]

    @property
    def failed(self) -> list[Check]:
        return [c for c in self.checks if c.status == "FAIL"]

    def lines(self) -> list[str]:
        if not self.on_mac:
            return ["anebench doctor: not a Mac, so nothing was checked. On macOS it checks:",
                    *(f"  - {item}" for item in would_check())]
        return [c.line() for c in self.checks]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_versions(engine: Engine | None = None, facts: PlatformFacts | None = None) -> Check:
    engine = engine or ane_engine()
    mac = preflight.macos_version_text(facts) or "unknown"
    found = {name: _version(name) for name in versions(engine)}
    listed = ", ".join(f"{name} {version or 'not installed'}" for name, version in found.items())
    text = f"macOS {mac}, Python {platform.python_version()}, {listed}"
    problem = engine.requirement_problem(mac, found)
    if problem:
        return Check("versions", "FAIL", f"{text}; {problem}")
    return Check("versions", "ok", text)


def check_chip(host: Host) -> Check:
    chip = host.info().chip
    if not chip:
        return Check("chip", "FAIL", "no Apple chip detected (sysctl machdep.cpu.brand_string)")
    entry = lookup_chip(chip)
    if entry is None:
        return Check("chip", "FAIL",
                     f"{chip}: not in the chip catalog (no bandwidth bound, no published peers)")
    return Check("chip", "ok", f"{chip} (catalog {entry.key})")


def check_rosetta(facts: PlatformFacts | None = None) -> Check:
    if preflight.under_rosetta(facts):
        return Check("Rosetta", "FAIL", preflight.ROSETTA_MESSAGE)
    return Check("Rosetta", "ok", f"native {preflight.machine(facts)}")


def _moved(channel: Channel) -> str:
    if channel.states:
        die = die_bandwidth(channel)
        return f"{die.gbps:.1f} GB/s" if not isinstance(die, str) else die
    joules = channel_joules(channel)
    return f"{joules:.4f} J" if not isinstance(joules, str) else joules


def _energy_channels(channels: list[Channel]) -> dict[str, Channel]:
    return {c.name: c for c in channels if c.group == ENERGY_GROUP and component_of(c.name) is not None}


def check_ioreport(busy: Callable[[], None] | None) -> list[Check]:
    binding = ioreport.active_ioreport()
    problem = binding.problem()
    if problem is not None:
        return [Check("IOReport", "FAIL", problem)]
    try:
        idle = binding.probe_channels(IDLE_WINDOW_S)
        worked = binding.probe_channels(BUSY_WINDOW_S, busy)
    except Exception as exc:  # noqa: BLE001 - a private library: say what failed, never crash
        return [Check("IOReport", "FAIL", f"subscription failed: {type(exc).__name__}: {exc}")]
    checks = []
    energy_model, totals, ane_traffic = sources_found(worked)
    checks.append(Check("IOReport Energy Model", "ok" if energy_model.available and not energy_model.reason
                        else "FAIL", "; ".join(filter(None, ["found " + "; ".join(energy_model.channels)
                                                             if energy_model.channels else "",
                                                             energy_model.reason]))))
    before, after = _energy_channels(idle), _energy_channels(worked)
    for name, channel in after.items():
        component = component_of(name)
        steps = f"{_moved(before[name]) if name in before else 'absent'} over {IDLE_WINDOW_S:g} s idle, " \
                f"{_moved(channel)} over {BUSY_WINDOW_S:g} s of ANE work"
        busy_unit = component in ("ane", "cpu", "dram") and busy is not None
        stalled = channel.value == 0 and busy_unit
        text = f"{steps}; counter did not move while the {component} was busy" if stalled else steps
        checks.append(Check(f"IOReport {name} ({channel.unit.strip() or 'no unit'})",
                            "FAIL" if stalled else "ok", text))
    for source, wanted in ((totals, is_dram_total), (ane_traffic, is_ane_traffic)):
        moving = [f"{c.name} {_moved(c)}" for c in worked if wanted(c)]
        text = "; ".join(moving) + " over the ANE window" if moving else source.reason
        checks.append(Check(source.name.replace("IOReport ", ""), "ok" if source.available else "FAIL", text))
    return checks


def check_coreai(facts: PlatformFacts | None = None, engines: Registry | None = None) -> Check:
    """Core AI through the engine registry: ok where it runs; skip where the OS is too old for it (as
    expected before macOS 27); FAIL where the OS is right and the engine still cannot run."""
    engines = active_engines() if engines is None else engines
    if "coreai" not in engines:
        return Check("Core AI", "skip", "no coreai engine in this anebench")
    availability = get_engine("coreai", engines).available()
    if availability:
        return Check("Core AI", "ok", f"available (coreai-core {_version('coreai-core') or 'unknown'})")
    if preflight.coreai_problem(facts=facts) is not None:
        return Check("Core AI", "skip", availability.reason)
    return Check("Core AI", "FAIL", availability.reason)


def diagnose(host: Host | None = None, progress: Callable[[str], None] | None = None,
             engines: Registry | None = None) -> Diagnosis:
    """Every check, in order, of ``host`` (its platform facts decide what runs); off a Mac none (the
    Diagnosis lists what would be checked). ``engines``: the registry the engines are looked up in."""
    host = host or SYSTEM_HOST
    facts = host.platform()
    if not preflight.on_macos(facts):
        return Diagnosis(False, [])
    say = progress or (lambda text: None)
    engine = ane_engine(engines)
    checks = [check_versions(engine, facts), check_chip(host), check_rosetta(facts)]
    # the engine's own checks ask the active host: a host passed in is made the active one meanwhile
    with use_host(host) if host is not SYSTEM_HOST else nullcontext(host):
        with engine.self_check(DOCTOR_HEAD, say) as (found, busy):
            checks += found
            if busy is not None:
                say("IOReport channels, idle and under ANE work")
            checks += check_ioreport(busy)
    checks.append(check_coreai(facts, engines))
    return Diagnosis(True, checks)


__all__ = ["DOCTOR_HEAD", "Check", "Diagnosis", "diagnose", "would_check"]
