import numpy as np
import pytest

from anebench.errors import UserError
from anebench.measure.line_fit import MIN_R_SQUARED, fit_latency, round_scatter, theil_sen
from anebench.measure.sweep import analyse_sweep, find_knee, log_sizes, sweep_sizes
from anebench.model.statistics import between_run_interval

MiB = 1024**2
OVERHEAD_S = 12e-6
BANDWIDTH = 80e9  # bytes per second


def synthetic(sizes, cache_bytes=None, cache_bandwidth=400e9, noise=0.0, seed=0):
    """Latencies with a known overhead and bandwidth; sizes inside the cache stream 5x faster."""
    rng = np.random.default_rng(seed)
    out = []
    for size in sizes:
        bandwidth = cache_bandwidth if cache_bytes and size <= cache_bytes else BANDWIDTH
        out.append((OVERHEAD_S + size / bandwidth) * (1 + noise * rng.standard_normal()))
    return out


def test_log_sizes_are_log_spaced_and_include_both_ends():
    sizes = log_sizes(1 * MiB, 1024 * MiB, 11)
    assert sizes[0] == MiB and sizes[-1] == 1024 * MiB and len(sizes) == 11
    ratios = np.diff(np.log(sizes))
    assert np.allclose(ratios, ratios[0], rtol=1e-6)


def test_sweep_sizes_add_points_past_the_fit_start_when_too_few():
    sizes = sweep_sizes(1 * MiB, 840 * MiB, 12, fit_from=420 * MiB, min_fit_points=4)
    assert sum(s >= 420 * MiB for s in sizes) >= 4
    assert sizes == sorted(sizes) and sizes[-1] == 840 * MiB


@pytest.mark.parametrize("args", [(MiB, MiB, 5), (0, MiB, 5), (MiB, 2 * MiB, 1)])
def test_bad_sweep_ranges_are_user_errors(args):
    with pytest.raises(UserError):
        log_sizes(*args)


def test_theil_sen_recovers_an_exact_line():
    x = np.array([1.0, 2.0, 4.0, 8.0])
    intercept, slope = theil_sen(x, 3.0 + 0.5 * x)
    assert intercept == pytest.approx(3.0) and slope == pytest.approx(0.5)


def test_fit_recovers_known_overhead_and_bandwidth():
    sizes = log_sizes(256 * MiB, 2048 * MiB, 8)
    fit = fit_latency(sizes, synthetic(sizes))
    assert fit.overhead_s == pytest.approx(OVERHEAD_S, rel=1e-6)
    assert fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=1e-9)
    assert fit.r_squared == pytest.approx(1.0) and fit.max_abs_rel_residual < 1e-9


def test_one_outlier_cannot_move_the_fit_but_moves_least_squares():
    sizes = log_sizes(256 * MiB, 2048 * MiB, 8)
    latencies = synthetic(sizes)
    latencies[5] *= 3  # one call hit by a background job
    fit = fit_latency(sizes, latencies)
    assert fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=1e-6)
    assert fit.overhead_s == pytest.approx(OVERHEAD_S, rel=1e-3)
    slope, _ = np.polyfit(sizes, latencies, 1)
    assert abs(1 / slope - BANDWIDTH) / BANDWIDTH > 0.05  # what a least-squares fit would have said
    assert fit.max_abs_rel_residual == pytest.approx(2 / 3)  # the outlier stays visible in the quality
    assert fit.median_abs_rel_residual < 1e-9


def test_fit_with_noise_stays_close():
    sizes = log_sizes(128 * MiB, 2048 * MiB, 12)
    fit = fit_latency(sizes, synthetic(sizes, noise=0.01, seed=3))
    assert fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=0.03)
    assert 0.99 < fit.r_squared <= 1.0


def test_fit_refuses_too_few_points_and_a_flat_line():
    with pytest.raises(UserError, match="at least 3"):
        fit_latency([1, 2], [1.0, 2.0])
    with pytest.raises(UserError, match="does not grow"):
        fit_latency([1 * MiB, 2 * MiB, 4 * MiB], [1e-3, 1e-3, 1e-3])


