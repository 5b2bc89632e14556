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
    assert code == 0 and "stored 1 record(s)" in stderr  # --db names the store for --store
    with open_store(db, create=False, readonly=True) as store:
        assert [r.suite for r in store.records()] == ["latency"]
    code, _, stderr = run_cli(capsys, "latency", "-e", "numpy", "--no-sweep", *quick, "--store")
    assert code == 0, stderr
    assert "stored 1 record(s)" in stderr and "0 already there" in stderr


def test_every_suite_takes_store_and_db(capsys, tmp_path):
    db = tmp_path / "store.sqlite"
    code, _, stderr = run_cli(capsys, "compute", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--runs", "5",
                              "--warmup", "1", "--time-budget", "0.2", "--no-save", "--store", "--db",
                              str(db))
    assert code in (0, 3), stderr
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


# --- one way to show uncertainty -------------------------------------------------------------------

MS = 1e-3


def test_one_record_shows_one_range_in_run_compare_submit_report_and_plot(capsys, tmp_path):
    from rich.console import Console

    from anebench.cli.common import results_table
    from anebench.measure.uncertainty import gbps_range
    from anebench.report.escape import md_cell
    from anebench.report.plots import bar_chart
    from anebench.report.submission import issue_body
    from anebench.report.tables import sections
    from anebench.results.aggregate import aggregate
    from anebench.results.files import save_records
    from uncertainty_records import repeated_record

    record = repeated_record([31.22 * MS, 31.68 * MS, 33.05 * MS])
    found = gbps_range(record)
    assert found is not None and found.low < record.gbps < found.high
    cell, span = found.cell(), found.text()  # "33.17 [30.82-35.69]"
    assert span.startswith("[") and "%" not in cell

    console = Console(width=120, record=True)
    console.print(results_table([record]))
    assert span in console.export_text()  # run

    a, b = tmp_path / "a.json", tmp_path / "b.json"
    save_records(a, [record])
    save_records(b, [repeated_record([31.17 * MS, 32.66 * MS, 32.10 * MS])])
    code, _, stderr = run_cli(capsys, "compare", str(a), str(b))
    assert code == 0 and f"GB/s {cell}" in stderr  # compare

    assert md_cell(cell) in issue_body([record], "s.json", anonymized=True)  # submit

    agg = aggregate([record])
    (matrix,) = [s for s in sections(agg) if s.title.startswith("Results:")]
    assert matrix.rows[0][2] == cell  # report

    figure = bar_chart(agg.rows, "t")  # plot: the error bar spans the same range
    (container,) = figure.axes[0].containers[1:]
    (segment,) = container.lines[2][0].get_segments()
    assert segment[0][0] == pytest.approx(found.low) and segment[1][0] == pytest.approx(found.high)


def test_a_report_cell_of_several_records_takes_the_spread_between_them():
    """The issue's cell: contributors at 16.8, 28.5 and 35.7 GB/s read "28.49 +-8.7%" (one run's own
    interval); their spread gives a range far wider, marked unreliable."""
    from anebench.measure.uncertainty import spread_range
    from anebench.results.aggregate import aggregate
    from anebench.workloads import resolve_workload
    from uncertainty_records import repeated_record

    weight = resolve_workload("llama_lm_head").weight_bytes
    records = [repeated_record([weight / (g * 1e9) * f for f in (0.99, 1.0, 1.01)], chip="Apple M4 Pro")
               for g in (16.8, 28.5, 35.7)]
    (row,) = aggregate(records).rows
    expected = spread_range([r.gbps for r in records])
    assert row.gbps_range == expected and row.gbps_range.unreliable
    assert row.gbps_range.low < 16.8 and row.gbps_range.high > 35.7


def test_a_wild_interval_never_overflows_nor_shows_a_percentage():
    from anebench.measure.uncertainty import GbpsRange, spread_range
    from anebench.model import between_run_interval

    low, high = between_run_interval([1e-300, 1e300, 1.0], 1.0)  # exp() of this spread would overflow
    assert 0 < low < 1 < high < float("inf")
    wide = spread_range([0.001, 1000.0])
    assert wide is not None and wide.unreliable and "%" not in wide.cell()
    assert GbpsRange(10.0, 9.5, 10.4).text() == "[9.50-10.40]"  # within 10%: no mark
    assert GbpsRange(10.0, 8.9, 10.4).text() == "[8.90-10.40] unreliable"


# --- interleaved runs and honest comparisons --------------------------------------------------------


def _interleaved(medians_s, position, group="g1", threads=None):
    from anebench.model import Interleave
    from uncertainty_records import repeated_record

    record = repeated_record(medians_s, engine="numpy", device="cpu")
    place = Interleave(group=group, position=position, configurations=2, label=f"config {position}",
                       threads=threads)
    reps = record.repetitions.model_copy(update={"interleave": place})
    return record.model_copy(update={"repetitions": reps}).with_id()


