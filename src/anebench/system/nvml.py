"""NVML, matched to a CUDA device by UUID: identity, state snapshots and what they say about throttling.

NVML numbers GPUs in PCI order and ignores CUDA_VISIBLE_DEVICES, while CUDA numbers them fastest-first
(unless CUDA_DEVICE_ORDER=PCI_BUS_ID) among the visible ones: a CUDA index is never an NVML index. The
CUDA device's UUID (torch.cuda.get_device_properties(i).uuid) names the same board in both.
Every reader takes the pynvml module as an argument, so tests pass a fake with pynvml's API shape.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from ..model.gpu import GpuIdentity, GpuState

# nvmlClocksThrottleReason* / nvmlClocksEventReason* bits (nvml.h; stable across driver versions)
THROTTLE_REASONS = {
    0x1: "GpuIdle",
    0x2: "ApplicationsClocksSetting",
    0x4: "SwPowerCap",
    0x8: "HwSlowdown",
    0x10: "SyncBoost",
    0x20: "SwThermalSlowdown",
    0x40: "HwThermalSlowdown",
    0x80: "HwPowerBrakeSlowdown",
    0x100: "DisplayClockSetting",
}
# Reasons that mean the clocks were held down by power or heat (idle, app clocks, sync boost do not)
SLOWDOWN_REASONS = frozenset({"SwPowerCap", "HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown",
                              "HwPowerBrakeSlowdown"})
CLOCK_GRAPHICS, CLOCK_SM, CLOCK_MEM = 0, 1, 2  # NVML_CLOCK_*
TEMPERATURE_GPU = 0  # NVML_TEMPERATURE_GPU
PERF_POLICY_POWER, PERF_POLICY_THERMAL = 0, 1  # NVML_PERF_POLICY_*


def load_nvml() -> tuple[ModuleType | None, str]:
    """(initialised pynvml, "") or (None, why not)."""
    try:
        nvml = importlib.import_module("pynvml")
    except ImportError:
        return None, ("NVML is not importable: install nvidia-ml-py (anebench[nvml]) to read GPU state and "
                      "energy")
    try:
        nvml.nvmlInit()
    except Exception as exc:  # noqa: BLE001 - NVMLError subclasses vary by version
        return None, f"NVML did not initialise: {exc}"
    return nvml, ""


def nvml_uuid_candidates(cuda_uuid: str) -> list[str]:
    """NVML's spellings of a CUDA UUID: torch prints the bare 8-4-4-4-12 hex, NVML prefixes GPU- or MIG-."""
    text = cuda_uuid.strip()
    if text.upper().startswith(("GPU-", "MIG-")):
        return [text]
    return [f"GPU-{text}", f"MIG-{text}"]


def handle_by_uuid(nvml: Any, cuda_uuid: str) -> Any:
    """The NVML handle of the board with this UUID; raises (with NVML's message) when none matches."""
    error: Exception | None = None
    for candidate in nvml_uuid_candidates(cuda_uuid):
        try:
            return nvml.nvmlDeviceGetHandleByUUID(candidate)
        except Exception as exc:  # noqa: BLE001 - NVMLError_NotFound and friends
            error = exc
    raise LookupError(f"no NVML device has UUID {cuda_uuid}: {error}")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def read_identity(nvml: Any, handle: Any, cuda_uuid: str | None) -> GpuIdentity:
    fields: dict[str, str | None] = {"uuid": cuda_uuid}
    readers = {
        "name": lambda: _text(nvml.nvmlDeviceGetName(handle)),
        "pci_bus_id": lambda: _text(nvml.nvmlDeviceGetPciInfo(handle).busId),
        "driver_version": lambda: _text(nvml.nvmlSystemGetDriverVersion()),
        "cuda_driver_version": lambda: _cuda_version(nvml.nvmlSystemGetCudaDriverVersion()),
    }
    for name, read in readers.items():
        try:
            fields[name] = read()
        except Exception:  # noqa: BLE001 - a field this driver or board does not support stays empty
            fields[name] = None
    return GpuIdentity(**fields)


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"  # 12040 -> "12.4"


