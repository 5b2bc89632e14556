"""The report reproduces anemll-bench's README utilisation table from `ingest --published` alone."""

from __future__ import annotations

import contextlib
import csv
import io
import json
from importlib import resources

import pytest

from anebench.cli import main


def _table() -> list[dict]:
    text = resources.files("anebench").joinpath("data/published_anemll_utilisation.csv").read_text()
    return list(csv.DictReader(text.splitlines()))


@pytest.fixture(scope="module")
def matrix(tmp_path_factory):
    """`anebench ingest --published`, then `anebench report --format json`, as a user runs them."""
    db = tmp_path_factory.mktemp("util") / "db.sqlite"
    main(["ingest", "--published", "--db", str(db)])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["report", "--db", str(db), "--format", "json"])
    return json.loads(out.getvalue())["matrix"]


def test_every_readme_utilisation_figure_is_reproduced_within_one_point(matrix):
    table = _table()
    assert {row["chip"] for row in table} == {"M6", "M5 Pro", "M4 Pro", "M5", "M3", "M2 Pro", "M2 Ultra",
                                              "M1 Ultra"}
    for row in table:
        (found,) = [m for m in matrix if m["chip"] == row["chip"] and m["workload"] == "llama_lm_head"
                    and m["engine"] == "coreml" and m["config"] in (row["config"], "")
                    and (m["config"] == row["config"] or row["chip"] != "M6")]
        low, high = found["utilisation"]
        assert low == pytest.approx(high), row["chip"]  # one bandwidth for the row's configuration
        assert abs(low * 100 - float(row["utilisation_pct"])) <= 1, (row["chip"], low)
        assert found["bandwidth_gbps"][0] == pytest.approx(float(row["memory_gbps"])), row["chip"]


def test_m6_configurations_are_separate_rows_with_their_own_utilisation(matrix):
    m6 = {m["config"]: m for m in matrix if m["chip"] == "M6" and m["workload"] == "llama_lm_head"}
    assert set(m6) == {"16 GB", "32 GB"}
    assert m6["16 GB"]["median_gbps"] == pytest.approx(133.92) and m6["16 GB"]["utilisation"] is None
    assert m6["32 GB"]["median_gbps"] == pytest.approx(152.05, abs=0.01)


def test_the_m2_pro_figure_derived_from_a_percentage_is_flagged(matrix):
    (m2pro,) = [m for m in matrix if m["chip"] == "M2 Pro"]
    assert m2pro["median_gbps"] == pytest.approx(62.0)
    assert "GB/s derived from a stated utilisation percentage" in m2pro["flags"]
    assert m2pro["contributors"] == 1
