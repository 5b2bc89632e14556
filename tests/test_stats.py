import numpy as np

from anebench.measure.stats import cache_warning, stability_warnings, summarize
from anebench.model.statistics import median_ci95


def test_summary_of_known_samples():
    samples = [float(i) / 1000 for i in range(1, 101)]  # 1..100 ms
    s = summarize(samples)
    assert s.n == 100
    assert abs(s.median - 0.0505) < 1e-12
    assert abs(s.mean - 0.0505) < 1e-12
    assert s.min == 0.001 and s.max == 0.1
    assert abs(s.p5 - 0.00595) < 1e-9 and abs(s.p95 - 0.09505) < 1e-9
    assert abs(s.iqr - 0.0495) < 1e-9
    assert abs(s.stdev - np.std(samples, ddof=1)) < 1e-12
    assert s.ci95_low < s.median < s.ci95_high


def test_median_ci_uses_order_statistics_and_covers_the_median():
    data = np.arange(100, dtype=float)
    low, high = median_ci95(data)
    # n=100: ranks 50 -+ 1.96*sqrt(100)/2 = 40.2 .. 59.8 -> order statistics 40 and 60
    assert (low, high) == (40.0, 60.0)
    assert median_ci95(np.array([1.0, 2.0, 3.0])) == (1.0, 3.0)


def test_ci_covers_the_true_median_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    hits = 0
    for _ in range(400):
        sample = np.sort(rng.exponential(1.0, 101))
        low, high = median_ci95(sample)
        hits += low <= np.log(2) <= high
    assert 0.92 <= hits / 400 <= 0.99


def test_stable_samples_raise_no_warning():
    samples = list(1e-3 + 1e-6 * np.random.default_rng(1).standard_normal(300))
    assert stability_warnings(samples, summarize(samples)) == []


def test_unstable_and_drifting_samples_are_flagged():
    noisy = list(np.random.default_rng(2).uniform(1e-3, 3e-3, 300))
    found = stability_warnings(noisy, summarize(noisy))
    assert any(w.text.startswith("unstable") and w.kind == "unstable" for w in found)
    drifting = list(np.linspace(1e-3, 1.3e-3, 300))
    found = stability_warnings(drifting, summarize(drifting))
    assert any(w.text.startswith("drift") and "+" in w.text and w.kind == "drift" for w in found)
    few = [1e-3] * 5
    assert any("only 5 samples" in w.text and w.kind == "few-samples"
               for w in stability_warnings(few, summarize(few)))


def test_cache_resident_weights_are_flagged():
    found = cache_warning(100_000_000, 105_000_000)
    assert found is not None and found.text.startswith("cache-resident") and found.kind == "cache-resident"
    assert cache_warning(500_000_000, 105_000_000) is None
    assert cache_warning(1000, None) is None
