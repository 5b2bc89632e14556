import json

import pytest

from anebench.model import DOCUMENT_SCHEMA
from clitools import run_cli

SMALL = ("--workload", "lm_head:128x2048:fp32", "--runs", "5", "--warmup", "1")


def test_run_json_prints_exactly_one_document_and_saves_it(capsys, tmp_path):
    out = tmp_path / "r.json"
    code, stdout, stderr = run_cli(capsys, "run", "--engine", "numpy", *SMALL, "--out", str(out), "--json")
    assert code == 0, stderr
    document = json.loads(stdout)  # nothing else on stdout
    assert document["schema"] == DOCUMENT_SCHEMA
    (record,) = document["results"]
    assert record["engine"]["name"] == "numpy" and record["method"]["runs"] == 5
    assert json.loads(out.read_text()) == document


def test_run_prints_a_table_and_saves_a_default_file(capsys, tmp_path):
    code, stdout, stderr = run_cli(capsys, "run", "--engine", "numpy", "--engine", "torch", *SMALL)
    assert code == 0, stderr
    assert "GB/s" in stdout and "numpy" in stdout and "torch" in stdout
    (saved,) = tmp_path.glob("anebench-run-*.json")
    assert len(json.loads(saved.read_text())["results"]) == 2


@pytest.mark.parametrize(
    "argv, expected",
    [
        (("run", "--engine", "tensorflow"), "unknown engine 'tensorflow'; valid: "),
        (("run", "--engine", "numpy", "--device", "cuda:0"), "device 'cuda:0' is not available"),
        (("run", "--workload", "gpt5_head"), "unknown workload 'gpt5_head'; valid: "),
        (("run", "--workload", "lm_head:12xx4"), "workload 'lm_head:12xx4' is malformed"),
        (("run", "--engine", "numpy", "--workload", "lm_head:1000000x1000000:fp32"), "GB is free"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_writes_nothing(capsys, tmp_path, argv, expected):
    code, stdout, stderr = run_cli(capsys, *argv)
    assert code == 2
    assert stdout == ""
    assert expected in stderr
    assert len(stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_bad_option_values_exit_2(capsys):
    code, _, stderr = run_cli(capsys, "run", "--runs", "0")
    assert code == 2 and "--runs" in stderr and len(stderr.strip().splitlines()) == 1


def test_engines_lists_every_engine(capsys):
    code, stdout, _ = run_cli(capsys, "engines")
    assert code == 0
    for name in ("numpy", "torch", "mlx"):
        assert name in stdout


def test_info_json_describes_the_host(capsys):
    code, stdout, _ = run_cli(capsys, "info", "--json")
    host = json.loads(stdout)
    assert code == 0 and host["arch"] and host["cores_logical"] >= 1 and host["blas"]
