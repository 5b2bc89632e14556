"""Aggregation on the published data: medians, flags, tiers, verdicts, coverage, excluded latencies."""

from __future__ import annotations

import pytest

from anebench.results.aggregate import TIER_GAP, aggregate
from anebench.results.published import UNKNOWN_WORKLOAD, published_records
from anebench.workloads import resolve_workload
from test_store import make_record


@pytest.fixture(scope="module")
def published():
    return published_records()


@pytest.fixture(scope="module")
def agg(published):
    return aggregate(published)


def _row(agg, chip, workload="llama_lm_head", config=None):
    (row,) = [r for r in agg.rows if r.chip == chip and r.workload == workload
              and (config is None or r.config == config)]
    return row


def test_published_rows_keep_what_the_source_states(published):
    m1 = [r for r in published if r.host.chip == "Apple M1" and r.workload.name == "llama_lm_head"]
    assert len(m1) == 1 and m1[0].gbps == 60.87 and m1[0].summary.mean is None
    assert m1[0].method.runs is None and m1[0].method.warmup_policy is None
    assert m1[0].provenance == "published" and m1[0].tool.name == "anemll-bench"
    assert m1[0].workload.fingerprint == resolve_workload("llama_lm_head").fingerprint
    m5max = [r for r in published if r.host.chip == "Apple M5 Max" and r.concurrency is None]
    assert m5max[0].summary.mean == pytest.approx(7.08e-3)
    assert m5max[0].gbps == pytest.approx(1050.673152 / 7.08, abs=0.01) and m5max[0].facts.gbps_derived


def test_published_dual_runs_were_threads_of_one_process_so_their_verdict_is_inconclusive(agg, published):
    """anemll-bench ran both models in threads of one process, and predict() holds the GIL: the figures
    are kept, the verdict cannot be 'shared ceiling'."""
    from anebench.model import THREADS_OF_ONE_PROCESS

    dual = [r for r in published if r.concurrency is not None]
    assert dual and all(r.concurrency.mode == "threads" and r.concurrency.call_releases_gil is False
                        and r.concurrency.flags == [THREADS_OF_ONE_PROCESS] for r in dual)
    assert all("extras" not in r.model_dump() for r in published)
    (m5max,) = [c for c in agg.concurrency if c.chip == "M5 Max"]
    assert m5max.verdict == "inconclusive" and THREADS_OF_ONE_PROCESS in m5max.flags
    assert m5max.scaling == pytest.approx(147.62 / ((148.39 + 148.57) / 2))  # the raw figures are kept
    assert m5max.combined_gbps == 147.62 and m5max.solo_gbps == [148.39, 148.57]
    assert {c.chip: c.verdict for c in agg.concurrency} == {
        "M5 Max": "inconclusive", "M6": "inconclusive", "M3 Ultra": "inconclusive"}
    (m3u,) = [c for c in agg.concurrency if c.chip == "M3 Ultra"]
    assert m3u.flags == ["solo reference from the chip's separate solo figure", THREADS_OF_ONE_PROCESS]
    assert "Ultra chip" in agg.rules["concurrency"] and "own process" in agg.rules["concurrency"]


def test_mixed_latency_rows_are_excluded_from_every_comparison(agg, published):
    unknown = [r for r in published if r.workload.name == UNKNOWN_WORKLOAD]
    assert len(unknown) == 13 and all(r.gbps is None for r in unknown)
    canonical = {
        resolve_workload("llama_lm_head").fingerprint,
        resolve_workload("DeepHermes_lm_head").fingerprint,
    }
    fingerprints = [r.workload.fingerprint for r in unknown]
    assert len(set(fingerprints)) == 13 and not set(fingerprints) & canonical
    assert all(r.workload != UNKNOWN_WORKLOAD for r in agg.rows)
    assert len(agg.excluded) == 13
    # M1's matrix latency is absent: its only latency was in the mixed column
    assert _row(agg, "M1").median_latency_s is None
    assert _row(agg, "M5 Max").median_latency_s == pytest.approx(7.08e-3)


def test_latencies_are_grouped_by_fingerprint(agg):
    lut6 = _row(agg, "M6", "llama_lm_head_lut6")
    fp16 = _row(agg, "M6", config="16 GB")
    assert lut6.fingerprint != fp16.fingerprint
    assert lut6.median_latency_s == pytest.approx(3.27e-3)
    assert fp16.median_latency_s == pytest.approx(7.85e-3)


def test_medians_contributors_and_flags(agg):
    # M6's bandwidth depends on its configuration: one row each, never one median of both
    m6_16, m6_32 = _row(agg, "M6", config="16 GB"), _row(agg, "M6", config="32 GB")
    assert (m6_16.contributors, m6_16.median_gbps) == (1, 133.92)
    assert m6_32.contributors == 1 and m6_32.median_gbps == pytest.approx(1050.673152 / 6.91, abs=0.01)
    assert m6_32.utilisation == pytest.approx((m6_32.median_gbps / 170,) * 2) and m6_32.bandwidth == "170"
    assert m6_16.utilisation is None and m6_16.bandwidth == "not published for 16 GB"
    assert "mixed configurations" not in m6_16.flags
    m1 = _row(agg, "M1")
    assert m1.flags[:3] == ["single report", "run count not stated", "warmup not stated"]
    assert m1.timing == "end-to-end"


def test_utilisation_uses_the_catalog_and_shows_configuration_ranges(agg):
    assert _row(agg, "M4").utilisation == pytest.approx((64.18 / 120, 64.18 / 120))
    assert _row(agg, "M4 Max").utilisation == pytest.approx((118.88 / 546, 118.88 / 410))
    assert _row(agg, "M5 Max").utilisation is None  # bandwidth not published: no guess


