"""Typed warnings ({kind, text}), the one checks() of the builder and the report, mitigations as values,
and failure outcomes as flags (issue 23, item 6)."""

from __future__ import annotations

import json
import queue
import shutil
from pathlib import Path

import numpy as np
import pytest

from anebench.cli.console import WarningLog
from anebench.cli.terminal import Warnings
from anebench.engines import get_engine
from anebench.errors import MeasurementError
from anebench.measure.checks import DEVICE_GAP_LIMIT, checks, record_checks, rejudged
from anebench.measure.gpu import gpu_warnings
from anebench.measure.stats import cache_warning, stability_warnings, summarize
from anebench.measure.warmup import WarmupPolicy
from anebench.model import (
    WARNING_KINDS,
    GpuReport,
    GpuState,
    HostState,
    KeepAwake,
    RecordWarning,
    ResultRecord,
    classify,
)
from anebench.orchestration.concurrency import CopyOutcome, _collect
from anebench.orchestration.keepawake import share_warning
from anebench.orchestration.mitigations import KEEP_AWAKE, UsedMitigations
from anebench.orchestration.session import RunOptions, measure_workload
from anebench.report.submission import issue_body
from anebench.results.files import load_result_file, save_records
from anebench.results.store import open_store
from anebench.system.energy_check import check_window
from anebench.system.host import busy_warning
from anebench.system.nvml import throttle_warnings
from anebench.workloads import Workload
from clitools import run_cli

V2 = Path(__file__).parent / "data" / "v2"
# tests/data/v2/string_warnings.json and store.db: one record written by anebench before warnings had
# kinds (each warning a plain string), with the id it was stored under.
STORED_KINDS = ["few-samples", "unstable", "cache-resident", "busy", "drift", "warmup-cap", "keep-awake",
                "note"]


@pytest.fixture(scope="module")
def record() -> ResultRecord:
    workload = Workload("typed", hidden=64, vocab=512, dtype="fp32", seed=5)
    return measure_workload(get_engine("numpy"), "cpu", workload,
                            RunOptions(runs=6, warmup=WarmupPolicy(fixed=1)))


def rebuilt_with(record: ResultRecord, samples: list[float], warnings: list) -> ResultRecord:
    """``record`` as if stored with these samples and these warnings (a record made by an older anebench,
    before a check existed or with another threshold), on a host whose cache size is not stated (so no
    cache check, whatever this host's cache)."""
    derived = {"id", "summary", "gbps", "device_summary", "device_gbps", "repetitions"}
    body = record.model_dump(mode="json", by_alias=True, exclude=derived)
    body["host"]["llc_bytes"] = None
    return ResultRecord.model_validate({**body, "samples_s": samples, "warnings": warnings}).with_id()


def test_a_measured_record_stores_each_warning_as_kind_and_text(record, tmp_path):
    assert record.warnings and all(w.kind in WARNING_KINDS for w in record.warnings)
    assert RecordWarning(kind="few-samples", text="only 6 samples: the confidence interval is wide") \
        in record.warnings
    path = tmp_path / "typed.json"
    save_records(path, [record])
    stored = json.loads(path.read_text())["results"][0]["warnings"]
    assert all(set(w) == {"kind", "text"} for w in stored)
    assert {"kind": "few-samples", "text": "only 6 samples: the confidence interval is wide"} in stored
    assert load_result_file(path, strict=True) == [record]


def test_a_file_stored_with_string_warnings_loads_them_classified_and_keeps_its_id():
    raw = json.loads((V2 / "string_warnings.json").read_text())["results"][0]
    assert all(isinstance(w, str) for w in raw["warnings"])
    (loaded,) = load_result_file(V2 / "string_warnings.json", strict=True)  # strict: the id is checked
    assert [w.kind for w in loaded.warnings] == STORED_KINDS
    assert [w.text for w in loaded.warnings] == raw["warnings"]
    assert loaded.id == raw["id"] == loaded.content_id()


def test_a_store_written_with_string_warnings_keeps_its_ids(tmp_path):
    db = tmp_path / "store.db"
    shutil.copy(V2 / "store.db", db)
    raw = json.loads((V2 / "string_warnings.json").read_text())["results"][0]
    with open_store(db) as store:
        (stored,) = store.records()
    assert stored.id == raw["id"] == stored.content_id()
    assert [w.kind for w in stored.warnings] == STORED_KINDS


