"""What tripped a newcomer in the first hour (issue 26): the install hint, JSON from `engines`, the store's
list and show, --threads, and names matched ignoring case with a "did you mean"."""

from __future__ import annotations

import importlib.util
import json

import pytest

from clitools import run_cli

SMALL = ["-w", "lm_head:64x256:fp32", "--runs", "4", "-r", "2", "--warmup", "1"]


def test_engines_on_the_base_install_names_each_extra(capsys, monkeypatch):
    """rich markup once swallowed '[coreml]', printing `pip install 'anebench'`: the hint must be whole."""
    real = importlib.util.find_spec
    missing = {"coremltools", "mlx", "torch"}
    def find_spec(name, *args):
        return None if name.split(".")[0] in missing else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    monkeypatch.setenv("COLUMNS", "200")
    code, out, _ = run_cli(capsys, "engines")
    assert code == 0
    for extra in ("coreml", "mlx", "torch"):
        assert f"pip install 'anebench[{extra}]'" in out
    code, out, _ = run_cli(capsys, "engines", "--format", "json")
    why = {e["engine"]: e["why_not"] for e in json.loads(out)["engines"]}
    assert why["torch"] == "torch is not installed (pip install 'anebench[torch]')"


def test_engines_json_lists_every_engine_with_its_devices(capsys):
    code, out, err = run_cli(capsys, "engines", "--json")
    assert code == 0, err
    found = {e["engine"]: e for e in json.loads(out)["engines"]}
    from anebench.engines import ENGINE_FACTORIES

    assert set(found) == set(ENGINE_FACTORIES) >= {"coreml", "mlx", "torch", "numpy"}
    assert found["numpy"]["available"] is True and found["numpy"]["devices"] == ["cpu"]
    assert found["numpy"]["thread_control"]


def test_info_json_is_one_document(capsys):
    code, out, _ = run_cli(capsys, "info", "--format", "json")
    assert code == 0 and json.loads(out)["os"]


def test_bare_store_prints_its_help_and_succeeds(capsys):
    code, out, _ = run_cli(capsys, "store")
    assert code == 0
    assert "Usage: anebench store" in out and "list" in out and "show" in out and "remove" in out


def test_store_list_and_show(capsys, tmp_path):
    db = str(tmp_path / "db.sqlite")
    assert run_cli(capsys, "ingest", "--published", "--db", db)[0] == 0
    code, out, _ = run_cli(capsys, "store", "list", "--db", db, "--json")
    assert code == 0
    records = json.loads(out)["records"]
    assert len(records) == 48
    first = records[0]
    assert {"id", "suite", "workload", "engine", "device", "host", "created"} <= set(first)
    assert first["host"].startswith("Apple M")
    code, out, _ = run_cli(capsys, "store", "list", "--db", db)
    assert code == 0 and first["id"][:12] in out and "48 record(s)" in out
    code, out, _ = run_cli(capsys, "store", "show", first["id"][:10], "--db", db)
    assert code == 0 and first["id"] in out and first["workload"] in out
    code, out, _ = run_cli(capsys, "store", "show", first["id"][:10], "--db", db, "--json")
    assert json.loads(out)["id"] == first["id"]
    code, _, err = run_cli(capsys, "store", "show", "deadbeefdeadbeef", "--db", db)
    assert code == 2 and "no record" in err


def test_store_list_without_a_store_is_one_line(capsys, tmp_path):
    code, _, err = run_cli(capsys, "store", "list", "--db", str(tmp_path / "none.sqlite"))
    assert code == 2 and err.count("\n") == 1


def test_threads_limit_the_blas_and_are_recorded_and_shown(capsys, monkeypatch):
    from anebench.engines.numpy_engine import NumpyEngine

    applied = []
    real = NumpyEngine.thread_limit

    def spy(self, threads):
        applied.append(threads)
        return real(self, threads)

    monkeypatch.setattr(NumpyEngine, "thread_limit", spy)
    monkeypatch.setenv("COLUMNS", "100")
    code, out, err = run_cli(capsys, "run", "-e", "numpy", *SMALL, "--threads", "1", "--no-save")
    assert code == 0, err
    assert applied == [1]
    assert "thr" in out.splitlines()[1]
    code, out, err = run_cli(capsys, "run", "-e", "numpy", *SMALL, "-t", "1", "--json", "--no-save")
    assert json.loads(out)["results"][0]["method"]["threads"] == 1
    code, out, err = run_cli(capsys, "run", "-e", "numpy", *SMALL, "--json", "--no-save")
    assert json.loads(out)["results"][0]["method"]["threads"] is None


def test_threads_for_an_engine_without_a_setting_is_refused_before_work(capsys):
    code, _, err = run_cli(capsys, "run", "-e", "numpy", "-e", "mlx", *SMALL, "--threads", "1", "--no-save")
    assert code == 2
    assert "--threads 1: mlx has no setting for its CPU threads" in err
    assert "numpy:cpu" not in err  # nothing was measured first


