"""Independent repetitions: the timing loop, the record's derived between-run interval, fresh processes,
and what `anebench run` prints and saves."""

from __future__ import annotations

import itertools
import json
import math
import os

import numpy as np
import pytest
from pydantic import ValidationError
from rich.console import Console

from anebench.cli.common import results_table
from anebench.engines import get_engine
from anebench.errors import UserError
from anebench.measure.clock import PERF_COUNTER, FakeClock
from anebench.measure.timing import split_runs, time_repetitions
from anebench.measure.uncertainty import gbps_range
from anebench.measure.warmup import WarmupPolicy
from anebench.model import ResultRecord, t975
from anebench.orchestration.fresh_processes import (
    RepetitionJob,
    in_fresh_process,
    measure_in_fresh_processes,
)
from anebench.orchestration.mitigations import KEEP_AWAKE, UsedMitigations
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.workloads import Workload
from clitools import run_cli
from test_timing import ScriptedCall
from uncertainty_records import repeated_record, stated_record

MS = 1e-3


def test_t_quantiles_match_the_tables():
    assert t975(1) == pytest.approx(12.706, abs=1e-3) and t975(2) == pytest.approx(4.303, abs=1e-3)
    assert t975(9) == pytest.approx(2.262, abs=1e-3) and t975(60) == pytest.approx(2.000, abs=1e-3)
    assert t975(2) > t975(2.5) > t975(3)  # Welch's fractional df falls between the neighbours


def test_runs_split_evenly_and_too_few_runs_are_refused():
    assert split_runs(300, 3) == [100, 100, 100] and split_runs(10, 3) == [4, 3, 3]
    with pytest.raises(UserError, match="runs 2 is fewer than repetitions 3"):
        split_runs(2, 3)


def test_each_repetition_warms_up_afresh_and_keeps_its_own_samples():
    fake = FakeClock()
    durations = [1 * MS] * 2 + [1 * MS] * 4 + [2 * MS] * 2 + [2 * MS] * 3 + [3 * MS] * 2 + [3 * MS] * 3
    prepared = ScriptedCall(fake, durations)
    seen: list[tuple[int, int]] = []
    timing = time_repetitions(prepared, runs=10, repetitions=3, warmup=WarmupPolicy(fixed=2),
                              clock=fake.clock(),
                              progress=lambda done, total: seen.append((done, total)))
    assert prepared.calls == 3 * 2 + 10  # a warmup of 2 before each repetition
    assert [r.runs for r in timing.repetitions] == [4, 3, 3]
    assert [r.warmup_runs for r in timing.repetitions] == [2, 2, 2] and timing.warmup_runs == 6
    np.testing.assert_allclose(timing.samples_s, [1 * MS] * 4 + [2 * MS] * 3 + [3 * MS] * 3, atol=1e-8)
    assert seen[-1] == (10, 10) and all(b[0] >= a[0] for a, b in itertools.pairwise(seen))


def test_the_time_budget_is_shared_between_repetitions():
    fake = FakeClock()
    prepared = ScriptedCall(fake, [0.1] * 200)
    timing = time_repetitions(prepared, runs=60, repetitions=2, warmup=WarmupPolicy(fixed=1),
                              clock=fake.clock(),
                              time_budget_s=0.7)
    assert [r.runs for r in timing.repetitions] == [4, 4]  # 0.35 s each: 4 calls of 0.1 s


def test_the_record_derives_every_repetition_median_and_the_between_run_interval():
    medians = [10 * MS, 10.3 * MS, 10.6 * MS]
    record = repeated_record(medians)
    assert [r.median_s for r in record.repetitions.runs] == pytest.approx(medians)
    centre = float(np.median(record.samples_s))
    half = t975(2) * np.std(np.log(medians), ddof=1) / math.sqrt(3)
    low, high = record.between_run()
    assert (low, high) == pytest.approx((centre * math.exp(-half), centre * math.exp(half)))
    between = record.repetitions.between_run
    assert between.unknown is None and "t-interval on the log" in between.method
    assert between.gbps_low == pytest.approx(record.workload.weight_bytes / high / 1e9)
    # wider than the within-run CI: the repetitions disagree by more than each one's samples do
    assert (high - low) > 2 * (record.summary.ci95_high - record.summary.ci95_low)
    assert ResultRecord.model_validate_json(record.model_dump_json(by_alias=True)) == record


def test_the_within_run_ci_is_a_floor_under_the_between_run_interval():
    record = repeated_record([10 * MS] * 3, spread=(-0.2, -0.1, 0.0, 0.1, 0.2))  # medians agree exactly
    assert record.between_run() == pytest.approx((record.summary.ci95_low, record.summary.ci95_high))


def test_one_repetition_says_the_between_run_interval_is_unknown():
    record = repeated_record([10 * MS])
    assert record.between_run() is None
    assert record.repetitions.between_run.unknown.startswith("unknown: one repetition")
    assert record.summary.ci95_low is not None  # the within-run CI is still there, and not promoted


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["repetitions"]["runs"][1].update(median_s=0.5), r"runs\[1\].median_s"),
    (lambda d: d["repetitions"]["between_run"].update(low_s=1e-6), "between_run.low_s"),
    (lambda d: d["repetitions"]["runs"][0].update(runs=4), "add up to 14"),
])
def test_a_file_whose_repetition_figures_contradict_its_samples_is_refused(edit, message):
    data = repeated_record([10 * MS, 11 * MS, 12 * MS]).model_dump(mode="json", by_alias=True)
    edit(data)
    with pytest.raises(ValidationError, match=message):
        ResultRecord.model_validate(data)


