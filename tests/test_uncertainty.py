"""Numbers that hold on a noisy machine: storing every record the tool writes, one uncertainty figure
everywhere, the sweep's and the ridge's gates, interleaved runs and paired comparisons."""

from __future__ import annotations

import pytest

from anebench.model import MethodInfo
from anebench.results.store import open_store
from anebench.results.validate import plausibility_problems
from clitools import run_cli
from test_store import make_record


def _fast_record(median_s: float, resolution_s: float | None):
    record = make_record(gbps=512 / median_s / 1e9, workload="lm_head:8x16:fp32")
    method = MethodInfo(runs=5, warmup_policy="until steady", warmup_runs=3, timer="perf_counter_ns",
                        timer_resolution_s=resolution_s)
    return record.model_copy(update={"method": method}).with_id()


def test_the_validator_floor_follows_the_records_own_timer():
    """A `latency` record of 0.84 us timed by a 35 ns clock passed the loop's 20-tick rule: it is valid.
    The same figure from a 100 ns clock (20 ticks = 2 us) is refused, naming the rule."""
    assert not [p for p in plausibility_problems(_fast_record(8.41e-7, 3.5e-8)) if "below" in p]
    problems = [p for p in plausibility_problems(_fast_record(8.41e-7, 1e-7)) if "below" in p]
    assert problems and "20 ticks of its perf_counter_ns timer" in problems[0]
    stated = [p for p in plausibility_problems(_fast_record(8.41e-7, None)) if "below" in p]
    assert stated and "1 us" in stated[0]


def test_latency_records_are_stored_with_store(capsys, tmp_path):
    db = tmp_path / "store.sqlite"
    quick = ("--runs", "200", "--warmup", "2", "--time-budget", "0.5", "--no-save")
    code, _, stderr = run_cli(capsys, "latency", "-e", "numpy", "--no-sweep", *quick, "--store",
                              "--db", str(db))
    # --no-sweep and --db name different things for `latency`; --db with --store alone is the store
    assert code == 2 and "--db" in stderr
    code, _, stderr = run_cli(capsys, "latency", "-e", "numpy", "--no-sweep", *quick, "--store")
    assert code == 0, stderr
    assert "stored 1 record(s)" in stderr and "0 already there" in stderr


def test_every_suite_takes_store_and_db(capsys, tmp_path):
    db = tmp_path / "store.sqlite"
    code, _, stderr = run_cli(capsys, "compute", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--runs", "5",
                              "--warmup", "1", "--time-budget", "0.2", "--no-save", "--store", "--db",
                              str(db))
    assert code in (0, 1), stderr
    with open_store(db, create=False, readonly=True) as store:
        stored = store.records()
    assert stored and {r.suite for r in stored} == {"compute"}
    for command in ("sweep", "roofline", "concurrent", "quant", "latency"):
        code, stdout, _ = run_cli(capsys, command, "--help")
        assert code == 0 and "--store" in stdout and "--db" in stdout, command


@pytest.fixture(autouse=True)
def _isolated_store(monkeypatch, tmp_path):
    """The default store lives in the test's own directory."""
    monkeypatch.setattr("anebench.results.store.default_db_path", lambda: tmp_path / "default.sqlite")