def test_knee_with_a_known_cache_is_four_times_the_cache():
    sizes = log_sizes(1 * MiB, 1024 * MiB, 11)
    knee = find_knee(sizes, [1.0] * len(sizes), cache_bytes=32 * MiB)
    assert knee.size_bytes >= 128 * MiB and sizes[knee.index - 1] < 128 * MiB
    assert "4x the last-level cache" in knee.rule


def test_knee_from_the_data_when_the_cache_is_unknown():
    sizes = log_sizes(1 * MiB, 1024 * MiB, 11)
    latencies = synthetic(sizes, cache_bytes=32 * MiB)
    gbps = [s / t / 1e9 for s, t in zip(sizes, latencies)]
    knee = find_knee(sizes, gbps, cache_bytes=None)
    assert sizes[knee.index] > 32 * MiB and gbps[knee.index] < 100
    assert "cache size unknown" in knee.rule


def test_knee_without_a_cache_hump_uses_every_size():
    sizes = log_sizes(1 * MiB, 1024 * MiB, 8)
    gbps = [s / t / 1e9 for s, t in zip(sizes, synthetic(sizes))]  # only overhead: GB/s rises throughout
    knee = find_knee(sizes, gbps, cache_bytes=None)
    assert knee.index == 0 and "every size used" in knee.rule


def test_analysis_reports_the_fit_past_the_knee_and_the_cache_resident_peak():
    sizes = sweep_sizes(1 * MiB, 1024 * MiB, 12, fit_from=4 * 32 * MiB)
    latencies = synthetic(sizes, cache_bytes=32 * MiB)
    result = analyse_sweep(sizes, latencies, cache_bytes=32 * MiB)
    assert result.fit.overhead_s == pytest.approx(OVERHEAD_S, rel=1e-6)
    assert result.fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=1e-9)
    assert result.cache_peak_bytes <= 32 * MiB and result.cache_peak_gbps > 200
    data = result.as_dict()
    assert data["overhead_us"] == pytest.approx(12.0) and data["bandwidth_gbps"] == pytest.approx(80.0)
    assert data["knee_bytes"] >= 128 * MiB


def test_a_negative_overhead_beyond_its_error_fails_the_fit_and_carries_no_figures():
    sizes = log_sizes(256 * MiB, 1024 * MiB, 5)
    latencies = [s / BANDWIDTH - 50e-6 for s in sizes]
    result = analyse_sweep(sizes, latencies, cache_bytes=None)
    assert result.fit is None and "overhead is negative beyond two standard errors" in result.fit_error
    data = result.as_dict()
    assert data["fit"] is None and "bandwidth_gbps" not in data and "overhead_us" not in data


def test_the_issue_sweep_in_cache_fails_on_r_squared_and_the_cache_peak():
    # `sweep --quick --max-mb 16 --cache-mb 1` on a machine whose cache holds all 16 MiB: flat, noisy
    # the run in the issue: fast small sizes, then a flat, noisy ~1 ms from 2.6 MiB on (a loaded machine)
    sizes = log_sizes(1 * MiB, 16 * MiB, 7)
    noise = [1.00, 1.10, 0.93, 0.95, 1.08, 0.97, 1.05]
    latencies = [(s / 40e9 if s < 2 * MiB else 1e-3 + s / 4000e9) * n for s, n in zip(sizes, noise)]
    result = analyse_sweep(sizes, latencies, cache_bytes=1 * MiB)
    assert result.fit is None
    assert "R² " in result.fit_error and f"below {MIN_R_SQUARED}" in result.fit_error
    assert "cache-resident peak" in result.fit_error


def test_a_clean_line_above_the_catalog_bandwidth_fails_on_the_physical_bound():
    sizes = log_sizes(256 * MiB, 2048 * MiB, 8)
    result = analyse_sweep(sizes, synthetic(sizes), cache_bytes=32 * MiB, bound=(60.0, "M1 memory bandwidth"))
    assert (
        result.fit is None
        and "above the physical bound of 60.0 GB/s (M1 memory bandwidth)" in result.fit_error
    )
    good = analyse_sweep(sizes, synthetic(sizes), cache_bytes=32 * MiB, bound=(120.0, "M4 memory bandwidth"))
    assert good.fit is not None and good.fit_error is None


