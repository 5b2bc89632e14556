import time

import numpy as np
import pytest

from anebench.engines.base import Availability, Engine, Prepared
from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import MeasurementError, UserError
from anebench.measure.concurrency import analyse_concurrency, calls_in_window, common_window
from anebench.measure.warmup import WarmupPolicy
from anebench.orchestration.concurrency import run_copies
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.orchestration.suites.concurrent import run_concurrent
from anebench.system import power
from anebench.workloads import Workload
from fakehost import pretend_mac_host
from fakepipeline import state_meters

LLAMA_BYTES = 1_050_673_152  # llama_lm_head fp16, as anemll-bench reports it (1050.67 MB)
FAST = RunOptions(runs=8, warmup=WarmupPolicy(fixed=2), suite="concurrency")


@pytest.fixture(scope="module")
def template():
    return measure_workload(NumpyEngine(), "cpu", Workload("t", 64, 512, "fp32"), RunOptions(runs=3))


def record(template, gbps, calls=10, weight_bytes=LLAMA_BYTES):
    latency = weight_bytes / (gbps * 1e9)
    workload = template.workload.model_copy(update={"weight_bytes": weight_bytes})
    return template.model_copy(update={"workload": workload, "samples_s": [latency] * calls, "gbps": gbps})


def verdict_for(template, solo, together, combined, calls=10):
    solo_records = [record(template, g) for g in solo]
    together_records = [record(template, g, calls) for g in together]
    window = LLAMA_BYTES * calls * len(together) / (combined * 1e9)
    return analyse_concurrency(solo_records, together_records, window)


def test_published_m5_max_run_is_a_shared_ceiling(template):
    analysis = verdict_for(template, [148.39, 148.57], [74.06, 73.94], 147.62)
    assert analysis.combined_gbps == pytest.approx(147.62)
    assert analysis.verdict.scaling == pytest.approx(147.62 / 148.48, rel=1e-9)
    assert analysis.verdict.verdict == "shared ceiling"
    assert "< 1.1 shared ceiling" in analysis.as_dict()["rule"]


@pytest.mark.parametrize(
    "combined, expected",
    [
        (296.0, "independent units"),
        (223.0, "independent units"),
        (200.0, "partial"),
        (164.0, "partial"),
        (162.0, "shared ceiling"),
    ],
)
def test_verdict_follows_the_stated_thresholds(template, combined, expected):
    analysis = verdict_for(template, [148.0, 148.0], [combined / 2] * 2, combined)
    assert analysis.verdict.verdict == expected


def test_common_window_and_fractional_edge_calls():
    assert common_window([0, 100, 10, 90, 5, 120]) == (10, 90)
    calls = [(0, 20), (20, 40), (40, 60), (60, 80), (80, 100)]
    inside, fraction = calls_in_window(calls, (10, 90))
    assert inside == [1, 2, 3]
    assert fraction == pytest.approx(3 + 0.5 + 0.5)
    assert calls_in_window(calls, (200, 300)) == ([], 0.0)


def test_threads_measure_each_copy_solo_then_together(monkeypatch):
    # 1 mJ a reading: the solo window of 8 small calls can be 76 us, and 1 J over it read 13,109 W (refused
    # as not physical); 1 mJ over it is 13 W
    readings = iter(i * 1e-3 for i in range(100))
    fake_meter = type("M", (power.ScalarMeter,), {"source": "fake", "scope": "test",
                                                  "read_joules": lambda self: next(readings)})()
    state_meters(monkeypatch, lambda device: fake_meter)
    options = RunOptions(runs=8, warmup=WarmupPolicy(fixed=2), suite="concurrency", power=True)
    result = run_concurrent(NumpyEngine(), "cpu", Workload("t", 128, 2048, "fp32"), 2, options)
    solo, together = result.records[:2], result.records[2:]
    assert [r.concurrency.phase for r in result.records] == ["solo", "solo", "together", "together"]
    assert all("extras" not in r.model_dump() for r in result.records)  # typed sections, not extras
    assert solo[0].workload.fingerprint != solo[1].workload.fingerprint  # seed + i: different weights
    assert [r.workload.fingerprint for r in solo] == [r.workload.fingerprint for r in together]
    assert all(len(r.samples_s) >= 1 for r in together) and all(len(r.samples_s) == 8 for r in solo)
    assert all(r.device_time for r in result.records)  # wall clock only, and the record says so
    shared = together[0].concurrency
    assert shared.verdict in ("independent units", "partial", "shared ceiling")
    assert shared.scaling == pytest.approx(shared.combined_gbps / np.mean(shared.solo_gbps))
    assert shared.mode == "threads" and "seed + i" in shared.copies_note
    assert shared.call_releases_gil is True and shared.devices == ["cpu", "cpu"]
    # the stop rule keeps every copy calling until each has its runs inside the common window
    assert all(r.concurrency.whole_calls_in_window >= 8 for r in together)
    assert solo[0].energy.available and solo[0].energy.joules == pytest.approx(1e-3)
    assert "combined GB/s" in together[0].energy.window
    assert {r.energy.source for r in result.records} == {"fake"}  # as a single run names it
    assert together[0].energy.scope == "test"
    # the together window's energy is shared by every call made in it, edge calls included
    assert together[0].energy.calls == sum(r.concurrency.calls for r in together)


