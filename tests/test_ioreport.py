"""The IOReport energy source on sample structures (channel group/subgroup/name, unit, value or residencies).

The live library only exists on macOS; everything it returns goes through the pure parsing tested here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import ClassVar

import pytest

from anebench.measure.timing import time_calls
from anebench.measure.warmup import WarmupPolicy
from anebench.model import Energy, ResultRecord
from anebench.orchestration.session import timed_window
from anebench.system import ioreport, power
from anebench.system.energy_figures import Counted, energy_figures, energy_line, energy_warnings
from anebench.system.ioreport_parse import (
    Channel,
    bucket_edge_gbps,
    channels_from_json,
    dram_bandwidth,
    energy_by_component,
)
from anebench.system.power import EnergyWindow
from fakehost import pretend_linux_host, pretend_macos
from fakepipeline import state_meters

DATA = Path(__file__).parent / "data" / "ioreport"


def sample(name: str) -> list[Channel]:
    return channels_from_json(json.loads((DATA / name).read_text()))


def energy(name: str, value: int, unit: str = "mJ") -> Channel:
    return Channel("Energy Model", "", name, unit, value)


def test_units_are_read_from_each_channel_never_assumed():
    same = [energy("CPU Energy", 2_000, "mJ"), energy("GPU Energy", 2_000_000, "uJ"),
            energy("ANE", 2_000_000_000, "nJ"), energy("DRAM", 2_000_000, "\u00b5J")]
    reading = energy_by_component(same)
    assert [reading.components[c].joules for c in ("cpu", "gpu", "ane", "dram")] == pytest.approx([2.0] * 4)
    assert reading.components["package"].joules == pytest.approx(8.0)
    odd = energy_by_component([energy("CPU Energy", 5, "kWh"), energy("GPU Energy", 1000)])
    assert odd.components["cpu"].joules is None and "unknown energy unit 'kWh'" in odd.missing["cpu"]
    assert odd.components["package"].joules == pytest.approx(1.0)  # the GPU alone, and it says so
    assert "without cpu" in odd.components["package"].problems[-1]


def test_a_counter_that_went_backwards_is_left_out_with_the_reason_not_subtracted():
    reading = energy_by_component(
        [
            energy("DIE_0_CPU Energy", 1000),
            energy("DIE_1_CPU Energy", -4_294_966_296),
            energy("GPU Energy", 500),
        ]
    )
    cpu = reading.components["cpu"]
    assert cpu.joules == pytest.approx(1.0) and cpu.channels == ["DIE_0_CPU Energy"]
    assert (
        "DIE_1_CPU Energy: the counter went backwards" in cpu.problems[0]
        and "wrapped or reset" in cpu.problems[0]
    )
    assert reading.components["package"].joules == pytest.approx(1.5)
    assert any("went backwards" in p for p in reading.components["package"].problems)


def test_recorded_single_die_sample_by_component():
    reading = energy_by_component(sample("single_die.json"))
    joules = {name: c.joules for name, c in reading.components.items()}
    # cluster channels (EACC_CPU, PACC0_CPU) are inside "CPU Energy" and the display is not the SoC's work
    assert joules == pytest.approx({"cpu": 3.0, "gpu": 0.5, "gpu_sram": 0.02, "ane": 1.2, "dram": 0.8,
                                    "package": 5.52})
    assert reading.missing == {}


def test_missing_ane_channel_is_unavailable_with_a_reason_and_the_rest_still_counts():
    reading = energy_by_component(sample("no_ane.json"))
    assert set(reading.missing) == {"ane", "dram"} and "ANE*" in reading.missing["ane"]
    result = figures_for("no_ane.json", work="ane", seconds=1.0, calls=10)
    ane = result.component("ane")
    assert not ane.available and "ANE*" in ane.reason
    assert result.available and result.joules == pytest.approx(2.1) and result.work_gbps_per_watt is None
    assert not result.dram_traffic.available and "AMCC RD+WR" in result.dram_traffic.reason


def test_bucket_names_give_their_upper_edge_in_gigabytes():
    assert bucket_edge_gbps("32GB/s") == 32.0
    assert bucket_edge_gbps("0-512 MB/s") == 0.512
    assert bucket_edge_gbps("1.5 TB/s") == 1500.0
    assert bucket_edge_gbps("IDLE") is None


def test_multi_die_bandwidth_is_the_sum_of_the_dies_not_their_mean():
    reading = dram_bandwidth(sample("two_die.json"))
    assert [d.channel for d in reading.dies] == ["AMCC0 RD+WR", "AMCC1 RD+WR"]
    assert [d.gbps for d in reading.dies] == pytest.approx([48.0, 32.0])
    assert reading.gbps == pytest.approx(80.0)
    assert reading.resolution_gbps == pytest.approx(64.0)  # one 32 GB/s bucket per die


def test_single_die_ignores_per_agent_histograms():
    reading = dram_bandwidth(sample("single_die.json"))
    assert [d.channel for d in reading.dies] == ["AMCC RD+WR"] and reading.gbps == pytest.approx(128.0)


def test_an_unreadable_die_makes_the_dram_view_unavailable_not_partial():
    channels = sample("two_die.json")
    broken = [c if c.name != "AMCC1 RD+WR" else Channel(c.group, c.subgroup, c.name, states=(("IDLE", 5),))
              for c in channels]
    result = figures_from(broken, work="gpu", seconds=1.0, calls=10, weight_bytes=8 * 10**9)
    assert not result.dram_traffic.available and "would be partial" in result.dram_traffic.reason


class NamedMeter:
    source, scope, sampling = "IOReport (fake)", "the SoC", "two samples"


def figures_from(channels, work, seconds, calls, weight_bytes=10**9, median_s=None) -> Energy:
    reading = energy_by_component(channels)
    counted = Counted(reading.components["package"].joules, reading, dram_bandwidth(channels))
    median_s = median_s or seconds / calls
    return energy_figures(
        NamedMeter(),
        "the timed calls",
        counted,
        seconds,
        calls,
        weight_bytes / median_s / 1e9,
        weight_bytes,
        work,
    )


def figures_for(name, **kwargs) -> Energy:
    return figures_from(sample(name), **kwargs)


def test_two_die_gpu_record_gb_per_watt_on_the_gpu_and_the_package():
    # 1 s of 10 calls of 8 GB: 80 GB/s of weights; the controllers saw 80 GB/s: they agree
    result = figures_for("two_die.json", work="gpu", seconds=1.0, calls=10, weight_bytes=8 * 10**9)
    assert result.available and result.joules == pytest.approx(2.0 + 4.0 + 0.3 + 1.0)
    gpu = result.component("gpu")
    assert gpu.watts == pytest.approx(4.0) and gpu.joules_per_call == pytest.approx(0.4)
    assert result.work_component == "gpu" and result.work_gbps_per_watt == pytest.approx(80.0 / 4.0)
    assert result.gbps_per_watt == pytest.approx(80.0 / 7.3)
    assert result.component("ane").channels == ["ANE0_0", "ANE0_1"]
    dram = result.dram_traffic
    assert dram.available and dram.agrees and dram.gbps == pytest.approx(80.0)
    assert dram.per_die_gbps == pytest.approx([48.0, 32.0]) and dram.bucket_width_gbps == 32.0
    assert dram.bytes_per_call == pytest.approx(8e9) and dram.weight_gbps == pytest.approx(80.0)
    assert energy_warnings(result) == []
    line = energy_line(result)
    assert "gpu 4.00 W" in line and "GB/s per gpu W" in line and "DRAM 80.0 GB/s" in line


def test_disagreement_beyond_the_resolution_warns_and_an_idle_work_component_too():
    # 3 GB/s of weights against 80 GB/s of DRAM traffic: more than 64 GB/s apart
    result = figures_for("two_die.json", work="gpu", seconds=1.0, calls=10, weight_bytes=3 * 10**8)
    assert result.dram_traffic.agrees is False
    assert any("DRAM traffic" in w.text and "resolution 64 GB/s" in w.text and w.kind == "dram-traffic"
               for w in energy_warnings(result))
    idle = [c if not c.name.startswith("ANE") else Channel(c.group, c.subgroup, c.name, c.unit, 0)
            for c in sample("two_die.json")]
    on_ane = figures_from(idle, work="ane", seconds=1.0, calls=10, weight_bytes=8 * 10**9)
    # the ANE did the work and its channels read 0: unavailable, never 0 W nor an infinite GB/s per watt
    ane = on_ane.component("ane")
    assert not ane.available and ane.watts is None and ane.reason.startswith("counter did not move: ANE0_0")
    assert not on_ane.available and on_ane.watts is None and on_ane.gbps_per_watt is None
    assert on_ane.reason.startswith("counter did not move: the ane channel(s) read 0")
    assert any(w.text.startswith("energy: ane unavailable: counter did not move") and w.kind == "energy"
               for w in energy_warnings(on_ane))


class CountingPrepared:
    """Counts calls; the fake meter notes the count at each reading."""

    weight_bytes = 1000

    def __init__(self) -> None:
        self.calls = 0

    def call(self) -> None:
        self.calls += 1
        t = 0
        for i in range(20000):  # long enough for the timer's 20-tick rule
            t += i

    def device_seconds(self) -> None:
        return None


class CallCountMeter(power.ScalarMeter):
    source, scope = "fake", "test"

    def __init__(self, prepared: CountingPrepared) -> None:
        self.prepared, self.seen = prepared, []

    def read_joules(self) -> float:
        self.seen.append(self.prepared.calls)
        return float(self.prepared.calls)


def test_the_window_opens_after_the_warmup_and_closes_after_the_last_timed_call():
    prepared = CountingPrepared()
    meter = CallCountMeter(prepared)
    window = EnergyWindow(meter)
    timing = time_calls(prepared, runs=7, warmup=WarmupPolicy(fixed=4), phase=timed_window(window, None))
    assert timing.warmup_runs == 4 and meter.seen == [4, 11]  # 4 warmup calls outside, the 7 timed inside
    result = window.finish(len(timing.samples_s), 1000, sorted(timing.samples_s)[3], "timed")
    assert result.calls == 7 and result.joules == 7.0


def test_session_records_a_typed_energy_section_with_warnings(monkeypatch):
    from anebench.engines import get_engine
    from anebench.orchestration.session import RunOptions, measure_workload
    from anebench.workloads import Workload

    class IOReportLike(power.ScalarMeter):
        source, scope = "IOReport (fake)", "the SoC"

        def read(self):
            return None

        def between(self, start, end):  # the recorded joules as nanojoules: a plausible power for a short run
            channels = [Channel(c.group, c.subgroup, c.name, "nJ" if c.unit else "", c.value, c.states)
                        for c in sample("single_die.json")]
            reading = energy_by_component(channels)
            return Counted(reading.components["package"].joules, reading, dram_bandwidth(channels))

    state_meters(monkeypatch, lambda device: IOReportLike())
    record = measure_workload(get_engine("numpy"), "cpu", Workload("t", 64, 512, "fp32"),
                              RunOptions(runs=5, power=True, warmup=WarmupPolicy(fixed=1)))
    assert record.energy.work_component == "cpu" and record.energy.component("cpu").available
    assert record.energy.dram_traffic.agrees is False  # 128 GB/s of DRAM traffic for a 128 KB head
    assert any(w.text.startswith("DRAM traffic") for w in record.warnings)
    again = ResultRecord.model_validate_json(record.model_dump_json(by_alias=True))
    assert again.energy == record.energy and again.id == again.content_id()


def test_old_extras_energy_reads_as_the_typed_section():
    old = {"available": True, "source": "Linux RAPL (powercap)", "scope": "CPU package(s)", "window": "x",
           "calls": 305, "joules": 2.0, "seconds": 1.0, "watts": 2.0, "joules_per_call": 0.0066,
           "gbps_per_watt": 3.0}
    assert Energy.model_validate(old).watts == 2.0
    assert not Energy.model_validate({"available": False, "reason": "no counter"}).available


def test_ioreport_says_macos_only_off_macos(monkeypatch):
    pretend_linux_host(monkeypatch)
    assert ioreport.ioreport_problem() == "macOS only"
    assert power.ioreport_meter().reason == "IOReport: macOS only"


@pytest.mark.macos
def test_live_ioreport_window_gives_figures_or_clean_reasons():
    meter = power.ioreport_meter()
    if isinstance(meter, power.Unavailable):
        assert meter.reason.startswith("IOReport")
        return
    window = EnergyWindow(meter, "cpu")
    window.open()
    total = 0
    for i in range(3_000_000):
        total += i
    window.close()
    result = window.finish(1, 10**6, 0.1, "a busy loop")
    assert result.available or result.reason
    for component in result.components:
        assert component.available or component.reason


class FakeSubscription:
    """actop.ioreport.IOReportSubscription's surface (1.9.12): sample(), delta(s1, s2, extract_states),
    close()."""

    released: ClassVar[list] = []

    def __init__(self, channels):
        self.groups = channels
        self.samples = 0
        self.filters: list = []
        self.closed = False

    def sample(self):
        self.samples += 1
        return f"sample {self.samples}"

    def delta(self, s1, s2, extract_states=None):
        from collections import namedtuple

        item = namedtuple("IOReportItem", ["group", "subgroup", "channel", "unit", "integer_value",
                                           "state_residencies"])
        self.filters.append(extract_states)
        return [item(c.group, c.subgroup, c.name, c.unit, c.value,
                     list(c.states) if extract_states is None or extract_states(c.group, c.subgroup, c.name)
                     else []) for c in sample("two_die.json")]

    def close(self):
        self.closed = True


def test_the_thin_layer_drives_actop_and_hands_its_items_to_the_parser(monkeypatch):
    import types

    fake = types.SimpleNamespace(IOReportSubscription=FakeSubscription,
                                 cf_release=lambda ref: FakeSubscription.released.append(ref))
    monkeypatch.setitem(sys.modules, "actop", types.ModuleType("actop"))
    monkeypatch.setitem(sys.modules, "actop.ioreport", fake)
    pretend_macos(monkeypatch)
    monkeypatch.setattr(ioreport.sys, "version_info", (3, 11, 0))
    meter = power.ioreport_meter()
    assert isinstance(meter, power.IOReportMeter)
    assert meter.counters._subscription.groups == [("Energy Model", None), ("PMP", "DCS BW")]
    window = EnergyWindow(meter, "ane", now_ns=iter([0, 0, 10**9, 10**9]).__next__)
    window.open()
    window.close()
    result = window.finish(10, 8 * 10**9, 0.1, "the timed calls")
    assert result.available and result.component("ane").joules == pytest.approx(0.3)
    assert result.dram_traffic.gbps == pytest.approx(80.0)  # the AMCC histograms kept their states
    keep = meter.counters._subscription.filters[0]
    assert keep("PMP", "DCS BW", "AMCC0 RD+WR") and keep("PMP", "DCS BW", "ANE0 RD")  # the ANE's own view
    assert not keep("PMP", "DCS BW", "GFX RD+WR") and not keep("Energy Model", "", "ANE0")
    assert FakeSubscription.released == ["sample 1", "sample 2"] and meter.counters._subscription.closed


# --- counters that say when they cannot be trusted (M5 / macOS 27) ---------------------------------------


def test_units_are_matched_without_regard_to_case_as_actop_lower_cases_them():
    lower = energy_by_component([energy("CPU Energy", 2_000, "mj"), energy("GPU Energy", 2_000_000, "UJ"),
                                 energy("ANE", 2_000_000_000, "NJ"), energy("DRAM", 2, "j")])
    assert [lower.components[c].joules for c in ("cpu", "gpu", "ane", "dram")] == pytest.approx([2.0] * 4)
    assert lower.missing == {}


def test_the_anes_pmp_histograms_are_its_dram_view():
    reading = dram_bandwidth(sample("m5_macos27_ane_zero.json"))
    assert [d.channel for d in reading.ane] == ["ANE0 RD", "ANE0 WR"]
    assert [d.gbps for d in reading.ane] == pytest.approx([48.0, 16.0])
    assert [d.channel for d in reading.dies] == ["AMCC RD+WR"]  # the agent histograms are not dies


def test_a_zero_reading_ane_channel_is_unavailable_never_zero_watts():
    result = figures_for("m5_macos27_ane_zero.json", work="ane", seconds=2.0, calls=100, weight_bytes=10**9)
    ane = result.component("ane")
    assert not ane.available and ane.watts is None and ane.joules is None
    assert ane.reason.startswith("counter did not move: ANE0 read 0 over 2.000 s while the ane")
    assert "PMP ANE RD/WR histograms moved (64.0 GB/s): the ANE ran" in ane.reason
    # the CPU drives the calls and the weights stream from DRAM: their 0 readings do not count either
    assert not result.component("cpu").available and not result.component("dram").available
    assert result.component("gpu").available and result.component("gpu").watts == pytest.approx(0.25)
    assert not result.available and result.watts is None and result.gbps_per_watt is None
    assert result.work_gbps_per_watt is None
    assert result.dram_traffic.ane_gbps == pytest.approx(64.0)
    line = energy_line(result)
    assert line.startswith("unavailable: counter did not move: the ane, cpu, dram channel(s) read 0")
    again = Energy.model_validate_json(result.model_dump_json())  # the record keeps it as it is
    assert again == result


def test_info_reports_each_source_by_the_channels_found():
    from anebench.system.ioreport_parse import sources_found

    energy_model, totals, ane = sources_found(sample("no_ane.json"))
    assert energy_model.available and "no ane channel (ANE*)" in energy_model.reason
    assert any(line.startswith("cpu: ") and "(mJ)" in line for line in energy_model.channels)
    assert not totals.available and "AMCC RD+WR" in totals.reason  # the subscription alone proves nothing
    assert not ane.available
    energy_model, totals, ane = sources_found(sample("m5_macos27_ane_zero.json"))
    assert totals.channels == ("AMCC RD+WR",) and ane.channels == ("ANE0 RD", "ANE0 WR")
    assert any("ANE0 (mj)" in line for line in energy_model.channels)


class SteppingIOReport(power.ScalarMeter):
    """An IOReport-like meter whose package counter moves in steps of ``step_s`` at ``WATTS``."""

    WATTS = 5.0
    source, scope = "IOReport (fake)", "the SoC"
    min_window_s = power.IOREPORT_MIN_WINDOW_S

    def __init__(self, step_s: float) -> None:
        self.step_s, self.observed = step_s, 0

    def observe_step(self) -> float:
        self.observed += 1
        return self.step_s

    def read_joules(self) -> float:
        import time

        now = time.perf_counter()
        return self.WATTS * (now - now % self.step_s)


def test_an_ioreport_window_is_filled_to_its_minimum_and_checked_against_the_counter_step(monkeypatch):
    from anebench.engines import get_engine
    from anebench.orchestration.session import RunOptions, measure_workload
    from anebench.workloads import Workload

    meter = SteppingIOReport(step_s=0.02)
    state_meters(monkeypatch, lambda device: meter)
    record = measure_workload(get_engine("numpy"), "cpu", Workload("t", 64, 512, "fp32"),
                              RunOptions(runs=5, power=True, warmup=WarmupPolicy(fixed=1)))
    energy = record.energy
    assert meter.observed == 1 and energy.seconds >= power.IOREPORT_MIN_WINDOW_S
    assert energy.window_check.startswith("ok: ") and "counter steps of 20.0 ms" in energy.window_check
    assert "calls to fill the window" in energy.window and energy.calls > 5


def test_an_ioreport_window_short_against_its_counter_step_is_flagged_unreliable():
    clock = iter([0, 0, 400_000_000, 400_000_000]).__next__  # a 0.4 s window
    window = EnergyWindow(SteppingIOReport(step_s=0.1), "cpu", now_ns=clock)
    window.observe_step()
    window.open()
    window.close()
    result = window.finish(10, 1000, 0.04, "the timed calls")
    assert result.window_check.startswith("unreliable: the window (0.40 s) spans 4 counter steps of 100 ms")
    assert any(w.text.startswith("energy figure unreliable") for w in energy_warnings(result))