def test_the_id_covers_the_warnings_text(record):
    changed = record.model_copy(update={"warnings": [*record.warnings, RecordWarning.of("a new note")]})
    assert changed.content_id() != record.content_id()


def test_each_producer_writes_a_kind_its_text_would_be_classified_as():
    """An old record's strings get the kind today's producer gives the same text."""
    noisy = list(np.random.default_rng(2).uniform(1e-3, 3e-3, 300))
    drifting = list(np.linspace(1e-3, 1.3e-3, 300))
    produced = [
        *stability_warnings(noisy, summarize(noisy)),
        *stability_warnings(drifting, summarize(drifting)),
        *stability_warnings([1e-3] * 5, summarize([1e-3] * 5)),
        cache_warning(1_000_000, 32_000_000),
        busy_warning(HostState(load_average_1m=3.0, busy=True), 2),
        share_warning(KeepAwake(cpu_seconds=0.5, wall_seconds=1.0, cpu_share=0.5, effective=False)),
        *gpu_warnings(GpuReport(headline_reason="x", energy_window=check_window(0.1, 0.5, 0))),
        *checks([1e-3] * 12, weight_bytes=10**9, cache_bytes=None, warmup_steady=False, warmup_runs=50,
                device_samples_s=[0.5e-3] * 12),
    ]
    produced += [RecordWarning(kind="gpu-throttle", text=text) for text in throttle_warnings(
        GpuState(thermal_violation_ns=0), GpuState(thermal_violation_ns=250_000_000))]
    kinds = {w.kind for w in produced if w is not None}
    assert kinds >= {"unstable", "drift", "few-samples", "cache-resident", "busy", "keep-awake", "energy",
                     "warmup-cap", "device-gap", "gpu-throttle"}
    for warning in produced:
        assert warning is not None and classify(warning.text) == warning.kind, warning
    assert classify("something no producer writes") == "note"


def test_the_console_groups_warnings_by_kind_then_by_text_less_figures():
    log = WarningLog()
    log.add(RecordWarning(kind="drift", text="drift: median moved +12%"), "a")
    log.add(RecordWarning(kind="drift", text="drift: median moved -17%"), "b")
    # the same words and figures under another kind are another warning, not a third of the same
    log.add(RecordWarning(kind="note", text="drift: median moved +12%"), "c")
    lines = log.lines()
    assert len(lines) == 2
    assert lines[0].startswith("warning (x2): drift: median moved +12%") and "[a, b]" in lines[0]
    assert lines[1] == "warning: c: drift: median moved +12%"
    # a plain string (an old record's, a caller's) is grouped by the kind its text classifies as
    log.add("busy machine: load average 3.00", "x")
    log.add(RecordWarning(kind="busy", text="busy machine: load average 4.50"), "y")
    (line,) = log.lines()
    assert line.startswith("warning (x2): busy machine")


def test_the_suites_group_their_records_warnings_by_kind(record):
    same_text = "cache-resident: weights (1.0 MB) fit"
    one = rebuilt_with(record, record.samples_s, [RecordWarning(kind="cache-resident", text=same_text)])
    two = rebuilt_with(record, record.samples_s, [RecordWarning(kind="note", text=same_text)])
    grouped = Warnings()
    grouped.add_records([one, two])
    assert len(grouped.lines()) == 2  # one text, two kinds: two warnings


def test_the_report_rejudges_an_old_record_with_todays_checks(record):
    """A record stored without the drift warning (made before the check, or under a looser limit) is
    judged again where it is reported: the submission's issue body and the results matrix's flags."""
    drifting = list(np.linspace(1e-3, 1.3e-3, 40))
    old = rebuilt_with(record, drifting, [])
    assert old.warnings == []
    found = record_checks(old)
    assert [w.kind for w in found] == ["drift"]
    assert rejudged(old) == found
    body = issue_body([old], "old.submission.json", anonymized=False)
    assert found[0].text in body.replace("\\", "")
    from anebench.results.aggregate import _flags

    assert "measurement warnings" in _flags([old], None)


