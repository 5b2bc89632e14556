"""The together phase's stop rule, the copies' plan (mode, threads, devices, memory) and the GIL."""

from __future__ import annotations

import pytest

from anebench.engines.coreml_engine import CoreMLEngine
from anebench.engines.mlx_engine import MlxEngine
from anebench.engines.numpy_engine import NumpyEngine
from anebench.errors import MeasurementError, UserError
from anebench.measure.concurrency import checked_window
from anebench.measure.timing import LoopState, UntilAllDone
from anebench.measure.warmup import WarmupPolicy
from anebench.orchestration.concurrency import SummedMeter, run_copies
from anebench.orchestration.concurrency_plan import describe_plan, plan_concurrent
from anebench.orchestration.session import RunOptions
from anebench.orchestration.suites.concurrent import run_concurrent
from anebench.workloads import Workload
from clitools import run_cli
from fakehost import FakeHost
from gil_engine import FakeMultiDevice, GilHoldingEngine, LongGilHoldingEngine

SMALL = Workload("t", 8, 16, "fp32")


def _step(rule: UntilAllDone, ticks: list[int], starts: list[int], t0: int, duration: int) -> int:
    """One call of a copy from t0, then the rule's answer (1: call again, 0: stop)."""
    starts.append(t0)
    ticks.append(duration)
    return rule.next_chunk(LoopState(ticks, starts, starts[0], t0 + duration))


def test_a_copy_descheduled_between_calls_keeps_calling_until_its_calls_overlap_the_others():
    """The interleaving behind the intermittent `no common window`: copy 0 made its runs, then lost the
    CPU between a call and its check while copy 1 made all of its runs. Counting from each copy's own
    first call, copy 0 saw every copy done and stopped: its calls all ended before copy 1's first."""
    bounds, done_at = [0, 0, 0, 0], [0, 0]
    early, late = UntilAllDone(3, 0, bounds, done_at), UntilAllDone(3, 1, bounds, done_at)
    e_ticks, e_starts, l_ticks, l_starts = [], [], [], []
    for t in range(1000, 1050, 10):  # copy 0 alone: 5 calls, none counted (copy 1 has not started)
        assert _step(early, e_ticks, e_starts, t, 10) == 1
    assert done_at[0] == 0
    for t in range(1100, 1130, 10):  # copy 1's three calls while copy 0 waits for the CPU
        _step(late, l_ticks, l_starts, t, 10)
    assert done_at[1] == 1130 and bounds[2] == 1100
    # copy 0 resumes: the old rule stopped here (window [1100, 1050]); this one counts from the common start
    # two counted calls are left: the rule asks for both before it reads the shared state again
    assert _step(early, e_ticks, e_starts, 1135, 10) == 2 and early.common_start == 1100
    assert _step(late, l_ticks, l_starts, 1130, 10) == 1  # copy 1 is done, but copy 0 is not: keep up
    answers = [_step(early, e_ticks, e_starts, t, 10) for t in (1145, 1155)]
    assert answers == [1, 0] and done_at[0] == 1165  # three calls since the common start, then stop
    assert _step(late, l_ticks, l_starts, 1140, 30) == 0  # its last call ends at 1170 >= every copy's done
    lo, hi = checked_window(bounds)
    assert (lo, hi) == (1100, 1165)  # every counted call of both copies lies inside it


class CountingTicks(list):
    """A tick list that counts the elements the rule reads through slices (the old rule re-summed all)."""

    read = 0

    def __getitem__(self, index):
        value = super().__getitem__(index)
        if isinstance(index, slice):
            CountingTicks.read += len(value)
        return value


@pytest.mark.parametrize("budget_s", [None, 10.0])
def test_the_together_rule_reads_each_call_once_whatever_the_run_count(budget_s):
    """O(1) per call: over 50,000 one-copy calls the rule reads each call's tick at most once and is
    asked about once per chunk of calls, not after every call."""
    for runs in (200, 50_000):
        CountingTicks.read = 0
        bounds, done_at = [0, 0], [0]
        rule = UntilAllDone(runs, 0, bounds, done_at, time_budget_s=budget_s)
        ticks, starts = CountingTicks(), []
        t, asked = 1000, 0
        state = LoopState(ticks, starts, 1000, 1000)
        chunk = rule.next_chunk(state)
        while chunk:
            for _ in range(chunk):
                starts.append(t)
                ticks.append(10)
                t += 10
            asked += 1
            chunk = rule.next_chunk(state)
        assert len(ticks) == runs and done_at[0] == t
        assert CountingTicks.read <= runs
        assert asked <= runs // rule.check_every + 3