def test_a_stated_record_cannot_carry_repetitions():
    data = stated_record(100.0).model_dump(mode="json", by_alias=True)
    data["repetitions"] = {"runs": [{"runs": 1, "warmup_runs": 0}]}
    with pytest.raises(ValidationError, match="stated record"):
        ResultRecord.model_validate(data)


def test_measure_workload_records_each_repetition():
    workload = Workload("rep", hidden=64, vocab=512, dtype="fp32", seed=3)
    options = RunOptions(runs=12, repetitions=3, warmup=WarmupPolicy(fixed=2))
    record = measure_workload(get_engine("numpy"), "cpu", workload, options)
    assert record.method.runs == 12 and len(record.samples_s) == 12
    assert record.method.warmup_runs == 6 and "each repetition" in record.method.warmup_policy
    assert [r.runs for r in record.repetitions.runs] == [4, 4, 4] and not record.repetitions.fresh_processes
    assert record.between_run() is not None


def test_fresh_processes_run_each_repetition_in_a_new_process():
    workload = Workload("fresh", hidden=64, vocab=512, dtype="fp32", seed=3)
    job = RepetitionJob(get_engine("numpy"), "cpu", workload, 5, WarmupPolicy(fixed=1), PERF_COUNTER, None,
                        False)
    (first, check, timing, _), (second, _, _, _) = in_fresh_process(job, 1), in_fresh_process(job, 2)
    assert len({first.pid, second.pid, os.getpid()}) == 3
    assert check.passed and len(timing.samples_s) == 5 and first.weight_bytes == 64 * 512 * 4


def test_fresh_process_repetitions_make_one_record():
    workload = Workload("fresh", hidden=64, vocab=512, dtype="fp32", seed=3)
    options = RunOptions(runs=6, repetitions=2, fresh_processes=True, warmup=WarmupPolicy(fixed=1))
    record = measure_in_fresh_processes(get_engine("numpy"), "cpu", workload, options).record()
    assert record.repetitions.fresh_processes and [r.runs for r in record.repetitions.runs] == [3, 3]
    assert record.method.warmup_runs == 2 and record.method.output_check.passed


def test_keep_awake_reaches_fresh_processes_as_a_value_not_as_the_records_sentence():
    from anebench.orchestration.runplan import Mitigations, Step

    workload = Workload("fresh", hidden=64, vocab=512, dtype="fp32", seed=3)
    step = Step(get_engine("numpy"), "cpu", workload)
    base = RunOptions(runs=4, repetitions=2, fresh_processes=True, warmup=WarmupPolicy(fixed=1))
    assert not Mitigations().options(base, step).keep_awake
    options = Mitigations(keep_awake=True).options(base, step)
    assert options.keep_awake and options.mitigations  # the record still says what was done
    record = measure_in_fresh_processes(step.engine, "cpu", workload, options).record()
    assert record.keep_awake is not None  # each repetition's process ran its own spinner
    # no longer looked up in the text: the options hold the mitigations as values (no sentence whose
    # presence could switch the spinner on or off), and the record's sentences are derived from them
    threads = options.mitigations.spinner_threads
    assert options.mitigations == UsedMitigations(keep_awake=True, spinner_threads=threads)
    assert record.method.mitigations == options.mitigations.describe()
    assert record.method.mitigations[0] == KEEP_AWAKE


def test_run_saves_three_repetitions_by_default_with_the_headline_interval(capsys, tmp_path):
    code, stdout, stderr = run_cli(capsys, "run", "-e", "numpy", "-w", "lm_head:128x2048:fp32", "--runs", "9",
                                   "--warmup", "1", "--json")
    assert code == 0, stderr
    (record,) = json.loads(stdout)["results"]
    assert [r["runs"] for r in record["repetitions"]["runs"]] == [3, 3, 3]
    between = record["repetitions"]["between_run"]
    assert between["low_s"] <= record["summary"]["median"] <= between["high_s"] and between["method"]
    assert "3 repetitions x 3 calls, in one process; between-run GB/s [" in stderr
    assert "within-run CI [" in stderr


@pytest.mark.parametrize("argv, expected", [
    (("--runs", "2"), "--runs 2 is fewer than --repetitions 3"),
    (("--power", "--fresh-processes"), "--power with --fresh-processes"),
])
def test_bad_repetition_options_exit_2_with_one_line(capsys, tmp_path, argv, expected):
    code, stdout, stderr = run_cli(capsys, "run", "-e", "numpy", "-w", "lm_head:128x2048:fp32", *argv)
    assert code == 2 and stdout == "" and expected in stderr and len(stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_run_table_labels_the_headline_interval_and_fits_80_columns():
    records = [repeated_record([62 * MS, 63 * MS, 61.5 * MS], engine="numpy", device="cpu"),
               repeated_record([62 * MS], engine="numpy", device="cpu"),
               repeated_record([6 * MS] * 3, engine="coreml", device="ane", workload="llama_lm_head_lut6")]
    console = Console(width=80, record=True, emoji=False)
    console.print(results_table(records))
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "95% range" in text and "between-run interval of GB/s" in text
    assert "llama_lm_head_lut6" in text and "coreml:ane" in text  # nothing cut
    assert gbps_range(records[0]).text() in text and "1 repetition" in text and "±" not in text


def test_scattered_repetitions_give_a_huge_interval_not_a_lost_measurement():
    record = repeated_record([0.05 * MS, 16 * MS, 3 * MS])  # a machine under heavy contention
    low, high = record.between_run()
    assert low < 0.01 * MS and high > 100 * MS
    assert ResultRecord.model_validate_json(record.model_dump_json(by_alias=True)) == record
