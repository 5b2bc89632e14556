"""Issue 25, what a results repository publishes: the static page in headless Chromium at 1400 and 420 px,
the dataset served by `leaderboard serve` (the real Datasette, over HTTP on 127.0.0.1), and the
skeleton of `leaderboard init` (its workflow parsed as YAML and its steps run here as commands)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import matplotlib.pyplot as plt
import pytest
import yaml

from anebench import __version__
from anebench.errors import UserError
from anebench.report.leaderboard import CONFIG, DB, HTML, README, START, build
from anebench.report.leaderboard_dataset import MATRIX_SQL
from anebench.report.leaderboard_init import CONTRIBUTING, PR_TEMPLATE, WORKFLOW, init
from clitools import run_cli
from leaderboard_repo import make_repository
from test_report import CHROMIUM
from test_report_layout import _measure

SOURCE = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("leaderboard-site")
    return make_repository(base / "repo", base / "runs")


# --- the static page ----------------------------------------------------------------------------------


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (.ci/run installs it)")
def test_the_leaderboard_page_fits_1400_and_420_px(built, tmp_path):
    page = tmp_path / "index.html"
    shutil.copy(built / HTML, page)
    for width in (1400, 420):
        m = _measure(page, width, tmp_path, f"leaderboard-{width}")
        assert m["innerWidth"] == width, m
        assert m["scrollWidth"] <= m["clientWidth"] <= m["innerWidth"], m  # wide tables scroll in their box
        assert width > 1000 or m["wideTables"] > 0, m
        assert m["toc"] >= page.read_text().count("<section id=") >= 6 and m["tocVisible"], m
        shot = plt.imread(tmp_path / f"leaderboard-{width}.png")
        assert shot.shape[1] == width and shot.std() > 0.05  # a page was drawn, not a blank frame


def test_the_page_links_to_the_published_dataset_and_escapes_it(built, tmp_path):
    repo = Path(shutil.copytree(built, tmp_path / "repo"))
    url = "https://data.example.org/results?a=1&b=<2>"
    (repo / CONFIG).write_text(json.dumps({"title": "Macs <everywhere>", "datasette_url": url}))
    build(repo)
    page = (repo / HTML).read_text()
    assert '<a href="https://data.example.org/results?a=1&amp;b=&lt;2&gt;">' in page
    assert "<h1>Macs &lt;everywhere&gt;</h1>" in page and "<script" not in page
    assert 'href="' not in (built / HTML).read_text().split("<main>")[1].split("</h1>")[0]  # none unpublished
    (repo / CONFIG).write_text(json.dumps({"datasette_url": "javascript:alert(1)"}))
    with pytest.raises(UserError, match="datasette_url must be an http"):
        build(repo)


# --- the dataset: the real Datasette, over HTTP ------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get_json(url: str, deadline: float) -> dict:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)


@pytest.mark.skipif(
    __import__("importlib").util.find_spec("datasette") is None, reason="the dataset extra is not installed"
)
def test_leaderboard_serve_answers_the_canned_queries_over_http(built, tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(SOURCE / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    log = (tmp_path / "serve.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "anebench", "leaderboard", "serve", str(built), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/results"
        matrix = _get_json(f"{base}/matrix_by_chip.json?_shape=objects", time.monotonic() + 90)
        with sqlite3.connect(built / DB) as db:
            db.row_factory = sqlite3.Row
            expected = [dict(row) for row in db.execute(MATRIX_SQL)]
        assert matrix["rows"] == expected and len(expected) == 20
        history = _get_json(f"{base}/chip_history.json?_shape=objects&chip=M1", time.monotonic() + 10)
        assert len(history["rows"]) == 10 and all(
            r["submission"].startswith("submissions/m1/") for r in history["rows"]
        )
        engines = _get_json(
            f"{base}/engine_vs_engine.json?_shape=objects&chip=M4&engine_a=mlx&engine_b=coreml",
            time.monotonic() + 10,
        )
        (pair,) = engines["rows"]
        assert pair["ratio_second_to_first"] == pytest.approx(
            pair["second_gbps"] / pair["first_gbps"], abs=1e-4
        )
        table = _get_json(f"{base}/matrix.json", time.monotonic() + 10)
        assert set(table["facet_results"]) == {"chip", "engine", "device", "workload"}
        meta = _get_json(f"http://127.0.0.1:{port}/-/metadata.json", time.monotonic() + 10)
        assert "GB/s" in meta["databases"]["results"]["tables"]["matrix"]["columns"]["median_gbps"]
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the CLI and the Datasette it started
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(5)
        log.close()
    with pytest.raises(OSError):  # stopped: nothing answers on the port any more
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_serve_says_in_one_line_what_is_missing(tmp_path, capsys):
    code, _, err = run_cli(capsys, "leaderboard", "serve", str(tmp_path))
    assert code == 2 and "run `anebench leaderboard build" in err and len(err.strip().splitlines()) == 1


# --- init: the skeleton and its CI workflow -----------------------------------------------------------------


def test_init_writes_the_skeleton_and_never_replaces_a_file(tmp_path, capsys):
    repo = tmp_path / "results"
    code, out, err = run_cli(capsys, "leaderboard", "init", str(repo), "--title", "Macs")
    assert code == 0, err
    for name in (README, WORKFLOW, PR_TEMPLATE, CONTRIBUTING, CONFIG, HTML, DB):
        assert (repo / name).is_file(), name
    assert "submission file" in (repo / PR_TEMPLATE).read_text()
    assert f'pip install "anebench=={__version__}"' in (repo / WORKFLOW).read_text()  # CI builds as we do
    assert "anebench submit mine.json --log run.log --into ." in (repo / CONTRIBUTING).read_text()
    assert START in (repo / README).read_text()
    (repo / CONTRIBUTING).write_text("ours")
    assert init(repo)[1] == [README, WORKFLOW, PR_TEMPLATE, CONTRIBUTING, CONFIG, "submissions/.gitkeep"]
    assert (repo / CONTRIBUTING).read_text() == "ours"
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / README).write_text("# mine\n")
    with pytest.raises(UserError, match="without the leaderboard markers"):
        init(plain)
    assert sorted(p.name for p in plain.iterdir()) == [README]
    with pytest.raises(UserError, match="^install 'anebench"):
        init(tmp_path / "x", install='anebench"; rm -rf /')


@pytest.mark.slow
def test_the_init_workflow_parses_as_yaml_and_its_steps_run_here(built, tmp_path):
    source = tmp_path / "source"  # a copy: building a wheel writes build/ and egg-info beside the code
    shutil.copytree(
        SOURCE / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(SOURCE / name, source / name)
    repo = Path(shutil.copytree(built, tmp_path / "repo"))
    (repo / WORKFLOW).unlink()
    init(repo, install=str(source))
    workflow = yaml.safe_load((repo / WORKFLOW).read_text())
    triggers = workflow.get("on", workflow.get(True))  # YAML 1.1 reads a bare `on` as true
    assert "pull_request" in triggers
    (job,) = workflow["jobs"].values()
    steps = job["steps"]
    assert [s["uses"].split("@")[0] for s in steps if "uses" in s] == [
        "actions/checkout",
        "actions/setup-python",
    ]
    commands = [s["run"] for s in steps if "run" in s]
    assert commands == [f'python -m pip install "{source}"', "anebench leaderboard build . --check"]
    target = tmp_path / "installed"
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{target / 'bin'}{os.pathsep}{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": str(target),
        "PIP_TARGET": str(target),
        "PIP_NO_DEPS": "1",
        "PIP_NO_INDEX": "1",
        "PIP_NO_BUILD_ISOLATION": "0",
    }  # installs this source beside the shared environment, offline
    for command in commands:
        done = subprocess.run(
            ["bash", "-e", "-c", command],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, (command, done.stdout[-2000:], done.stderr[-2000:])
    assert (target / "bin" / "anebench").is_file() and "up to date: 50 submission(s)" in done.stdout
    (repo / "leaderboard" / "matrix.csv").write_text("stale\n")
    done = subprocess.run(
        ["bash", "-e", "-c", commands[-1]],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1 and "leaderboard/matrix.csv: differs from a fresh build" in done.stderr
