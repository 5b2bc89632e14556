"""Everything that compares uses the between-run interval: compare_results, concurrency verdicts, tiers,
the comparison with published figures and the report (stated figures are points)."""

from __future__ import annotations

import math

import pytest

from anebench.errors import UserError
from anebench.measure.comparison import compare_results, relative_halfwidth
from anebench.measure.uncertainty import gbps_range, log_halfwidth
from anebench.measure.verdicts import concurrency_verdict, scaling_halfwidth
from anebench.report.compare import family_comparison, versus_label
from anebench.report.escape import md_cell
from anebench.report.tables import sections
from anebench.results.aggregate import aggregate
from uncertainty_records import repeated_record, stated_record

MS = 1e-3
RUN_A = [31.22 * MS, 31.68 * MS, 33.05 * MS]  # the spread of the issue's back-to-back runs
RUN_B = [31.17 * MS, 32.66 * MS, 32.10 * MS]


def test_two_runs_closer_than_their_between_run_uncertainty_show_no_significant_difference():
    a, b = repeated_record(RUN_A), repeated_record(RUN_B)
    comparison = compare_results(a, b)
    assert comparison.significant is False and comparison.verdict == "no significant difference"
    assert comparison.low < 1 < comparison.high
    assert comparison.ratio == pytest.approx(b.gbps / a.gbps)
    assert "Welch" in comparison.method


def test_clearly_different_runs_are_significant_and_say_which_is_faster():
    slow, fast = repeated_record(RUN_A), repeated_record([m / 1.3 for m in RUN_B])
    comparison = compare_results(slow, fast)
    assert comparison.significant is True and comparison.verdict == "b is faster"
    assert 1 < comparison.low < comparison.ratio < comparison.high
    assert compare_results(fast, slow).verdict == "b is slower"


def test_the_within_run_ci_alone_would_have_called_the_close_runs_different():
    tight = tuple(i / 50_000 for i in range(-100, 101))  # 201 calls within +-0.2% of each median
    a, b = repeated_record(RUN_A, spread=tight), repeated_record(RUN_B, spread=tight)
    within_a = (a.summary.ci95_low, a.summary.ci95_high)
    assert not within_a[0] <= b.summary.median <= within_a[1]  # the old interval excludes b's median
    assert compare_results(a, b).significant is False


def test_one_repetition_makes_the_comparison_unknown_not_decided_by_the_within_run_ci():
    comparison = compare_results(repeated_record([31 * MS]), repeated_record([40 * MS] * 3))
    assert comparison.significant is None and comparison.verdict == "unknown"
    assert comparison.low is None and any("one repetition" in n for n in comparison.notes)


def test_a_stated_point_is_judged_by_the_measured_runs_interval_alone():
    run = repeated_record(RUN_A)
    low, _ = run.between_run()
    inside = stated_record(run.workload.weight_bytes / (low * 1.001) / 1e9)  # just inside the interval
    outside = stated_record(run.workload.weight_bytes / (low * 0.97) / 1e9)
    assert compare_results(run, inside).significant is False
    assert compare_results(run, outside).significant is True
    assert any("stated point" in n for n in compare_results(run, inside).notes)
    assert compare_results(stated_record(100.0), stated_record(120.0)).verdict == "unknown"


def test_records_of_different_workloads_are_refused():
    with pytest.raises(UserError, match="different workload fingerprints"):
        compare_results(repeated_record(RUN_A), repeated_record(RUN_A, workload="DeepHermes_lm_head"))


def test_a_scaling_within_its_uncertainty_of_a_threshold_is_inconclusive():
    assert concurrency_verdict([100.0], 112.0).verdict == "partial"
    inconclusive = concurrency_verdict([100.0], 112.0, halfwidth=0.05)
    assert inconclusive.verdict == "inconclusive" and inconclusive.low < 1.1 < inconclusive.high
    assert concurrency_verdict([100.0], 130.0, halfwidth=0.05).verdict == "partial"
    assert concurrency_verdict([100.0], 99.0, halfwidth=0.05).verdict == "shared ceiling"
    assert concurrency_verdict([100.0], 150.0, halfwidth=0.01).verdict == "inconclusive"


def test_the_scaling_halfwidth_combines_solo_and_combined_in_quadrature():
    assert scaling_halfwidth([100.0, 100.0], [None, None], None) is None
    assert scaling_halfwidth([100.0, 100.0], [0.04, 0.04], 0.03) == pytest.approx(
        math.hypot(math.sqrt(2 * 4.0**2) / 200, 0.03))
    assert scaling_halfwidth([100.0], [None], 0.03) == pytest.approx(0.03)  # a stated solo adds nothing