def test_tiers_follow_the_stated_gap_rule(agg):
    rows = [r for r in agg.rows if r.workload == "llama_lm_head"]
    tier1 = {r.chip for r in rows if r.tier == 1}
    assert tier1 == {"M3 Max", "M3 Ultra", "M4 Pro", "M4 Max", "M5 Pro", "M5 Max", "M5 Ultra", "M6"}
    assert {r.tier for r in rows} == {1, 2}
    slowest_fast = min(r.median_gbps for r in rows if r.tier == 1)
    fastest_slow = max(r.median_gbps for r in rows if r.tier == 2)
    assert slowest_fast > fastest_slow * (1 + TIER_GAP)


def test_tiers_split_on_any_large_gap():
    records = [make_record(chip=f"Apple {c}", gbps=g) for c, g in
               (("M1", 50), ("M2", 52), ("M3", 80), ("M4", 82), ("M5", 200))]
    tiers = {r.chip: r.tier for r in aggregate(records).rows}
    assert tiers == {"M1": 3, "M2": 3, "M3": 2, "M4": 2, "M5": 1}


def test_coverage_lists_catalog_chips_without_data(agg):
    missing = [c.key for c in agg.missing_chips]
    assert "M2 Pro" not in missing  # the README utilisation table's derived figure
    assert "M3 Pro" in missing and "H100 SXM" in missing
    assert "M1" not in missing and "M5 Max" not in missing


def test_measured_records_group_by_engine_and_median_over_contributors():
    records = [make_record(gbps=g) for g in (100, 110, 130)] + [make_record(gbps=50, engine="numpy",
                                                                            device="cpu")]
    rows = {(r.engine, r.device): r for r in aggregate(records).rows}
    assert rows[("mlx", "gpu")].median_gbps == 110 and rows[("mlx", "gpu")].contributors == 3
    assert rows[("mlx", "gpu")].median_latency_s == pytest.approx(1050.673152e6 / 110e9)
    assert "single report" in rows[("numpy", "cpu")].flags
    mitigated = make_record(gbps=120)
    mitigated = mitigated.model_copy(update={"method": mitigated.method.model_copy(
        update={"mitigations": ["rotate buffers"], "timing": "device time"})})
    row = aggregate([make_record(gbps=100, runs=3), mitigated]).rows[0]
    assert row.timing.startswith("mixed:") and "mitigated (rotate buffers)" in row.timing


def _suite_run(solo_gbps: float, together_gbps: float, combined: float, window_s: float,
               threads: int | None = None) -> list:
    """One two-copy run of the concurrency suite as its records carry it."""
    from anebench.model import Concurrency

    def section(i, phase):
        return Concurrency(mode="threads", copy=i, copies=2, phase=phase, combined_gbps=combined,
                           window_s=window_s, threads_per_copy=threads, call_releases_gil=True)

    return [make_record(chip="Apple M4", gbps=g).model_copy(update={"concurrency": section(i, phase)})
            for phase, g in (("solo", solo_gbps), ("together", together_gbps)) for i in range(2)]


def test_two_concurrency_runs_give_the_median_of_their_combined_figures_not_a_sum_of_all_copies():
    records = _suite_run(100, 60, 120, 1.0) + _suite_run(100, 55, 110, 1.2)
    (row,) = aggregate(records).concurrency
    assert row.combined_gbps == pytest.approx(115) and row.verdict == "partial"
    assert row.scaling == pytest.approx(1.15) and row.flags == []
    (single,) = aggregate(_suite_run(100, 60, 120, 1.0)).concurrency
    assert single.combined_gbps == 120 and single.parallel_gbps == [60, 60]


def test_threads_per_copy_is_part_of_the_concurrency_key():
    rows = aggregate(
        _suite_run(100, 60, 120, 1.0, threads=1) + _suite_run(100, 90, 180, 1.0, threads=2)
    ).concurrency
    assert sorted((r.threads_per_copy, r.verdict) for r in rows) == [(1, "partial"), (2, "independent units")]


def test_a_latency_over_means_and_medians_is_flagged():
    m5max = [r for r in published_records() if r.host.chip == "Apple M5 Max" and r.concurrency is None]
    assert m5max[0].method.statistic == "mean" and m5max[0].latency_s() is not None
    measured = make_record(chip="Apple M5 Max", engine="coreml", device="ane", gbps=150)
    (row,) = [r for r in aggregate([*m5max, measured]).rows if r.workload == "llama_lm_head"]
    assert row.latency_contributors == 2 and "latency mixes means and medians" in row.flags
    (alone,) = [r for r in aggregate(m5max).rows if r.workload == "llama_lm_head"]
    assert "latency mixes means and medians" not in alone.flags


def test_hosts_without_a_chip_name_are_told_apart_by_their_cpu():
    def on(cpu: str, gbps: float):
        record = make_record(chip=None, engine="numpy", device="cpu", gbps=gbps)
        host = record.host.model_copy(update={"os": "Linux", "arch": "x86_64", "cpu_model": cpu})
        return record.model_copy(update={"host": host, "id": None}).with_id()

    rows = aggregate([on("AMD EPYC 7763", 20), on("Intel Xeon 8480+", 40), on("", 30)]).rows
    assert {(r.chip, r.median_gbps, r.contributors) for r in rows} == {
        ("AMD EPYC 7763", 20, 1), ("Intel Xeon 8480+", 40, 1), ("unknown Linux host", 30, 1)}
    assert all("chip not in catalog" in r.flags for r in rows)
