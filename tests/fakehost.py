"""A host with stated facts, for tests: passed down instead of patching what each module imported."""

from __future__ import annotations

from anebench.model import HostInfo, HostState
from anebench.system.host import Host, busy_threshold
from anebench.system.host import describe_host as this_machine


class FakeHost(Host):
    def __init__(self, available_bytes: int = 16 * 1024**3, load: float = 0.0, cores: int = 2,
                 llc_bytes: int | None = 32 * 1024**2, chip: str | None = None):
        self.available_bytes, self.load, self.cores, self.llc_bytes = available_bytes, load, cores, llc_bytes
        self.chip = chip  # an Apple chip: the host is a Mac (macOS, arm64)

    def info(self) -> HostInfo:
        if self.chip:
            return HostInfo(os="macOS", os_version="15.5", arch="arm64", cpu_model=self.chip, chip=self.chip,
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


def pretend_macos(monkeypatch, version: tuple[int, ...] = (27, 0)) -> None:
    """The platform facts of a native Apple-silicon Mac running macOS ``version`` (preflight's seam)."""
    from anebench.system import preflight

    monkeypatch.setattr(preflight, "_system", lambda: "darwin")
    monkeypatch.setattr(preflight, "_machine", lambda: "arm64")
    monkeypatch.setattr(preflight, "_macos_version", lambda: version)
    monkeypatch.setattr(preflight, "proc_translated", lambda libc=None: 0)


class NativeMacLibc:
    """libSystem's sysctlbyname on a native Apple-silicon Mac: sysctl.proc_translated reads 0."""

    def sysctlbyname(self, name, oldp, oldlenp, newp, newlen):
        oldp.contents.value = 0
        return 0


MAC_CHIP = "Apple M4 Pro"
MAC_VERSION = (15, 5)


def pretend_mac_host(monkeypatch, version: tuple[int, ...] = MAC_VERSION, chip: str = MAC_CHIP) -> None:
    """Every platform fact of a native Apple-silicon Mac, through the seams the library reads them from:
    preflight's (OS, machine, macOS version, Rosetta), power's platform and the host description (this
    machine's memory, cores and caches, with the Mac's OS, arch and chip). The native Core ML and IOReport
    bindings are not pretended: they stay as absent as they are here."""
    from anebench.system import host, power, preflight

    monkeypatch.setattr(preflight, "_system", lambda: "darwin")
    monkeypatch.setattr(preflight, "_machine", lambda: "arm64")
    monkeypatch.setattr(preflight, "_macos_version", lambda: version)
    # Native, stated where the kernel answers (sysctlbyname), so Rosetta's own logic still runs.
    monkeypatch.setattr(preflight, "_libc", NativeMacLibc)
    monkeypatch.setattr(power, "current_platform", lambda: "darwin")
    mac = this_machine().model_copy(update=dict(
        os="macOS", os_version=".".join(map(str, version)), arch="arm64", cpu_model=chip, chip=chip,
        machine_model="Mac16,8", rosetta=False))
    monkeypatch.setattr(host, "describe_host", lambda: mac)


def pretend_linux_host(monkeypatch) -> None:
    """The platform facts of a Linux x86_64 host with no Apple chip, for a test that depends on them
    (so it holds whichever platform the suite was asked to pretend; see ``--platform`` in conftest)."""
    from anebench.system import host, power, preflight

    monkeypatch.setattr(preflight, "_system", lambda: "linux")
    monkeypatch.setattr(preflight, "_machine", lambda: "x86_64")
    monkeypatch.setattr(preflight, "_macos_version", lambda: ())
    monkeypatch.setattr(preflight, "proc_translated", lambda libc=None: None)
    monkeypatch.setattr(power, "current_platform", lambda: "linux")
    linux = this_machine()
    if linux.os != "Linux":
        facts = dict(os="Linux", os_version="6.1", arch="x86_64", cpu_model="Fake CPU", chip=None,
                     machine_model=None, rosetta=None)
        linux = linux.model_copy(update=facts)
    monkeypatch.setattr(host, "describe_host", lambda: linux)