def test_processes_run_the_same_phases():
    result = run_concurrent(NumpyEngine(), "cpu", Workload("t", 128, 2048, "fp32"), 2, FAST, mode="processes",
                            threads_per_copy=1)
    assert len(result.records) == 4 and result.analysis.combined_gbps > 0
    assert result.records[-1].concurrency.mode == "processes"
    # the limit was applied inside each copy: numpy's BLAS ran one thread there (recorded at prepare)
    assert {r.concurrency.threads_per_copy for r in result.records} == {1}
    assert all(r.engine.details.get("blas_threads") == 1 for r in result.records)


class SleepyPrepared(Prepared):
    """Calls take a fixed time per seed, so copy 1 is slower than copy 0."""

    def __init__(self, workload):
        super().__init__()
        if workload.seed == 99:
            raise RuntimeError("out of device memory")
        self.workload, self.run_dtype, self.weight_bytes = workload, "fp32", workload.bytes_as("fp32")
        self.seconds = 0.002 * (1 + workload.seed)
        weights = workload.weights.read_rows(0, workload.vocab).astype(np.float64)
        self._y = (workload.inputs().astype(np.float64) @ weights.T).astype(np.float32)

    def call(self):
        time.sleep(self.seconds)

    def output(self):
        return self._y


class SleepyEngine(Engine):
    name = "sleepy"

    def available(self):
        return Availability(True)

    def devices(self):
        return ["cpu"]

    def version(self):
        return "0"

    def prepare(self, workload, device):
        return SleepyPrepared(workload)


def test_fast_copies_keep_calling_until_the_slowest_is_done():
    run = run_copies(SleepyEngine(), ["cpu", "cpu"], Workload("t", 8, 16, "fp32"), FAST)
    slow_calls = run.together[1].concurrency.calls
    fast_calls = run.together[0].concurrency.calls
    assert slow_calls >= 8 and fast_calls > slow_calls  # copy 0 kept the contention up
    assert run.window_s > 0 and all(n > 0 for n in run.calls_in_window)


def test_a_failing_copy_releases_the_others_and_names_the_cause():
    started = time.monotonic()
    with pytest.raises(MeasurementError, match="copy 1: RuntimeError: out of device memory"):
        run_copies(SleepyEngine(), ["cpu", "cpu"], Workload("t", 8, 16, "fp32", seed=98), FAST)
    assert time.monotonic() - started < 30


def test_fewer_than_two_copies_or_too_little_memory_is_refused():
    with pytest.raises(UserError, match="at least 2 copies"):
        run_concurrent(NumpyEngine(), "cpu", Workload("t", 8, 16, "fp32"), 1, FAST)
    with pytest.raises(UserError, match="GB is free"):
        run_concurrent(NumpyEngine(), "cpu", Workload("t", 100_000, 100_000, "fp32"), 2, FAST)


def test_suite_records_aggregate_into_one_verdict_per_workload():
    from anebench.results.aggregate import aggregate

    base = Workload("t", 128, 2048, "fp32")
    result = run_concurrent(NumpyEngine(), "cpu", base, 2, FAST)
    assert all(r.concurrency.base_fingerprint == base.fingerprint for r in result.records)
    summary = aggregate(result.records)
    (row,) = summary.concurrency  # both copies, both phases: one group despite per-copy fingerprints
    shared = result.records[-1].concurrency
    assert row.combined_gbps == pytest.approx(shared.combined_gbps)
    assert row.verdict == shared.verdict and row.mode == "threads"
    assert row.threads_per_copy == shared.threads_per_copy
    assert len(row.solo_gbps) == 2 and len(row.parallel_gbps) == 2
    assert summary.rows == []  # the suite's phases are not solo runs of the matrix


