"""`run` as one library entry, driven without click: a request in, an outcome out (the plan, the checks,
the measurement and an interrupt), with what the caller hears on the way as stated events."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from anebench.errors import UserError
from anebench.orchestration import entry
from anebench.orchestration.executor import Executor
from anebench.orchestration.session import measure_workload

SMALL = ("lm_head:64x256:fp32", "lm_head:128x256:fp32")


class Heard:
    """Every event of a run, in order."""

    def __init__(self) -> None:
        self.said: list[tuple] = []

    def planned(self, plan, measuring: bool) -> None:
        self.said.append(("planned", len(plan.steps), measuring))

    @contextmanager
    def progress(self, steps: int):
        self.said.append(("progress", steps))

        def started(label: str, total: int):
            self.said.append(("started", label, total))
            return None

        yield started
        self.said.append(("progress done",))

    def finished(self, records) -> None:
        self.said.append(("finished", [r.workload.name for r in records]))

    def events(self) -> entry.RunEvents:
        return entry.RunEvents(planned=self.planned, warn=lambda text: None, progress=self.progress,
                               finished=self.finished)


def test_run_is_a_request_in_and_an_outcome_out():
    heard = Heard()
    request = entry.RunRequest(engines=("numpy",), workloads=SMALL, timing=entry.Timing(runs=5))
    outcome = entry.run(request, heard.events())
    assert outcome.measured and not outcome.interrupted and outcome.steps == 2 and not outcome.campaign
    assert [r.workload.name for r in outcome.records] == list(SMALL)
    assert all(r.method.runs == 5 and r.engine.name == "numpy" and r.gbps > 0 for r in outcome.records)
    assert heard.said == [
        ("planned", 2, True),
        ("progress", 2),
        ("started", f"numpy:cpu {SMALL[0]}", 5),
        ("finished", [SMALL[0]]),
        ("started", f"numpy:cpu {SMALL[1]}", 5),
        ("finished", list(SMALL)),
        ("progress done",),
    ]


def test_an_interrupt_keeps_the_finished_steps():
    calls: list[int] = []

    def second_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return measure_workload(*args, **kwargs)

    request = entry.RunRequest(engines=("numpy",), workloads=SMALL, timing=entry.Timing(runs=5))
    outcome = entry.run(request, executor=Executor(measure=second_interrupted))
    assert outcome.interrupted and outcome.steps == 2
    assert [r.workload.name for r in outcome.records] == [SMALL[0]]


def test_a_dry_run_plans_and_measures_nothing():
    heard = Heard()

    def never(*args, **kwargs):
        raise AssertionError("a dry run measured")

    request = entry.RunRequest(engines=("numpy",), workloads=SMALL, dry_run=True, power=True)
    outcome = entry.run(request, heard.events(), Executor(measure=never, check_memory=never))
    assert not outcome.measured and outcome.records == []
    assert [(p.engine, p.workload, p.power) for p in outcome.plan] == [("numpy", w, True) for w in SMALL]
    assert heard.said == [("planned", 2, False)]


def test_refusals_come_before_any_measurement_and_name_settings_not_flags():
    def never(*args, **kwargs):
        raise AssertionError("measured before refusing")

    request = entry.RunRequest(engines=("numpy",), workloads=SMALL[:1], power=True,
                               timing=entry.Timing(runs=6, repetitions=3, fresh_processes=True))
    with pytest.raises(UserError) as refused:
        entry.run(request, executor=Executor(measure=never))
    assert str(refused.value).startswith("power with fresh_processes:") and "--" not in str(refused.value)
    with pytest.raises(UserError, match="runs 2 is fewer than repetitions 3"):
        entry.run_options(entry.Timing(runs=2, repetitions=3))


def test_a_suite_is_a_request_in_and_an_outcome_out():
    """compute through its library entry, without click: the records and the failed analyses come back."""
    from anebench.orchestration import suite_entry

    said: list[tuple] = []

    @contextmanager
    def display():
        said.append(("progress",))

        def factory(label: str, total: int):
            said.append(("measuring", label))
            return None

        yield factory

    events = suite_entry.SuiteEvents(
        planned=lambda workloads: said.append(("planned", [w.name for w in workloads])),
        ready=lambda: said.append(("ready",)),
        progress=display,
    )
    request = suite_entry.ComputeRequest(engines=("numpy",), workloads=("lm_head:128x256:fp32",),
                                         timing=entry.Timing(runs=3, time_budget_s=0.5), batch=8)
    outcome = suite_entry.compute(request, events)
    (record,) = outcome.records
    assert record.suite == "compute" and record.workload.batch == 8 and record.compute is not None
    assert [(t.engine.name, b.name) for t, b, _ in outcome.results] == [("numpy", "lm_head:128x256:fp32")]
    peak = record.compute.compute_bound
    expected = [] if peak else [f"numpy:cpu {record.workload.name}: not compute-bound"]
    assert [f.split(" (")[0] for f in outcome.failures] == expected
    assert said[:3] == [("planned", ["lm_head:128x256:fp32"]), ("ready",), ("progress",)]
    assert all(kind == "measuring" for kind, *_ in said[3:]) and len(said) > 3


def test_a_suite_refuses_before_it_measures():
    from anebench.orchestration import suite_entry

    ready: list[int] = []
    request = suite_entry.ComputeRequest(engines=("numpy",), workloads=("no_such_workload",))
    with pytest.raises(UserError):
        suite_entry.compute(request, suite_entry.SuiteEvents(ready=lambda: ready.append(1)))
    assert ready == []  # refused while resolving: nothing was checked or measured
