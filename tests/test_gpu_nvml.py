"""NVML matched by UUID, GPU state and throttling, and energy windows long enough for the counter."""

from __future__ import annotations

import sys
import types

import pytest

from anebench.measure.gpu import GpuRun, gpu_warnings
from anebench.model import RecordWarning
from anebench.model.gpu import GpuReport
from anebench.system.energy_check import MIN_COUNTER_STEPS, MIN_WINDOW_S, check_window, observe_counter_step
from anebench.system.nvml import decode_throttle_reasons, read_state, throttle_warnings
from anebench.system.power import EnergyWindow, NvmlMeter, Unavailable, energy_meter, nvml_meter
from fake_nvml import Board, fake_nvml

UUID_A, UUID_B = "aaaaaaaa-0000-4000-8000-00000000000a", "bbbbbbbb-0000-4000-8000-00000000000b"


@pytest.fixture
def boards(monkeypatch):
    # PCI order (NVML's index) puts B first; CUDA (fastest first, or CUDA_VISIBLE_DEVICES) may not
    found = [Board(uuid=f"GPU-{UUID_B}", energy_mj=9_000_000),
             Board(uuid=f"GPU-{UUID_A}", energy_mj=2_000_000)]
    monkeypatch.setitem(sys.modules, "pynvml", fake_nvml(found))
    return found


def test_the_energy_meter_is_the_board_with_the_cuda_uuid_not_the_cuda_index(boards):
    meter = nvml_meter("cuda:0", UUID_A)  # torch prints the bare UUID; NVML wants GPU-...
    assert isinstance(meter, NvmlMeter) and meter.read_joules() == 2000.0  # board A, though NVML index 0 is B
    boards[1].energy_mj += 1_500_000
    assert meter.read_joules() == 3500.0  # read from board A only
    assert "no NVML device has UUID" in nvml_meter("cuda:1", "cccccccc-0000").reason
    assert "without its CUDA UUID" in nvml_meter("cuda:0", None).reason
    assert "without its CUDA UUID" in energy_meter("cuda:0").reason  # never falls back to an index


def test_a_board_without_an_energy_counter_and_a_missing_nvml_say_why(boards, monkeypatch):
    boards[1].unsupported.add("energy")
    assert "energy counter unavailable on cuda:0: Not Supported" in nvml_meter("cuda:0", UUID_A).reason
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert "nvidia-ml-py" in nvml_meter("cuda:0", UUID_A).reason


def test_state_snapshot_reads_every_field_and_names_the_unreadable_ones(boards):
    nvml = sys.modules["pynvml"]
    boards[0].unsupported.add("mig")
    boards[0].reasons = 0x1 | 0x4 | 0x400
    state = read_state(nvml, boards[0])
    assert state.sm_clock_mhz == 1980 and state.max_memory_clock_mhz == 3201
    assert state.performance_state == "P0"
    assert state.power_draw_w == 412 and state.power_limit_w == 700 and state.temperature_c == 41
    assert state.ecc_enabled is True and state.persistence_mode is True and state.mig_enabled is None
    assert state.throttle_reasons == ["GpuIdle", "SwPowerCap", "unknown bits 0x400"]
    assert state.unreadable == ["mig_enabled: Not Supported"]


def test_throttling_during_the_window_is_a_warning_idle_is_not(boards):
    nvml = sys.modules["pynvml"]
    board = boards[0]
    board.reasons = 0x1  # idle before timing
    before = read_state(nvml, board)
    assert throttle_warnings(before, read_state(nvml, board)) == []
    board.thermal_violation_ns += 250_000_000
    board.reasons = 0x20
    warnings = throttle_warnings(before, read_state(nvml, board))
    assert warnings[0] == ("GPU throttled (thermal) for 250.0 ms during the measurement "
                           "(NVML violation counters)")
    assert "SwThermalSlowdown" in warnings[1]
    assert decode_throttle_reasons(0) == []


class FakeTime:
    def __init__(self):
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.t += seconds


def test_the_counter_step_is_observed_from_its_changes():
    clock = FakeTime()

    def counter() -> float:
        return float(int(clock.t / 0.05))

    step = observe_counter_step(counter, clock.now, clock.sleep)
    assert step == pytest.approx(0.05, abs=0.002)
    frozen = FakeTime()
    assert observe_counter_step(lambda: 1.0, frozen.now, frozen.sleep) is None
    assert frozen.t == pytest.approx(1.0, abs=0.01)  # gave up after its limit


def test_a_window_is_reliable_only_when_long_enough_for_the_counter():
    assert check_window(0.05, 3.2, 0).reliable  # 64 steps, 3.2 s
    short = check_window(0.05, 0.08, 0)  # an 80 ms window: 300 calls of a 1 GB head on an H200
    assert not short.reliable and short.steps_in_window == pytest.approx(1.6)
    assert not check_window(0.2, MIN_WINDOW_S, 0).reliable  # 15 steps < MIN_COUNTER_STEPS
    assert not check_window(None, 10.0, 0).reliable


class Calls:
    def __init__(self, clock: FakeTime, seconds: float):
        self.clock, self.seconds, self.calls = clock, seconds, 0
        self.details = {"gpu_uuid": UUID_A}

    def call(self) -> None:
        self.calls += 1
        self.clock.t += self.seconds


def test_the_energy_window_is_filled_with_calls_until_long_enough_and_the_step_recorded(boards, monkeypatch):
    clock = FakeTime()
    monkeypatch.setattr("anebench.measure.gpu.observe_counter_step", lambda read, now: 0.1)
    prepared = Calls(clock, 2.7e-4)
    run = GpuRun("cuda:0", prepared, now_s=clock.now)
    window = run.energy_window()
    assert isinstance(window, EnergyWindow) and not isinstance(window.meter, Unavailable)
    window.open()  # the timing loop opens it at the first timed call and closes it after the last
    for _ in range(300):  # the timed calls: 81 ms
        prepared.call()
    window.close()
    extra = run.fill_energy_window(prepared, window)
    check = run.window_check
    assert check.reliable and check.counter_step_s == 0.1 and check.extra_calls == extra
    assert check.window_s >= max(MIN_WINDOW_S, MIN_COUNTER_STEPS * 0.1)
    assert extra == pytest.approx((3.0 - 0.081) / 2.7e-4, abs=2)


def test_gpu_run_without_nvml_or_uuid_records_why(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)
    run = GpuRun("cuda:0", types.SimpleNamespace(details={"gpu_uuid": UUID_A}))
    assert "nvidia-ml-py" in run.unavailable and run.before is None
    run = GpuRun("cuda:0", types.SimpleNamespace(details={}))
    assert "UUID of cuda:0 is unknown" in run.unavailable


def test_gpu_warnings_flag_an_unreliable_energy_window():
    report = GpuReport(headline_reason="x", energy_window=check_window(0.1, 0.5, 0))
    expected = ("energy figure unreliable: the window (0.50 s) spans 5 counter steps of 100 ms; "
                f"at least {MIN_COUNTER_STEPS} steps and {MIN_WINDOW_S:g} s are needed")
    assert gpu_warnings(report) == [RecordWarning(kind="energy", text=expected)]