def test_the_together_rule_stops_at_the_budget_in_chunks():
    bounds, done_at = [0, 0], [0]
    rule = UntilAllDone(10_000, 0, bounds, done_at, time_budget_s=1e-6)  # 1000 ns: 100 calls of 10 ns
    ticks, starts, t = [], [], 1000
    state = LoopState(ticks, starts, 1000, 1000)
    chunk = rule.next_chunk(state)
    while chunk:
        for _ in range(chunk):
            starts.append(t)
            ticks.append(10)
            t += 10
        chunk = rule.next_chunk(state)
    assert 100 <= len(ticks) <= 101


def test_no_common_window_names_every_copys_bounds():
    with pytest.raises(MeasurementError, match=r"no common window.*copy 0: 0\.000-0\.050 ms, copy 1: 0\.100"):
        checked_window([1_000_000, 1_050_000, 1_100_000, 1_150_000], origin_ns=1_000_000)


FAST = RunOptions(runs=12, warmup=WarmupPolicy(fixed=2), suite="concurrency")


def test_threads_serialise_a_gil_holding_call_and_processes_do_not():
    """Two copies of a call that holds the GIL (20 ms of usleep through PyDLL): as threads of one process
    they take turns (scaling ~1.0, a false 'shared ceiling'); as processes they overlap (~2.0). The calls
    sleep, so a busy core does not slow them; 20 ms keeps a woken copy's wait for a core (milliseconds on a
    loaded machine) small beside the call."""
    engine = LongGilHoldingEngine()
    scaling = {}
    for processes in (False, True):
        run = run_copies(engine, ["cpu", "cpu"], SMALL, FAST, processes=processes)
        from anebench.measure.concurrency import analyse_concurrency

        scaling[processes] = analyse_concurrency(run.solo, run.together, run.window_s,
                                                 run.calls_in_window).verdict.scaling
    assert scaling[False] < 1.25, scaling
    assert scaling[True] > 1.6, scaling


def test_a_gil_holding_engine_runs_its_copies_as_processes_and_refuses_threads():
    plan = plan_concurrent(CoreMLEngine(), "ane", SMALL, 2)
    assert plan.mode == "processes" and "holds the Python GIL" in plan.why
    with pytest.raises(UserError, match="^threads: coreml's call holds the Python GIL") as info:
        plan_concurrent(CoreMLEngine(), "ane", SMALL, 2, mode="threads")
    assert "\n" not in str(info.value)
    assert plan_concurrent(GilHoldingEngine(), "cpu", SMALL, 2).mode == "processes"
    assert plan_concurrent(MlxEngine(), "cpu", SMALL, 2).mode == "processes"  # MLX is not thread-safe
    with pytest.raises(UserError, match="not thread-safe"):
        plan_concurrent(MlxEngine(), "cpu", SMALL, 2, mode="threads")
    assert plan_concurrent(NumpyEngine(), "cpu", SMALL, 2).mode == "threads"


def test_the_run_plan_hint_prints_the_command_concurrent_will_run_as_processes():
    from anebench.orchestration import runplan

    hint = runplan.concurrency_hint("Apple M2 Ultra")
    assert "--processes" in hint and "--copies 2" in hint and "GIL" in hint


def test_cpu_copies_get_cores_over_copies_threads_each():
    eight, two = FakeHost(cores=8), FakeHost(cores=2)
    assert plan_concurrent(NumpyEngine(), "cpu", SMALL, 2, host=eight).threads_per_copy == 4
    assert plan_concurrent(NumpyEngine(), "cpu", SMALL, 3, host=eight).threads_per_copy == 2
    assert plan_concurrent(NumpyEngine(), "cpu", SMALL, 4, host=two).threads_per_copy == 1  # at least one
    assert plan_concurrent(NumpyEngine(), "cpu", SMALL, 2, threads_per_copy=3).threads_per_copy == 3
    assert plan_concurrent(MlxEngine(), "cpu", SMALL, 2).threads_per_copy is None  # no such setting
    with pytest.raises(UserError, match="threads_per_copy: mlx has no setting"):
        plan_concurrent(MlxEngine(), "cpu", SMALL, 2, threads_per_copy=1)


