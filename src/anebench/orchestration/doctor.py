"""`anebench doctor`: a one-minute self-check of every macOS path on a small head, one line per check.

Each line is "ok", "FAIL" (what is wrong) or "skip" (why it was not checked). On a Mac it checks the
versions, the chip and Rosetta, where MLComputePlan places the head on each compute unit, Core ML's
prediction duration against wall clock, the IOReport channels found (with their units) and how far each
moves over an idle 0.1 s window and over a 1 s window of Neural Engine work, the PMP channels, and Core AI
where an engine of that name is registered. Off a Mac it lists what it would check and checks nothing.
The lines go to one diagnostic file that `anebench submit --doctor` attaches.
"""

from __future__ import annotations

import importlib.metadata
import platform
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Literal

from ..engines import Registry, active_engines, get_engine
from ..engines import coreml_engine as coreml
from ..engines.base import Prepared
from ..errors import MeasurementError, UserError
from ..system import ioreport, preflight
from ..system.chips import lookup_chip
from ..system.host import SYSTEM_HOST, Host, PlatformFacts
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

Status = Literal["ok", "FAIL", "skip"]
DOCTOR_HEAD = Workload("doctor_head", hidden=1024, vocab=8192, dtype="fp16", seed=11)  # 16.8 MB of fp16
DURATION_CALLS = 20
DURATION_AGREEMENT = 0.5  # Core ML's duration of a predict must be within [0.5, 1] x its wall clock
IDLE_WINDOW_S, BUSY_WINDOW_S = 0.1, 1.0
UNITS = ("ane", "gpu", "cpu")
VERSIONS = ("anebench", "coremltools", "actop", "mlx", "torch", "numpy", "coreai-core")

WOULD_CHECK = [
    "versions: macOS (15+), Python, anebench, coremltools, actop, mlx, torch, coreai-core",
    "chip: the Apple chip and its entry in the chip catalog",
    "Rosetta: the Python process is native arm64, not translated",
    f"MLComputePlan per unit: where Core ML places a {DOCTOR_HEAD.hidden}x{DOCTOR_HEAD.vocab} fp16 head on "
    + ", ".join(UNITS),
    f"duration reader: Core ML's prediction duration against wall clock over {DURATION_CALLS} predicts",
    f"IOReport channels: the Energy Model channels found with their units, and how far each moves over an "
    f"idle {IDLE_WINDOW_S:g} s window and a {BUSY_WINDOW_S:g} s window of Neural Engine work",
    "PMP channels: the memory controllers' AMCC RD+WR histograms and the ANE's own RD / WR histograms",
    "Core AI: the coreai engine's availability, where one is registered",
]


@dataclass(frozen=True)
class Check:
    name: str
    status: Status
    detail: str

    def line(self) -> str:
        return f"{self.status:<4} {self.name}: {self.detail}"


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
                    *(f"  - {item}" for item in WOULD_CHECK)]
        return [c.line() for c in self.checks]


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def check_versions(facts: PlatformFacts | None = None) -> Check:
    mac = preflight.macos_version_text(facts) or "unknown"
    found = {name: _version(name) for name in VERSIONS}
    listed = ", ".join(f"{name} {version or 'not installed'}" for name, version in found.items())
    text = f"macOS {mac}, Python {platform.python_version()}, {listed}"
    major = coreml.version_tuple(mac)[:1]
    if major and major[0] < 15:
        return Check("versions", "FAIL", f"{text}; Core ML bundles here need macOS 15+")
    if found["coremltools"] is None:
        return Check("versions", "FAIL", f"{text}; install the coreml extra (pip install 'anebench[coreml]')")
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


def check_placement(package, unit: str) -> Check:
    name = f"MLComputePlan {unit}"
    units = coreml.COMPUTE_UNITS[unit]
    binding = coreml.active_binding()
    try:
        model = binding.load_model(package, units)
        ops = binding.query_placement(model, units)
    except UserError as exc:
        return Check(name, "FAIL", str(exc))
    except (ImportError, AttributeError, RuntimeError, TypeError) as exc:
        return Check(name, "FAIL", coreml.placement_unavailable(exc, _version("coremltools") or "unknown"))
    details, warnings = coreml.summarize_placement(ops, unit)
    counts = f"{details[f'ops_on_{unit}']} ops on {unit}, {details['ops_unplaced']} unplaced"
    if warnings:
        return Check(name, "FAIL", f"{counts}; {'; '.join(warnings)}")
    return Check(name, "ok", counts)