def test_a_noisy_but_linear_numpy_like_sweep_still_fits():
    sizes = sweep_sizes(1 * MiB, 1024 * MiB, 12, fit_from=4 * 32 * MiB)
    latencies = synthetic(sizes, cache_bytes=32 * MiB, noise=0.02, seed=5)
    result = analyse_sweep(sizes, latencies, cache_bytes=32 * MiB)
    assert result.fit is not None and result.fit.r_squared >= MIN_R_SQUARED
    assert result.fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=0.05)


def test_data_knee_leaves_the_fit_enough_points():
    sizes = log_sizes(1 * MiB, 64 * MiB, 7)
    gbps = [10, 50, 40, 30, 20, 12, 10]  # still falling at the end: no plateau before the last size
    knee = find_knee(sizes, gbps, cache_bytes=None)
    assert knee.index == len(sizes) - 3 and "moved back" in knee.rule


def test_overhead_is_resolved_when_the_data_pin_it_down():
    sizes = [2**k * 1_000_000 for k in range(8)]  # 1 MB .. 128 MB: a long lever arm towards zero
    rng = np.random.default_rng(3)
    latencies = [50e-6 + s / 20e9 * (1 + 0.002 * rng.standard_normal()) for s in sizes]
    fit = fit_latency(sizes, latencies)
    assert fit.overhead_resolved
    assert fit.overhead_se_s < 10e-6
    assert abs(fit.overhead_s - 50e-6) < 3 * fit.overhead_se_s


def test_overhead_is_not_resolved_when_noise_swamps_it():
    sizes = [440e6, 520e6, 620e6, 740e6, 880e6]  # past a large cache: far from zero, narrow spread
    noise = [1.04, 0.97, 1.03, 0.96, 1.02]
    latencies = [(2e-6 + s / 30e9) * n for s, n in zip(sizes, noise)]
    fit = fit_latency(sizes, latencies)
    assert not fit.overhead_resolved
    assert fit.overhead_se_s > 1e-3  # milliseconds of uncertainty on a 2 us overhead
    # noise of +-4% between sizes shows as between-run intervals of that order at each size
    intervals = [(t * 0.93, t * 1.07) for t in latencies]
    analysis = analyse_sweep(sizes, latencies, cache_bytes=100e6, intervals=intervals)
    unresolved = ("fitted overhead not resolved", "fitted overhead below resolution")  # the latter: no number
    assert any(note.startswith(unresolved) for note in analysis.notes)


def _drawn(monkeypatch, analysis: dict, sizes, latencies):
    from anebench.report import suite_plots

    seen = {}
    monkeypatch.setattr(suite_plots, "save_figure", lambda fig, stem: seen.setdefault("fig", fig) and [])
    suite_plots.plot_sweep(sizes, latencies, analysis, "sweep", "unused")
    fig = seen["fig"]
    return fig, [line.get_label() for ax in fig.axes for line in ax.get_lines()]


def test_the_plot_of_a_failed_fit_shows_the_points_and_no_line(monkeypatch):
    sizes = log_sizes(1 * MiB, 16 * MiB, 7)
    noise = [1.00, 1.10, 0.93, 0.95, 1.08, 0.97, 1.05]
    latencies = [(40e-6 + s / 4000e9) * n for s, n in zip(sizes, noise)]
    failed = analyse_sweep(sizes, latencies, cache_bytes=1 * MiB)
    fig, labels = _drawn(monkeypatch, failed.as_dict(), sizes, latencies)
    assert "median latency" in labels and "past the knee" in labels
    assert not any(label.startswith(("fit:", "fitted bandwidth")) for label in labels)
    assert "fit failed: R²" in fig._suptitle.get_text()
    assert (
        fig.axes[0].get_ylim()[1] < 1000
    )  # the measured points (<= 400 GB/s) set the scale, not a fitted 2,083
    good_sizes = sweep_sizes(1 * MiB, 1024 * MiB, 12, fit_from=4 * 32 * MiB)
    good_latencies = synthetic(good_sizes, cache_bytes=32 * MiB)
    good = analyse_sweep(good_sizes, good_latencies, cache_bytes=32 * MiB)
    _, labels = _drawn(monkeypatch, good.as_dict() | {"cache_bytes": 32 * MiB}, good_sizes, good_latencies)
    assert any(label.startswith("fit:") for label in labels)