def test_the_report_drops_a_stored_check_warning_todays_checks_do_not_find(record):
    steady = [1e-3] * 30
    stored = [RecordWarning.of("unstable: coefficient of variation 50% > 10%"), RecordWarning.of("a note")]
    old = rebuilt_with(record, steady, stored)
    assert [w.kind for w in old.warnings] == ["unstable", "note"]
    # the note stands; the check is done again and finds steady samples
    assert rejudged(old) == [RecordWarning(kind="note", text="a note")]


def test_the_builder_and_the_report_run_the_same_checks(record):
    decided = {w for w in record.warnings if w.kind in {"few-samples", "unstable", "drift", "cache-resident",
                                                        "warmup-cap", "device-gap"}}
    assert decided and set(record_checks(record)) == decided
    assert set(rejudged(record)) == set(record.warnings)


def test_a_device_gap_and_a_warmup_cap_come_from_the_figures():
    wall = [1e-3] * 12
    device = [1e-3 * (1 - DEVICE_GAP_LIMIT) * 0.9] * 12  # wall clock more than the limit above it
    found = checks(wall, weight_bytes=10**9, cache_bytes=None, warmup_steady=True, warmup_runs=3,
                   device_samples_s=device)
    assert [w.kind for w in found] == ["device-gap"]
    assert checks(wall, weight_bytes=10**9, cache_bytes=None, warmup_steady=True, warmup_runs=3,
                  device_samples_s=wall) == []
    capped = checks(wall, weight_bytes=10**9, cache_bytes=None, warmup_steady=False, warmup_runs=50)
    assert capped == [RecordWarning(kind="warmup-cap",
                                    text="warmup hit its cap after 50 calls without becoming steady")]


def test_mitigations_are_values_whose_sentences_are_derived():
    assert not UsedMitigations() and UsedMitigations().describe() == []
    options = RunOptions(mitigations=UsedMitigations(keep_awake=True))
    assert options.keep_awake and options.mitigations.describe() == [KEEP_AWAKE]
    both = UsedMitigations(keep_awake=True).with_(UsedMitigations(spinner_threads=1, predicts=4))
    assert both == UsedMitigations(keep_awake=True, spinner_threads=1, predicts=4)
    said = both.describe()
    assert said[0] == KEEP_AWAKE and "ran 1 thread(s)" in said[1]
    assert said[2].startswith("predicts-per-call 4:")
    with pytest.raises(ValueError, match="at least 1"):
        UsedMitigations(repeat=0)


class FinishedWorker:
    exitcode = 0

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        return None


def test_a_copy_released_by_the_broken_barrier_is_a_flag_not_a_phrase():
    results: queue.Queue = queue.Queue()
    # the failing copy's own message happens to quote the exception's name; the released one is flagged
    results.put(CopyOutcome(0, error="copy 0: MeasurementError: a BrokenBarrierError in the log, then boom"))
    results.put(CopyOutcome(1, error="copy 1: BrokenBarrierError: ", released=True))
    with pytest.raises(MeasurementError) as raised:
        _collect([FinishedWorker(), FinishedWorker()], results)
    assert str(raised.value) == "copy 0: MeasurementError: a BrokenBarrierError in the log, then boom"
    # every copy released: there is no other cause to name, so their errors are said
    results.put(CopyOutcome(0, error="copy 0: BrokenBarrierError: ", released=True))
    results.put(CopyOutcome(1, error="copy 1: BrokenBarrierError: ", released=True))
    with pytest.raises(MeasurementError, match="copy 0: BrokenBarrierError: ; copy 1"):
        _collect([FinishedWorker(), FinishedWorker()], results)


def test_store_show_prints_the_text_of_typed_and_of_string_warnings(record, tmp_path, capsys):
    db = tmp_path / "store.db"
    shutil.copy(V2 / "store.db", db)  # its record's warnings are plain strings
    with open_store(db) as store:
        store.ingest([record], "typed")  # this one's are {kind, text}
    raw = json.loads((V2 / "string_warnings.json").read_text())["results"][0]
    for record_id, text in ((raw["id"], raw["warnings"][0]), (record.id, record.warnings[0].text)):
        code, out, err = run_cli(capsys, "store", "show", record_id[:12], "--db", str(db))
        assert code == 0, err
        said = " ".join(out.split())  # the value column wraps
        assert " ".join(text.split()) in said and "'kind'" not in said