def test_several_devices_plan_one_process_per_device_and_check_each_devices_memory():
    engine = FakeMultiDevice()
    plan = plan_concurrent(engine, "cpu", SMALL, None, devices="fake:0,fake:2")
    assert plan.devices == ["fake:0", "fake:2"] and plan.mode == "processes" and plan.copies == 2
    assert [(m.pool, m.copies, m.free_bytes) for m in plan.memory] == [("fake:0", 1, 8 * 10**9),
                                                                      ("fake:2", 1, 8 * 10**9 - 2000)]
    assert plan_concurrent(engine, "cpu", SMALL, None, devices="all").devices == [
        "fake:0",
        "fake:1",
        "fake:2",
    ]
    lines = describe_plan(plan)
    assert "copy 1: fake:2, its own process, seed + 1" in lines
    assert any(line.startswith("memory on fake:2: 1 copies need") for line in lines)
    with pytest.raises(UserError, match="threads: with devices"):
        plan_concurrent(engine, "cpu", SMALL, None, mode="threads", devices="all")
    with pytest.raises(UserError, match="copies 3: devices places one copy on each of 2 devices"):
        plan_concurrent(engine, "cpu", SMALL, 3, devices="fake:0,fake:1")
    big = Workload("big", 10_000, 100_000, "fp32")  # 4 GB per copy: fits one device, not two on one
    plan_concurrent(engine, "cpu", big, None, devices="fake:0,fake:1")
    with pytest.raises(UserError, match="on fake:fake:0|on fake:0"):
        plan_concurrent(engine, "fake:0", big, 2)


def test_several_devices_run_copy_i_on_device_i_and_sum_energy():
    result = run_concurrent(FakeMultiDevice(), "cpu", Workload("t", 64, 1024, "fp32"), None,
                            RunOptions(runs=5, warmup=WarmupPolicy(fixed=1), suite="concurrency"),
                            devices="fake:0,fake:1")
    assert [r.engine.device for r in result.records] == ["fake:0", "fake:1"] * 2
    assert [r.engine.compute_units for r in result.records] == ["fake:0", "fake:1"] * 2  # placed there
    assert {r.concurrency.mode for r in result.records} == {"processes"}
    assert result.records[-1].concurrency.devices == ["fake:0", "fake:1"]
    from anebench.results.aggregate import aggregate

    (row,) = aggregate(result.records).concurrency
    assert row.device == "fake:0,fake:1" and row.combined_gbps == pytest.approx(result.analysis.combined_gbps)

    from anebench.system.power import ScalarMeter

    class Meter(ScalarMeter):
        source, scope = "fake counter", "one board"

        def __init__(self, joules):
            self.joules = joules

        def read_joules(self):
            return self.joules

    first, second = Meter(2.0), Meter(3.5)
    summed = SummedMeter([first, second], ["fake:0", "fake:1"])
    start = summed.read()
    first.joules, second.joules = 4.0, 6.0
    assert summed.between(start, summed.read()).joules == 4.5 and "sum over fake:0, fake:1" in summed.source


def test_dry_run_shows_the_plan_and_refuses_cuda_where_there_is_none(capsys, monkeypatch):
    from fakepipeline import state_engines

    state_engines(monkeypatch, fake=FakeMultiDevice)
    code, stdout, stderr = run_cli(capsys, "concurrent", "-e", "fake", "-w", "lm_head:64x1024:fp32",
                                   "--devices", "all", "--dry-run")
    assert code == 0, stderr
    assert "3 copies of lm_head:64x1024:fp32 on fake, as processes" in stdout
    assert "copy 2: fake:2, its own process" in stdout and "memory on fake:1:" in stdout
    code, stdout, stderr = run_cli(capsys, "concurrent", "-e", "torch", "--devices", "cuda:0,cuda:1",
                                   "--dry-run")
    import torch

    if not torch.cuda.is_available():
        assert code == 2 and stdout == "" and len(stderr.strip().splitlines()) == 1
        assert "--devices cuda:0: not a device of torch here (devices here: cpu)" in stderr