def test_the_copies_preflight_counts_a_quantized_head_as_stored():
    from anebench.engines.coreml_engine import CoreMLEngine, stored_bytes
    from anebench.errors import UserError
    from anebench.orchestration import preflight
    from anebench.orchestration.concurrency_plan import plan_concurrent
    from anebench.workloads import resolve_workload
    from fakehost import FakeHost

    lut6 = resolve_workload("llama_lm_head_lut6")
    two_copies = 2 * stored_bytes(lut6) * preflight.MEMORY_HEADROOM
    host = FakeHost(available_bytes=int(two_copies * 1.05))
    plan_concurrent(CoreMLEngine(), "ane", lut6, 2, host=host)  # fits: 6-bit copies, not fp16 ones
    with pytest.raises(UserError, match="3 copies of llama_lm_head_lut6"):
        plan_concurrent(CoreMLEngine(), "ane", lut6, 3, host=host)


def test_checkpoint_copies_say_they_hold_the_same_weights(tmp_path):
    from anebench.workloads import resolve_workload
    from checkpoint_builders import single_file_model

    model = single_file_model(tmp_path / "model")
    result = run_concurrent(NumpyEngine(), "cpu", resolve_workload(f"hf:{model}"), 2, FAST)
    note = result.records[-1].concurrency.copies_note
    assert "checkpoint's own weights" in note and "seed" not in note


# --- energy of a concurrent run on one SoC counter -------------------------------------------------------


class SocMeter(power.ScalarMeter):
    """One whole-SoC counter drawing ``WATTS``: every instance reads the same physical counter (as each
    IOReport subscription does), so reading it once per device would count the chip's energy N times.
    ``slow_reads`` maps a read's index to how long that read takes (the sample is taken at its start)."""

    WATTS = 10.0
    source, scope = "IOReport (fake)", "the whole SoC"

    def __init__(self, slow_reads: dict[int, float] | None = None) -> None:
        self.reads, self.slow_reads = 0, slow_reads or {}

    def read_joules(self) -> float:
        joules = self.WATTS * time.perf_counter()
        time.sleep(self.slow_reads.get(self.reads, 0.0))
        self.reads += 1
        return joules


def test_devices_sharing_one_soc_counter_read_it_once_not_once_per_device(monkeypatch):
    from gil_engine import FakeMultiDevice

    opened = []
    pretend_mac_host(monkeypatch)
    state_meters(monkeypatch, lambda device: opened.append(device) or SocMeter())
    assert power.counter_key("ane") == power.counter_key("gpu") == power.counter_key("cpu")
    assert power.counter_key("cuda:0") != power.counter_key("cuda:1")
    # A window of a third of a second or more: the check refuses reads past 10% of it, and on a
    # loaded CI runner the two reads alone have taken 4 ms against the 35 ms window of 30 calls.
    options = RunOptions(runs=300, warmup=WarmupPolicy(fixed=2), suite="concurrency", power=True)
    result = run_concurrent(FakeMultiDevice(), "fake:0", Workload("t", 256, 4096, "fp32"), None, options,
                            mode="processes", devices="fake:0,fake:1")
    assert len(opened) == 1  # one meter for the one counter
    together = [r for r in result.records if r.concurrency.phase == "together"]
    energy = together[0].energy
    assert energy.available and energy.watts == pytest.approx(SocMeter.WATTS, rel=0.1)  # not 2x
    assert "sum over" not in energy.source and "x each device" not in energy.scope


def test_a_slow_counter_read_at_the_common_start_leaves_the_together_energy_unavailable(monkeypatch):
    # Reads: 0 prepared, 1-2 the solo turns, 3 the common start, 4 all done. The read at the common start
    # takes 0.3 s: the copies finish inside it, and a timestamp taken after it would give the chip's
    # energy over a window of almost nothing (598 W on a Mac under load).
    meter = SocMeter(slow_reads={3: 0.3})
    state_meters(monkeypatch, lambda device: meter)
    options = RunOptions(runs=8, warmup=WarmupPolicy(fixed=2), suite="concurrency", power=True)
    result = run_concurrent(NumpyEngine(), "cpu", Workload("t", 128, 2048, "fp32"), 2, options)
    solo = [r for r in result.records if r.concurrency.phase == "solo"]
    together = [r for r in result.records if r.concurrency.phase == "together"]
    assert all(r.energy.available for r in solo)
    energy = together[0].energy
    assert not energy.available and energy.watts is None
    assert "common window" in energy.reason and "after the common window opened" in energy.reason