PHASES = [10 * MS, 13 * MS, 8 * MS]  # a shared machine's host phases: 30% apart round to round


def test_interleaved_configurations_compare_paired_so_the_host_phases_cancel():
    from anebench.measure.comparison import PAIRED_METHOD, compare_results

    a = _interleaved(PHASES, 0)
    slower = _interleaved([m * 1.05 for m in PHASES], 1)  # 5% slower in every round
    paired = compare_results(a, slower)
    assert paired.method == PAIRED_METHOD and paired.verdict == "b is slower"
    assert paired.ratio == pytest.approx(1 / 1.05) and paired.high < 1
    # the same figures as two separate runs: the phases swamp the 5% (no pairing possible)
    unpaired = compare_results(_interleaved(PHASES, 0, "g1"),
                               _interleaved([m * 1.05 for m in PHASES], 1, "g2"))
    assert unpaired.method != PAIRED_METHOD and unpaired.verdict == "no significant difference"
    itself = compare_results(a, _interleaved([m * f for m, f in zip(PHASES, (1.002, 0.999, 0.998))], 1))
    assert itself.verdict == "no significant difference"


def test_a_difference_within_the_noise_threshold_is_not_significant_even_where_its_ci_excludes_1():
    """bench_noise on the project's machine: an interleaved self-comparison read "b is slower, 0.990
    [0.983-0.998]" (5 rounds). A 1% effect is a host effect (criterion.rs's noise threshold); one whose
    whole CI lies beyond +-1% is still significant, and the same rule holds for separate runs."""
    from anebench.measure.comparison import NOISE_THRESHOLD, compare_results
    from uncertainty_records import repeated_record

    assert NOISE_THRESHOLD == 0.01
    a = _interleaved(PHASES, 0)
    near = _interleaved([m * f for m, f in zip(PHASES, (1.008, 1.012, 1.010))], 1)  # ~1% slower, steadily
    close = compare_results(a, near)
    assert close.high < 1  # the CI excludes 1 ...
    assert close.verdict == "no significant difference" and close.significant is False  # ... not +-1%
    assert any("noise threshold" in n for n in close.notes)
    beyond = compare_results(a, _interleaved([m * f for m, f in zip(PHASES, (1.028, 1.032, 1.030))], 1))
    assert beyond.verdict == "b is slower" and beyond.significant and beyond.high < 1 / 1.01
    separate = compare_results(repeated_record([10 * MS, 10.001 * MS, 9.999 * MS]),
                               repeated_record([10.08 * MS, 10.081 * MS, 10.079 * MS]))
    assert separate.high < 1 and separate.verdict == "no significant difference"


def test_separate_runs_on_a_busy_machine_read_unreliable_not_significant():
    from anebench.measure.comparison import compare_results
    from anebench.model import HostState
    from uncertainty_records import repeated_record

    a = repeated_record([10 * MS, 10.01 * MS, 9.99 * MS])
    b = repeated_record([12 * MS, 12.01 * MS, 11.99 * MS])
    assert compare_results(a, b).verdict == "b is slower"  # quiet and in one state: significant
    busy = b.model_copy(update={"host": b.host.model_copy(update={"state": HostState(load_average_1m=3.5,
                                                                                     busy=True)})})
    verdict = compare_results(a, busy)
    assert verdict.verdict == "unreliable" and verdict.significant is None
    assert any("busy machine" in n for n in verdict.notes)
    other = HostState(governor="powersave")
    a2 = a.model_copy(update={"host": a.host.model_copy(update={"state": HostState(governor="performance")})})
    b2 = b.model_copy(update={"host": b.host.model_copy(update={"state": other})})
    assert compare_results(a2, b2).verdict == "unreliable"


def test_compare_of_one_interleaved_file_pairs_its_configurations(capsys, tmp_path):
    from anebench.results.files import save_records

    path = tmp_path / "il.json"
    save_records(path, [_interleaved(PHASES, 0, threads=1),
                        _interleaved([m / 1.3 for m in PHASES], 1, threads=2)])
    code, stdout, stderr = run_cli(capsys, "compare", str(path), "--json")
    assert code == 0, stderr
    import json

    (pair,) = json.loads(stdout)["pairs"]
    assert pair["verdict"] == "b is faster" and pair["ratio"] == pytest.approx(1.3)
    assert pair["method"].startswith("paired") and pair["b"]["configuration"] == "config 1"
    assert pair["a"]["gbps_range"] and pair["a"]["warnings"] == []
    plain = tmp_path / "plain.json"
    from uncertainty_records import repeated_record

    save_records(plain, [repeated_record(PHASES)])
    code, _, stderr = run_cli(capsys, "compare", str(plain))
    assert code == 2 and "holds none" in stderr and len(stderr.strip().splitlines()) == 1


