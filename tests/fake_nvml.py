"""A fake pynvml (nvidia-ml-py's API shape) with several boards, addressed by UUID like the real one."""

from __future__ import annotations

import types
from dataclasses import dataclass, field


class NVMLError(Exception):
    pass


@dataclass
class Board:
    uuid: str  # NVML's spelling: "GPU-..."
    name: str = "NVIDIA H200"
    energy_mj: int = 1_000_000
    sm_mhz: int = 1980
    mem_mhz: int = 3201
    reasons: int = 0
    power_violation_ns: int = 0
    thermal_violation_ns: int = 0
    unsupported: set[str] = field(default_factory=set)


@dataclass
class Violation:
    referenceTime: int
    violationTime: int


def fake_nvml(boards: list[Board]) -> types.SimpleNamespace:
    by_uuid = {b.uuid: b for b in boards}

    def handle(uuid: str) -> Board:
        if uuid not in by_uuid:
            raise NVMLError("Not Found")
        return by_uuid[uuid]

    def guarded(name, fn):
        def call(board, *args):
            if name in board.unsupported:
                raise NVMLError("Not Supported")
            return fn(board, *args)
        return call

    return types.SimpleNamespace(
        NVMLError=NVMLError,
        boards=boards,
        nvmlInit=lambda: None,
        nvmlShutdown=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: boards[i],  # PCI order: never what a CUDA index means
        nvmlDeviceGetHandleByUUID=handle,
        nvmlDeviceGetName=lambda b: b.name,
        nvmlDeviceGetPciInfo=lambda b: types.SimpleNamespace(busId=f"00000000:{boards.index(b):02X}:00.0"),
        nvmlSystemGetDriverVersion=lambda: "570.86.15",
        nvmlSystemGetCudaDriverVersion=lambda: 12080,
        nvmlDeviceGetTotalEnergyConsumption=guarded("energy", lambda b: b.energy_mj),
        nvmlDeviceGetClockInfo=lambda b, kind: {1: b.sm_mhz, 2: b.mem_mhz}[kind],
        nvmlDeviceGetMaxClockInfo=lambda b, kind: {1: 1980, 2: 3201}[kind],
        nvmlDeviceGetCurrentClocksEventReasons=lambda b: b.reasons,
        nvmlDeviceGetPerformanceState=lambda b: 0,
        nvmlDeviceGetPowerUsage=lambda b: 412_000,
        nvmlDeviceGetEnforcedPowerLimit=lambda b: 700_000,
        nvmlDeviceGetTemperature=lambda b, sensor: 41,
        nvmlDeviceGetEccMode=lambda b: (1, 1),
        nvmlDeviceGetMigMode=guarded("mig", lambda b: (0, 0)),
        nvmlDeviceGetPersistenceMode=lambda b: 1,
        nvmlDeviceGetViolationStatus=lambda b, policy: Violation(
            0, b.power_violation_ns if policy == 0 else b.thermal_violation_ns),
    )
