"""A host with stated facts, for tests: passed down instead of patching what each module imported."""

from __future__ import annotations

from collections.abc import Callable

from anebench.model import HostInfo, HostState
from anebench.system.host import Host, PlatformFacts, busy_threshold
from anebench.system.host import describe_host as this_machine
from anebench.system.ioreport import IOReportBinding


class FakeHost(Host):
    def __init__(self, available_bytes: int = 16 * 1024**3, load: float = 0.0, cores: int = 2,
                 llc_bytes: int | None = 32 * 1024**2, chip: str | None = None,
                 macos_version: tuple[int, ...] = (15, 5)):
        self.available_bytes, self.load, self.cores, self.llc_bytes = available_bytes, load, cores, llc_bytes
        self.chip = chip  # an Apple chip: the host is a Mac (macOS ``macos_version``, arm64)
        self.macos_version = macos_version

    def info(self) -> HostInfo:
        if self.chip:
            version = ".".join(map(str, self.macos_version))
            return HostInfo(os="macOS", os_version=version, arch="arm64", cpu_model=self.chip, chip=self.chip,
                            machine_model="Mac16,8", cores_logical=self.cores, llc_bytes=self.llc_bytes,
                            memory_bytes=2 * self.available_bytes, fingerprint="fake")
        return HostInfo(os="Linux", arch="x86_64", cpu_model="Fake CPU", cores_logical=self.cores,
                        memory_bytes=2 * self.available_bytes, llc_bytes=self.llc_bytes, fingerprint="fake")

    def available_memory_bytes(self) -> int:
        return self.available_bytes

    def usable_cores(self) -> int:
        return self.cores

    def state(self) -> HostState:
        return HostState(load_average_1m=self.load, busy=self.load > busy_threshold(self.cores))

    def platform(self) -> PlatformFacts:
        if self.chip:
            return PlatformFacts(system="darwin", machine="arm64", macos_version=self.macos_version,
                                 chip=self.chip)
        return PlatformFacts(system="linux", machine="x86_64")


MAC_CHIP = "Apple M4 Pro"
MAC_VERSION = (15, 5)
LINUX_FACTS = PlatformFacts(system="linux", machine="x86_64")


def mac_facts(version: tuple[int, ...] = MAC_VERSION, chip: str | None = MAC_CHIP, machine: str = "arm64",
              rosetta: bool = False) -> PlatformFacts:
    """A Mac's platform facts: native Apple silicon unless ``machine``/``rosetta`` say otherwise."""
    return PlatformFacts(system="darwin", machine=machine, macos_version=version, rosetta=rosetta, chip=chip)


class StatedPlatformHost(Host):
    """This machine's memory, cores, caches and state, with stated platform facts (OS, arch, Rosetta, chip,
    macOS version) in both ``platform()`` and ``info()``. The native Core ML and IOReport bindings are not
    pretended: they stay as absent as they are here."""

    def __init__(self, facts: PlatformFacts):
        self.facts = facts

    def platform(self) -> PlatformFacts:
        return self.facts

    def info(self) -> HostInfo:
        facts, real = self.facts, this_machine()
        if facts.system == "darwin":
            return real.model_copy(update=dict(
                os="macOS", os_version=".".join(map(str, facts.macos_version)), arch=facts.machine,
                cpu_model=facts.chip or "Intel(R) Core(TM) i9", chip=facts.chip, machine_model="Mac16,8",
                rosetta=facts.rosetta))
        if real.os == "Linux" and real.chip is None:
            return real
        return real.model_copy(update=dict(os="Linux", os_version="6.1", arch=facts.machine,
                                           cpu_model="Fake CPU", chip=None, machine_model=None, rosetta=None))


def state_host(monkeypatch, stated: Host) -> Host:
    """Make ``stated`` the host the library asks (``SYSTEM_HOST``) until the test ends: host.use_host's
    seam, the one place platform facts are stated instead of patching what each module imported."""
    from anebench.system import host

    monkeypatch.setattr(host.HOST_SEAM, "stated", stated)
    return stated


def state_ioreport(monkeypatch, problem: Callable[[], str | None] | None = None,
                   probe_channels: Callable | None = None) -> IOReportBinding:
    """Read IOReport through ``problem`` and ``probe_channels`` (each the native reader's where not given)
    until the test ends: ioreport.use_ioreport's seam."""
    from anebench.system import ioreport

    stated = IOReportBinding(problem=problem or ioreport.NATIVE_IOREPORT.problem,
                             probe_channels=probe_channels or ioreport.NATIVE_IOREPORT.probe_channels)
    monkeypatch.setattr(ioreport.IOREPORT_SEAM, "stated", stated)
    return stated


def state_platform(monkeypatch, facts: PlatformFacts) -> Host:
    """This machine with the platform facts ``facts`` (see StatedPlatformHost)."""
    return state_host(monkeypatch, StatedPlatformHost(facts))


def pretend_macos(monkeypatch, version: tuple[int, ...] = (27, 0)) -> None:
    """The platform facts of a native Apple-silicon Mac running macOS ``version``."""
    state_platform(monkeypatch, mac_facts(version))


def pretend_mac_host(monkeypatch, version: tuple[int, ...] = MAC_VERSION, chip: str = MAC_CHIP) -> None:
    """Every platform fact of a native Apple-silicon Mac, stated through the host seam: preflight's (OS,
    machine, macOS version, Rosetta), power's platform and the host description (this machine's memory,
    cores and caches, with the Mac's OS, arch and chip)."""
    state_platform(monkeypatch, mac_facts(version, chip))


def pretend_linux_host(monkeypatch) -> None:
    """The platform facts of a Linux x86_64 host with no Apple chip, for a test that depends on them
    (so it holds whichever platform the suite was asked to pretend; see ``--platform`` in conftest)."""
    state_platform(monkeypatch, LINUX_FACTS)