def decode_throttle_reasons(mask: int) -> list[str]:
    names = [name for bit, name in THROTTLE_REASONS.items() if mask & bit]
    unknown = mask & ~sum(THROTTLE_REASONS)
    return names + ([f"unknown bits {unknown:#x}"] if unknown else [])


def _throttle_mask(nvml: Any, handle: Any) -> int:
    reader = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
        nvml.nvmlDeviceGetCurrentClocksThrottleReasons  # renamed in CUDA 12.2's NVML
    return int(reader(handle))


def read_state(nvml: Any, handle: Any) -> GpuState:
    """One snapshot; each field NVML refuses is left None and listed in ``unreadable`` with the reason."""
    readers: dict[str, Any] = {
        "sm_clock_mhz": lambda: int(nvml.nvmlDeviceGetClockInfo(handle, CLOCK_SM)),
        "memory_clock_mhz": lambda: int(nvml.nvmlDeviceGetClockInfo(handle, CLOCK_MEM)),
        "max_sm_clock_mhz": lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, CLOCK_SM)),
        "max_memory_clock_mhz": lambda: int(nvml.nvmlDeviceGetMaxClockInfo(handle, CLOCK_MEM)),
        "throttle_reasons": lambda: decode_throttle_reasons(_throttle_mask(nvml, handle)),
        "performance_state": lambda: f"P{int(nvml.nvmlDeviceGetPerformanceState(handle))}",
        "power_draw_w": lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1e3,  # milliwatts
        "power_limit_w": lambda: nvml.nvmlDeviceGetEnforcedPowerLimit(handle) / 1e3,
        "temperature_c": lambda: int(nvml.nvmlDeviceGetTemperature(handle, TEMPERATURE_GPU)),
        "ecc_enabled": lambda: bool(nvml.nvmlDeviceGetEccMode(handle)[0]),  # (current, pending)
        "mig_enabled": lambda: bool(nvml.nvmlDeviceGetMigMode(handle)[0]),
        "persistence_mode": lambda: bool(nvml.nvmlDeviceGetPersistenceMode(handle)),
        "power_violation_ns": lambda: int(nvml.nvmlDeviceGetViolationStatus(handle, PERF_POLICY_POWER)
                                          .violationTime),
        "thermal_violation_ns": lambda: int(nvml.nvmlDeviceGetViolationStatus(handle, PERF_POLICY_THERMAL)
                                            .violationTime),
    }
    fields: dict[str, Any] = {}
    unreadable: list[str] = []
    for name, read in readers.items():
        try:
            fields[name] = read()
        except Exception as exc:  # noqa: BLE001 - unsupported on this board/driver: recorded, not fatal
            unreadable.append(f"{name}: {exc}"[:200])
    return GpuState(**fields, unreadable=unreadable)


def sm_clock_reader(nvml: Any, handle: Any):
    """A callable giving the SM clock in MHz (None when NVML refuses), for the GPU warmup policy."""
    def read() -> float | None:
        try:
            return float(nvml.nvmlDeviceGetClockInfo(handle, CLOCK_SM))
        except Exception:  # noqa: BLE001
            return None
    return read


def throttle_warnings(before: GpuState, after: GpuState) -> list[str]:
    """Warnings when the GPU was held below its clocks by power or heat during the window."""
    found = []
    for cause, start, end in (("power", before.power_violation_ns, after.power_violation_ns),
                              ("thermal", before.thermal_violation_ns, after.thermal_violation_ns)):
        if start is not None and end is not None and end > start:
            found.append(f"GPU throttled ({cause}) for {(end - start) / 1e6:.1f} ms during the measurement "
                         "(NVML violation counters)")
    slow = [r for r in after.throttle_reasons if r in SLOWDOWN_REASONS]
    if slow:
        found.append(f"GPU clocks held down at the end of the measurement: {', '.join(slow)} (NVML)")
    return found