def test_run_interleave_alternates_the_configurations_round_by_round(capsys, tmp_path, monkeypatch):
    """The real loop, each repetition's configuration logged: round i holds A's and B's repetition i."""
    import anebench.orchestration.interleave as interleave

    order = []
    real = interleave.time_calls

    def logged(prepared, size, *args):
        order.append(id(prepared))
        return real(prepared, size, *args)

    monkeypatch.setattr(interleave, "time_calls", logged)
    out = tmp_path / "r.json"
    code, _, stderr = run_cli(capsys, "run", "--interleave", "-e", "numpy", "-w", "lm_head:64x256:fp32",
                              "--interleave-threads", "1,2", "--runs", "9", "--warmup", "1",
                              "--out", str(out))
    assert code == 0, stderr
    a, b = order[0], order[1]
    assert a != b and order == [a, b, b, a, a, b]  # rounds alternate which goes first
    import json

    records = json.loads(out.read_text())["results"]
    places = [r["repetitions"]["interleave"] for r in records]
    assert [p["threads"] for p in places] == [1, 2] and places[0]["group"] == places[1]["group"]
    code, _, stderr = run_cli(capsys, "compare", str(out))
    assert code == 0 and "paired over the 3 rounds" in stderr


@pytest.mark.parametrize("argv, expected", [
    (("-e", "numpy"), "at least two configurations"),
    (("-e", "numpy", "-e", "numpy", "--repetitions", "1"), "--interleave with --repetitions 1"),
    (("-e", "numpy", "--interleave-threads", "1,x"), "--interleave-threads '1,x'"),
])
def test_interleave_refusals_are_one_line(capsys, argv, expected):
    code, stdout, stderr = run_cli(capsys, "run", "--interleave", "-w", "lm_head:64x256:fp32", *argv)
    assert code == 2 and stdout == "" and expected in stderr and len(stderr.strip().splitlines()) == 1


# --- one exit-code policy for a suite whose analysis fails ------------------------------------------


def test_a_failed_sweep_fit_exits_3_with_its_records_saved(capsys, tmp_path, monkeypatch):
    """Every suite: records saved (and stored with --store), 'analysis failed: <why>', exit 3."""
    import json

    from test_suites_cli import scripted_sweep

    scripted_sweep(monkeypatch, overhead_s=1e-2, bytes_per_s=-1e12)  # latency falls with size
    out, db = tmp_path / "s.json", tmp_path / "db.sqlite"
    code, _, stderr = run_cli(capsys, "sweep", "-e", "numpy", "-w", "lm_head:256x8:fp32", "--min-mb", "1",
                              "--max-mb", "8", "--points", "4", "--cache-mb", "0.25", "--runs", "3",
                              "--warmup", "1", "--time-budget", "0.2", "--out", str(out), "--store", "--db",
                              str(db))
    assert code == 3 and "analysis failed: sweep fit failed" in stderr
    assert len(json.loads(out.read_text())["results"]) == 6
    with open_store(db, create=False, readonly=True) as store:
        assert len(store.records()) == 6


def test_the_between_calls_warning_names_the_measured_shares():
    """Busy share (inside calls / window) and, on a CPU, CPU share (CPU s / wall s of the calls): the
    warning names what was measured, never 'more threads than cores?'."""
    from anebench.model import Concurrency
    from anebench.orchestration.suites.concurrent import between_calls_warning
    from uncertainty_records import repeated_record

    def copy(i, busy, cpu, device="cpu"):
        record = repeated_record([1 * MS, 1 * MS], engine="numpy", device=device)
        section = Concurrency(mode="processes", copy=i, copies=2, phase="together", busy_share=busy,
                              cpu_share=cpu)
        return record.model_copy(update={"concurrency": section})

    assert between_calls_warning([copy(0, 0.97, 0.99), copy(1, 0.95, 0.98)]) is None
    idle = between_calls_warning([copy(0, 0.19, 0.99), copy(1, 0.58, 0.98)])
    assert idle is not None and idle.kind == "concurrency"
    assert "copy 0 19%, copy 1 58%" in idle.text and "threads than cores" not in idle.text
    off = between_calls_warning([copy(0, 0.96, 0.23), copy(1, 0.96, 0.25)])
    assert off is not None and "on a CPU for only part" in off.text and "copy 0 23%" in off.text
    assert between_calls_warning([copy(0, 0.96, 0.05, "gpu"), copy(1, 0.96, 0.05, "gpu")]) is None