def check_duration(prepared: Prepared) -> Check:
    name = "duration reader"
    if prepared.details.get("device_clock") is None:
        return Check(name, "FAIL", "coremltools records no prediction duration (8.2+ does): wall clock only")
    # coremltools answers None until a predict succeeded: a figure now would be another model's
    stale = prepared.device_seconds()
    if stale is not None:
        return Check(name, "FAIL", f"a duration ({stale * 1e3:.3f} ms) before the first predict")
    ratios = []
    for _ in range(DURATION_CALLS):
        start = time.perf_counter()
        prepared.call()
        wall = time.perf_counter() - start
        device = prepared.device_seconds()
        if device is None:
            return Check(name, "FAIL", "no duration after a predict that succeeded")
        ratios.append(device / wall)
    ratios.sort()
    middle = ratios[len(ratios) // 2]
    text = (f"Core ML duration / wall clock over {DURATION_CALLS} predicts: median {middle:.2f} "
            f"(range {ratios[0]:.2f}-{ratios[-1]:.2f})")
    if ratios[-1] > 1.0 or middle < DURATION_AGREEMENT:
        return Check(name, "FAIL", f"{text}; expected within [{DURATION_AGREEMENT:g}, 1]")
    return Check(name, "ok", text)


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
    if preflight.coreai_problem(facts) is not None:
        return Check("Core AI", "skip", availability.reason)
    return Check("Core AI", "FAIL", availability.reason)


@contextmanager
def _prepared_on_ane(engine: coreml.CoreMLEngine) -> Iterator[tuple[Prepared | None, Check | None]]:
    try:
        prepared = engine.prepare(DOCTOR_HEAD, "ane")
    except (UserError, MeasurementError) as exc:
        yield None, Check("Core ML on the ANE", "FAIL", str(exc))
        return
    try:
        yield prepared, None
    finally:
        prepared.close()


def diagnose(host: Host | None = None, progress: Callable[[str], None] | None = None,
             engines: Registry | None = None) -> Diagnosis:
    """Every check, in order, of ``host`` (its platform facts decide what runs); off a Mac none (the
    Diagnosis lists what would be checked). ``engines``: the registry Core AI is looked up in."""
    host = host or SYSTEM_HOST
    facts = host.platform()
    if not preflight.on_macos(facts):
        return Diagnosis(False, [])
    say = progress or (lambda text: None)
    checks = [check_versions(facts), check_chip(host), check_rosetta(facts)]
    engine = coreml.CoreMLEngine()
    problem = preflight.ane_problem(facts)
    if problem is not None:
        checks.append(Check("Core ML", "FAIL", problem))
        checks += check_ioreport(None)
        checks.append(check_coreai(facts, engines))
        return Diagnosis(True, checks)
    say(f"building the {DOCTOR_HEAD.hidden}x{DOCTOR_HEAD.vocab} fp16 head")
    artifact = engine.artifact(DOCTOR_HEAD)
    for unit in UNITS:
        say(f"MLComputePlan on {unit}")
        checks.append(check_placement(artifact.package, unit))
    with _prepared_on_ane(engine) as (prepared, failed):
        if prepared is None:
            checks.append(failed or Check("Core ML on the ANE", "FAIL", "not prepared"))
            checks += check_ioreport(None)
        else:
            say("Core ML's duration against wall clock")
            checks.append(check_duration(prepared))
            say("IOReport channels, idle and under ANE work")
            checks += check_ioreport(prepared.call)
    checks.append(check_coreai(facts, engines))
    return Diagnosis(True, checks)


__all__ = ["DOCTOR_HEAD", "WOULD_CHECK", "Check", "Diagnosis", "diagnose"]