def test_a_fit_that_disagrees_with_its_own_largest_sizes_fails_with_that_reason():
    """The issue's pass: a steep line (59.7 GB/s, overhead -0.83 ms) beside a read kernel at ~30 GB/s.
    Points whose two largest sizes sit off the line by far more than their intervals are refused."""
    sizes = [128e6, 194e6, 294e6, 446e6, 676e6, 1024e6]
    stretch = [1.0, 1.0, 1.0, 1.0, 1.10, 1.22]  # the largest sizes read slower than the line says
    latencies = [(50e-6 + s / 30e9) * k for s, k in zip(sizes, stretch)]
    tight = [(t * 0.99, t * 1.01) for t in latencies]
    analysis = analyse_sweep(sizes, latencies, cache_bytes=16e6, intervals=tight)
    assert analysis.fit is None
    assert "disagrees with its own largest sizes" in analysis.fit_error
    # both largest sizes named (the free line's negative intercept is within error, so the line is refitted
    # through zero overhead, and that line misses them too: no steep line is reported)
    assert "at 645 MiB" in analysis.fit_error and "at 977 MiB" in analysis.fit_error
    clean = [50e-6 + s / 30e9 for s in sizes]
    good = analyse_sweep(sizes, clean, cache_bytes=16e6, intervals=[(t * 0.99, t * 1.01) for t in clean])
    assert good.fit is not None and good.fit.bandwidth_bps == pytest.approx(30e9, rel=1e-6)


def test_a_negative_overhead_within_error_is_below_resolution_never_a_number():
    from anebench.report.suite_cells import overhead_text

    sizes = [128e6, 194e6, 294e6, 446e6, 676e6, 1024e6]
    noise = [1.01, 0.99, 1.01, 0.99, 1.0, 1.0]
    latencies = [(s / 30e9 - 100e-6) * n for s, n in zip(sizes, noise)]  # a small negative intercept
    analysis = analyse_sweep(sizes, latencies, cache_bytes=16e6,
                             intervals=[(t * 0.97, t * 1.03) for t in latencies])
    assert analysis.fit is not None and analysis.fit.overhead_s == 0  # refitted at the bound
    assert "refitted through zero overhead" in analysis.fit.method
    assert analysis.fit.bandwidth_bps == pytest.approx(30e9, rel=0.02)  # the slope through the origin
    assert analysis.as_dict()["overhead_us"] is None and analysis.as_dict()["overhead_below_resolution"]
    note = analysis.notes[0]
    assert note.startswith("fitted overhead below resolution") and not any(c.isdigit() for c in note)
    assert overhead_text(analysis.fit.overhead_s * 1e6, 50.0) == "below resolution"
    assert overhead_text(-3.0, 50.0) == "below resolution"  # a stored record from before the refit


def test_rounds_are_fitted_one_by_one_and_a_bent_round_is_outvoted():
    sizes = sweep_sizes(1 * MiB, 1024 * MiB, 12, fit_from=4 * 32 * MiB)
    clean = synthetic(sizes, cache_bytes=32 * MiB)
    slower = [t * 1.25 for t in clean]  # a whole round in a slower host phase: still a line
    bent = [t * (1.3 if s < 512 * MiB else 1.0) for s, t in zip(sizes, clean)]  # the phase changed mid-round
    rounds = [list(r) for r in zip(clean, bent, slower)]
    pooled = [sorted(r)[1] for r in rounds]
    spans = [(min(r), max(r)) for r in rounds]  # narrower than the records' t-interval on three repetitions
    result = analyse_sweep(sizes, pooled, 32 * MiB, None, spans, rounds)
    assert result.fit is not None, result.fit_error
    # the bent round's line (87.6 GB/s) does not set the fit: the median of the three lines does
    assert "fitted bandwidth per interleaved round: 80.0 GB/s, 87.6 GB/s" in result.notes[-1]
    assert result.fit.bandwidth_bps == pytest.approx(BANDWIDTH, rel=1e-3)
    assert "the median of the 3 round(s) that passed" in result.fit.method
    twice_bent = [list(r) for r in zip(clean, bent, bent)]
    failed = analyse_sweep(sizes, [sorted(r)[1] for r in twice_bent], 32 * MiB, rounds_s=twice_bent)
    assert failed.fit is None  # two bent rounds out of three: the median line is bent and misses 545 MiB
    assert "the fitted line disagrees with its own largest sizes: at 545 MiB" in failed.fit_error


