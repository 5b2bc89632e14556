"""A host with stated facts, for tests: passed down instead of patching what each module imported."""

from __future__ import annotations

from anebench.model import HostInfo, HostState
from anebench.system.host import Host, busy_threshold


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

    def state(self) -> HostState:
        return HostState(load_average_1m=self.load, busy=self.load > busy_threshold(self.cores))


def pretend_macos(monkeypatch, version: tuple[int, ...] = (27, 0)) -> None:
    """The platform facts of a native Apple-silicon Mac running macOS ``version`` (preflight's seam)."""
    from anebench.system import preflight

    monkeypatch.setattr(preflight, "_system", lambda: "darwin")
    monkeypatch.setattr(preflight, "_machine", lambda: "arm64")
    monkeypatch.setattr(preflight, "_macos_version", lambda: version)
    monkeypatch.setattr(preflight, "proc_translated", lambda libc=None: 0)