def test_aggregate_verdict_is_inconclusive_when_the_solo_runs_are_too_uncertain():
    def dual(phase: str, medians: list[float], instance: int) -> object:
        return repeated_record(
            medians,
            chip="Apple M4 Max",
            engine="coreml",
            device="ane",
            concurrency={"mode": "processes", "phase": phase, "copy": instance, "copies": 2},
        )

    noisy = [10 * MS, 11.5 * MS, 9 * MS]
    steady = [10 * MS, 10.01 * MS, 9.99 * MS]
    for solo, expected in ((noisy, "inconclusive"), (steady, "partial")):
        records = [dual("solo", solo, 0), dual("solo", solo, 1),
                   dual("together", [s / 0.6 for s in steady], 0),
                   dual("together", [s / 0.6 for s in steady], 1)]
        (row,) = aggregate(records).concurrency
        assert row.scaling == pytest.approx(1.2, rel=0.02) and row.verdict == expected
        assert row.scaling_halfwidth is not None


def test_a_tier_boundary_must_exceed_the_combined_uncertainty():
    fast, slow = [10 * MS, 14 * MS, 8 * MS], [12 * MS, 15 * MS, 11 * MS]  # ~20% apart, very noisy
    rows = aggregate([repeated_record(fast, chip="Apple M4 Max"),
                      repeated_record(slow, chip="Apple M4")]).rows
    assert {r.tier for r in rows} == {1}  # the gap is within the uncertainty: one tier
    points = aggregate([stated_record(105.0, chip="Apple M4 Max"), stated_record(87.0, chip="Apple M4")]).rows
    assert {r.chip: r.tier for r in points} == {"M4 Max": 1, "M4": 2}  # points: the gap rule alone
    steady = aggregate([repeated_record([10 * MS] * 3, chip="Apple M4 Max"),
                        repeated_record([12 * MS] * 3, chip="Apple M4")]).rows
    assert {r.chip: r.tier for r in steady} == {"M4 Max": 1, "M4": 2}


def test_the_report_shows_measured_figures_with_their_interval_and_stated_ones_as_points():
    agg = aggregate([repeated_record(RUN_A, chip="Apple M4 Max"), stated_record(80.0, chip="Apple M4")])
    (matrix,) = [s for s in sections(agg) if s.title.startswith("Results:")]
    cells = {row[0]: row[2] for row in matrix.rows}
    measured = gbps_range(repeated_record(RUN_A))
    assert cells["M4 Max"] == measured.cell() and "[" not in cells["M4"] and "±" not in cells["M4 Max"]
    assert "no range: a stated point" in matrix.note
    halfwidths = {r.chip: r.gbps_halfwidth for r in agg.rows}
    assert halfwidths == {"M4 Max": pytest.approx(log_halfwidth(measured)), "M4": None}


def test_published_figures_beside_a_run_are_judged_by_its_between_run_interval():
    run = repeated_record(RUN_A)
    near = stated_record(run.gbps * 1.01, chip="Apple M4 Pro")
    far = stated_record(run.gbps * 1.5, chip="Apple M4 Pro")
    rows, _ = family_comparison([run], published=[near, far])
    yours, *published = rows
    assert yours.yours and yours.halfwidth == pytest.approx(relative_halfwidth(run))
    labels = {round(r.gbps): versus_label(r.versus) for r in published}
    assert labels == {round(near.gbps): "+1% n.s.", round(far.gbps): "+50% sig."}
    rows, _ = family_comparison([repeated_record([31 * MS])], published=[far])
    assert versus_label(rows[1].versus).endswith("?")


def test_a_submission_shows_the_between_run_interval(tmp_path):
    from anebench.report.submission import issue_body

    body = issue_body([repeated_record(RUN_A), repeated_record([31 * MS])], "s.json", anonymized=True)
    assert md_cell(gbps_range(repeated_record(RUN_A)).cell()) in body and "between-run 95% interval" in body
    assert "(no range: 1 repetition)" in body


def test_published_figures_are_compared_only_on_the_same_engine_and_unit():
    """The fp16 head has one fingerprint on every unit: a GPU run beside published ANE figures is not
    'the same workload' (the Mac campaign printed coreml:gpu 7.38 beside coreml:ane 126.36, +1611%)."""
    ane = stated_record(126.36, chip="Apple M4 Pro", engine="coreml", device="ane")
    on_gpu = repeated_record([0.142], engine="coreml", device="gpu")
    assert on_gpu.workload.fingerprint == ane.workload.fingerprint
    rows, notes = family_comparison([on_gpu], published=[ane])
    assert [r.yours for r in rows] == [True]
    assert "coreml:gpu" in notes[0] and "no published figure" in notes[0]
    on_ane = repeated_record([0.0083], engine="coreml", device="ane")
    rows, notes = family_comparison([on_ane], published=[ane])
    assert [r.engine for r in rows] == ["coreml:ane", "coreml:ane"] and not notes