def test_a_round_is_held_to_the_scatter_the_sweep_shows_not_to_a_fixed_floor():
    sizes = sweep_sizes(1 * MiB, 1024 * MiB, 14, fit_from=4 * 32 * MiB, min_fit_points=6)
    rng = np.random.default_rng(3)
    clean = synthetic(sizes, cache_bytes=32 * MiB)
    # single repetitions scatter ~6% within a round (as measured on the shared host), each round in its
    # own phase: a fixed +-3% fails most rounds of this sound sweep
    rounds = [[t * phase * (1 + 0.06 * rng.standard_normal()) for phase in (1.0, 1.1, 0.95)] for t in clean]
    assert 0.03 < round_scatter([r for s, r in zip(sizes, rounds) if s >= 128 * MiB]) < 0.15
    pooled = [float(np.median(r)) for r in rounds]
    spans = [between_run_interval(r, m) for r, m in zip(rounds, pooled)]  # the records' own interval
    result = analyse_sweep(sizes, pooled, 32 * MiB, None, spans, rounds)
    assert result.fit is not None, result.fit_error
    assert BANDWIDTH / 1.25 <= result.fit.bandwidth_bps <= BANDWIDTH * 1.25
    assert result.notes[-1].count("(failed)") <= 1 and "largest sizes held to +-" in result.notes[-1]
    # with the scatter at 0.5%, a round whose largest size reads 20% slow is out of line and fails alone
    steady = [[t * phase * (1 + 0.005 * rng.standard_normal()) for phase in (1.0, 1.1, 0.95)] for t in clean]
    steady[-1][1] *= 1.2
    pooled = [float(np.median(r)) for r in steady]
    spans = [between_run_interval(r, m) for r, m in zip(steady, pooled)]
    lopsided = analyse_sweep(sizes, pooled, 32 * MiB, None, spans, steady)
    assert lopsided.fit is not None, lopsided.fit_error
    assert "GB/s (failed)" in lopsided.notes[-1] and "the median of the 2 round(s) that passed" in \
        lopsided.fit.method


def test_sizes_measured_one_after_the_other_are_held_to_their_scatter_about_the_line():
    """Today's default sweep on the project's machine (sizes past the knee measured one after the other,
    memory too small for rounds): every size at 31.8-33.7 GB/s, each size's back-to-back repetitions
    within +-1%, so a host phase change between sizes is in no interval. At +-3% the line missed its
    4948 MB point (33.7 GB/s against 32.5) and the fit failed; held to three robust standard deviations of
    the sizes' own scatter about the line it fits, and a line bent away from its largest sizes still fails
    (test_a_fit_that_disagrees_with_its_own_largest_sizes_fails_with_that_reason)."""
    from anebench.measure.line_fit import MeasuredPoint, fit_failures, sequential_tolerance

    sizes = [2013e6, 2521e6, 3156e6, 3952e6, 4948e6, 6196e6]
    latencies = [63374e-6, 74841e-6, 98133e-6, 121338e-6, 146700e-6, 192836e-6]  # measured (µs)
    tight = [(t * 0.99, t * 1.01) for t in latencies]
    analysis = analyse_sweep(sizes, latencies, cache_bytes=480 * MiB, intervals=tight)
    assert analysis.fit is not None, analysis.fit_error
    assert 31.5e9 < analysis.fit.bandwidth_bps < 34e9
    tolerance = sequential_tolerance(analysis.fit)
    assert 0.03 < tolerance < 0.08  # wider than the floor, and stated by the residuals, not fixed
    assert any(f"held to +-{tolerance:.1%} of the line" in note for note in analysis.notes)  # and said
    points = [MeasuredPoint(s, t, *span) for s, t, span in zip(sizes, latencies, tight)]
    held_to_the_floor = fit_failures(analysis.fit, None, "", points)  # the +-3% floor alone
    assert held_to_the_floor and "disagrees with its own largest sizes" in held_to_the_floor[0]
