"""The chip catalog: lenient but exact lookup, published figures only, configurations stated."""

from __future__ import annotations

import pytest

from anebench.system.chips import catalog, family_members, lookup_chip


def test_lookup_by_common_names():
    assert lookup_chip("Apple M4 Pro").key == "M4 Pro"
    assert lookup_chip("M4 Pro").key == "M4 Pro"
    assert lookup_chip("m5   max").key == "M5 Max"
    assert lookup_chip("NVIDIA A100-SXM4-80GB").key == "A100 80GB SXM"
    assert lookup_chip("NVIDIA GeForce RTX 4090").key == "RTX 4090"
    assert lookup_chip("NVIDIA H100 80GB HBM3").bandwidth_gbps_max == 3350


def test_unknown_names_are_none_not_the_nearest_chip():
    assert lookup_chip("M4 Pro Max") is None
    assert lookup_chip("H800 PCIe") is None  # not the nearest part (H100 PCIe), whose bandwidth differs
    assert lookup_chip("NVIDIA H100 PCIe").bandwidth_gbps_max == 2000  # its own entry, not the SXM's 3350
    assert lookup_chip("Intel(R) Xeon(R) CPU") is None
    assert lookup_chip(None) is None and lookup_chip("") is None


def test_published_bandwidths_and_configurations():
    assert lookup_chip("M1").bandwidth_label() == "68.25"
    m4max = lookup_chip("M4 Max")
    assert m4max.bandwidth_varies and (m4max.bandwidth_gbps_min, m4max.bandwidth_gbps_max) == (410, 546)
    assert "546" in m4max.bandwidth_note
    low, high = m4max.utilisation(273)
    assert round(low, 3) == 0.5 and round(high, 3) == round(273 / 410, 3)
    assert lookup_chip("M3 Ultra").bandwidth_gbps_max == 819
    assert lookup_chip("M5").bandwidth_gbps_max == 153 and lookup_chip("M5 Pro").bandwidth_gbps_max == 307


def test_unpublished_values_stay_empty():
    for name in ("M5 Max", "M5 Ultra", "M6"):
        chip = lookup_chip(name)
        assert not chip.bandwidth_known and chip.utilisation(100) is None
        assert chip.bandwidth_label() == "not published"
    assert "170" in lookup_chip("M6").bandwidth_note


def test_catalog_covers_m1_to_m6_and_every_row_names_its_source():
    families = {c.family for c in catalog() if c.vendor == "Apple"}
    assert families == {"M1", "M2", "M3", "M4", "M5", "M6"}
    assert all(c.source for c in catalog())
    assert [c.key for c in family_members("M4")] == ["M4", "M4 Pro", "M4 Max"]
    assert {c.key for c in catalog() if c.vendor == "NVIDIA"} >= {"H100 SXM", "H200", "B200", "L40S"}


def test_bandwidth_by_configuration_memory_or_core_count():
    from anebench.system.chips import lookup_chip

    m3max, m4max, m6 = lookup_chip("M3 Max"), lookup_chip("Apple M4 Max"), lookup_chip("M6")
    assert m3max.bandwidth_for("14-core CPU / 36 GB") == (300, 300)
    assert m3max.bandwidth_for("16C CPU / 40C GPU") == (400, 400)
    assert m3max.bandwidth_for(None) == (300, 400)  # configuration not stated: the range
    assert m4max.bandwidth_for("16-core CPU / 48 GB") == (546, 546)
    assert m6.bandwidth_for("32 GB") == (170, 170) and m6.bandwidth_for("16 GB") is None
    assert m6.matching_config("32 GB Mac") == "32 GB"


def test_measured_hosts_are_rows_per_configuration_where_the_bandwidth_depends_on_it():
    from anebench.results.aggregate import aggregate
    from test_store import make_record

    def on_m4max(cores: int, gbps: float):
        record = make_record(chip="Apple M4 Max", gbps=gbps)
        host = record.host.model_copy(update={"cores_physical": cores, "memory_bytes": 48 * 2**30})
        return record.model_copy(update={"host": host, "id": None}).with_id()

    rows = aggregate([on_m4max(14, 300), on_m4max(16, 400)]).rows
    by_config = {r.config: r for r in rows}
    assert set(by_config) == {"14-core CPU", "16-core CPU"}
    assert by_config["14-core CPU"].utilisation == pytest.approx((300 / 410, 300 / 410))
    assert by_config["16-core CPU"].utilisation == pytest.approx((400 / 546, 400 / 546))