def test_threads_on_a_suite_is_recorded(capsys):
    code, out, err = run_cli(
        capsys, "compute", "-e", "numpy", "-w", "lm_head:64x64:fp32", "--batch", "8", "--runs", "3",
        "--threads", "1", "--json", "--no-save",
    )
    assert code in (0, 3), err  # 3: a 64x64 head is not clearly compute-bound (the analysis says so)
    assert all(r["method"]["threads"] == 1 for r in json.loads(out)["results"])
    code, out, err = run_cli(
        capsys, "compute", "-e", "numpy", "-w", "lm_head:64x64:fp32", "--batch", "8", "--runs", "3",
        "--threads", "1", "--no-save",
    )
    assert code in (0, 3) and "numpy:cpu t=1" in out  # the suite's table names the limit


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["-e", "nunpy"], "unknown engine 'nunpy'; did you mean 'numpy'? valid: coreml, "),
        (["-w", "llama_lm_had"], "did you mean 'llama_lm_head'?"),
        (["-w", "lm_head:64x64:fp8"], "unknown dtype 'fp8'; valid: fp32, fp16, bf16"),
        (["-e", "numpy", "-d", "cpux"], "did you mean 'cpu'?"),
    ],
)
def test_a_typo_gets_the_nearest_name(capsys, args, expected):
    code, _, err = run_cli(capsys, "run", *args, "--dry-run")
    assert code == 2
    assert expected in err


def test_unrelated_device_gets_no_suggestion(capsys):
    code, _, err = run_cli(capsys, "run", "-e", "numpy", "-d", "gpu", "--dry-run")
    assert code == 2 and "did you mean" not in err


def test_names_match_ignoring_case(capsys):
    code, out, err = run_cli(capsys, "run", "-e", "NumPy", "-d", "CPU", "-w", "Llama_lm_head", "--dry-run")
    assert code == 0, err
    assert "numpy" in out and "llama_lm_head" in out


def test_a_piped_suite_prints_one_line_per_finished_point_with_the_time_left(capsys):
    """The default roofline was silent for 5.5 minutes when piped; now each point says it is done."""
    code, _, err = run_cli(
        capsys, "roofline", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--max-batch", "4", "--runs", "3",
        "--no-save",
    )
    assert code in (0, 3), err  # 3: the ridge of a tiny head failed its gates, after printing each point
    done = [line for line in err.splitlines() if line.startswith("done: roofline numpy:cpu batch")]
    assert [line.split(" batch ")[1].split(" in ")[0] for line in done] == ["1 (1/3)", "2 (2/3)", "4 (3/3)"]
    assert "left)" in done[0] and "elapsed" in done[-1]


def test_a_piped_run_of_several_steps_says_each_step_done(capsys):
    code, _, err = run_cli(capsys, "run", "-e", "numpy", "-e", "torch", *SMALL, "--no-save")
    assert code == 0, err
    assert "done: numpy:cpu lm_head:64x256:fp32 (1/2) in " in err
    assert "done: torch:cpu lm_head:64x256:fp32 (2/2) in " in err


def test_quiet_prints_no_progress(capsys):
    code, _, err = run_cli(
        capsys, "-q", "roofline", "-e", "numpy", "-w", "lm_head:64x256:fp32", "--max-batch", "2",
        "--runs", "3",
        "--no-save",
    )
    assert code in (0, 3) and "done:" not in err


def test_time_left_is_the_mean_point_times_the_points_to_come(monkeypatch):
    from anebench.cli import console

    now = [100.0]
    monkeypatch.setattr(console.time, "monotonic", lambda: now[0])
    log = console.PointLog()
    assert log.start("sweep (1/5)") is None
    now[0] = 110.0
    line = log.start("sweep (2/5)")  # point 1 took 10 s; 4 points to come
    assert line == "done: sweep (1/5) in 10 s (elapsed 10 s, about 40 s left)"


def test_a_record_without_threads_keeps_the_id_it_had_before_the_field():
    """method.threads was added later: records that do not set it keep their content ids."""
    from anebench.results.published import published_records

    record = published_records()[0]
    assert record.method.threads is None
    body = record.model_dump(mode="json", by_alias=True, exclude={"id"})
    del body["method"]["threads"]
    del body["decode"]  # added later too (issue 24)
    import hashlib

    old_id = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    assert record.content_id() == old_id
    threaded = record.model_copy(update={"method": record.method.model_copy(update={"threads": 2})})
    assert threaded.content_id() != old_id


def test_every_bare_group_prints_its_help_and_succeeds(capsys):
    import click

    from anebench.cli import app

    groups = [name for name, command in app.commands.items() if isinstance(command, click.Group)]
    assert "store" in groups
    for name in groups:
        code, out, err = run_cli(capsys, name)
        assert code == 0, (name, err)
        assert f"Usage: anebench {name}" in out and "Commands:" in out


def test_a_results_file_saved_before_the_later_fields_still_loads(tmp_path):
    """A file written by an earlier anebench (no method.threads, no decode key) keeps its id and loads."""
    from anebench.model import ResultRecord
    from anebench.results.files import load_result_file
    from anebench.results.published import published_records

    record = published_records()[0].model_copy(update={"provenance": "imported"}).with_id()
    body = record.model_dump(mode="json", by_alias=True)
    del body["method"]["threads"], body["decode"]
    assert ResultRecord.model_validate(body).content_id() == body["id"]
    saved = tmp_path / "old.json"
    saved.write_text(json.dumps({"schema": "anebench.results/2", "results": [body]}))
    assert [r.id for r in load_result_file(saved)] == [body["id"]]


def test_a_measured_file_from_before_the_later_fields_still_loads(capsys, tmp_path):
    """A run saved before method.threads, decode and repetitions.interleave existed keeps its id."""
    from anebench.results.files import load_result_file

    code, out, err = run_cli(capsys, "run", "-e", "numpy", *SMALL, "--json", "--no-save")
    assert code == 0, err
    document = json.loads(out)
    body = document["results"][0]
    del body["method"]["threads"], body["decode"], body["repetitions"]["interleave"]
    saved = tmp_path / "earlier.json"
    saved.write_text(json.dumps(document))
    assert [r.id for r in load_result_file(saved)] == [body["id"]]
