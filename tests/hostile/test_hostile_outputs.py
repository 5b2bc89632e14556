"""The output policy: no writer replaces a device, a FIFO, a directory, a read-only file, the store or
an input; symlinks are written through; parallel default names never collide; a failed save keeps the
measurement; an interrupted multi-step run keeps its finished steps."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from anebench.model import DOCUMENT_SCHEMA
from clitools import run_cli
from conftest import digest, one_line_error

SMALL = ("--engine", "numpy", "--workload", "lm_head:256x4096:fp32", "--runs", "5", "--warmup", "0")
SRC = str(Path(__file__).resolve().parents[2] / "src")
# A refusal before measuring or allocating takes well under a second on an idle machine; the bound is
# loose because a loaded 2-core CI runner can spend seconds on a first import, and still far below what
# measuring (the 10 s default budget and more) or allocating the refused gigabytes would take.
REFUSAL_S = 8.0


def run_small(capsys, *extra: str) -> tuple[int, str, str]:
    return run_cli(capsys, "run", *SMALL, *extra)


def test_run_out_a_device_node_is_refused_and_the_node_stays_a_device(tmp_path, capsys):
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # the same device as /dev/null (we are root)
    started = time.perf_counter()
    code, _, err = run_small(capsys, "--out", str(node))
    assert code == 2 and time.perf_counter() - started < REFUSAL_S
    one_line_error(err, "is a device")
    assert stat.S_ISCHR(os.stat(node).st_mode)
    assert not list(tmp_path.glob("*.json"))  # refused before measuring: no default file either


@pytest.mark.parametrize("minor", [3, 7])  # /dev/null and /dev/full, as nodes of our own: a regression must
def test_null_and_full_devices_are_refused(minor, tmp_path, capsys):  # never clobber the machine's devices
    node = tmp_path / f"dev-{minor}"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    code, _, err = run_small(capsys, "--out", str(node))
    assert code == 2
    one_line_error(err, "is a device")
    assert stat.S_ISCHR(os.stat(node).st_mode)


def test_a_fifo_a_directory_and_a_read_only_file_are_refused(tmp_path, capsys):
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    folder = tmp_path / "folder.json"
    folder.mkdir()
    readonly = tmp_path / "keep.json"
    readonly.write_text("precious")
    readonly.chmod(0o444)
    for target, phrase in ((fifo, "FIFO"), (folder, "is a directory"), (readonly, "read-only; give --force")):
        code, _, err = run_small(capsys, "--out", str(target))
        assert code == 2, target
        one_line_error(err, phrase)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and folder.is_dir() and readonly.read_text() == "precious"
    code, _, err = run_small(capsys, "--out", str(readonly), "--force")  # --force replaces it
    assert code == 0, err
    assert json.loads(readonly.read_text())["schema"] == DOCUMENT_SCHEMA


def test_a_symlink_is_written_through_and_a_link_to_a_device_is_refused(tmp_path, capsys):
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    code, _, err = run_small(capsys, "--out", str(link))
    assert code == 0, err
    assert link.is_symlink() and json.loads(real.read_text())["results"][0]["engine"]["name"] == "numpy"
    node = tmp_path / "null"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    devlink = tmp_path / "dev.json"
    devlink.symlink_to(node)
    code, _, err = run_small(capsys, "--out", str(devlink))
    assert code == 2
    one_line_error(err, "is a device")
    assert stat.S_ISCHR(os.stat(node).st_mode)


def test_run_out_the_store_and_report_out_the_store_are_refused(tmp_path, capsys, store_db):
    before = digest(store_db)
    code, _, err = run_small(capsys, "--store", "--db", str(store_db), "--out", str(store_db))
    assert code == 2
    one_line_error(err, "the results store")
    link = tmp_path / "also-the-store.md"
    link.symlink_to(store_db)
    for out in (store_db, link):
        for fmt in ("md", "html", "csv", "json"):
            code, _, err = run_cli(
                capsys, "report", "--db", str(store_db), "--out", str(out), "--format", fmt
            )
            assert code == 2
            one_line_error(err, "the results store")
    assert digest(store_db) == before


def test_report_never_creates_a_database(tmp_path, capsys):
    missing = tmp_path / "no" / "such" / "store.sqlite"
    code, _, err = run_cli(capsys, "report", "--db", str(missing))
    assert code == 2
    one_line_error(err, "no such database")
    assert not (tmp_path / "no").exists()


def test_an_input_of_the_command_is_never_its_output(tmp_path, capsys):
    from checkpoint_builders import single_file_model

    model = single_file_model(tmp_path / "m")
    weights = model / "model.safetensors"
    before = digest(weights)
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}", "--runs", "5",
                           "--out", str(weights))
    assert code == 2
    one_line_error(err, "an input of this command")
    assert digest(weights) == before


def test_four_parallel_default_named_runs_lose_nothing(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC)
    command = [sys.executable, "-m", "anebench", "run", *SMALL]
    procs = [
        subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        for _ in range(4)
    ]
    errors = [p.communicate(timeout=300)[1].decode() for p in procs]
    assert all(p.returncode == 0 for p in procs), errors
    files = sorted(tmp_path.glob("anebench-run-*.json"))
    assert len(files) == 4, [f.name for f in files]
    ids = {json.loads(f.read_text())["results"][0]["id"] for f in files}
    assert len(ids) == 4
    assert all(any(f.name in e for e in errors) for f in files)  # each run said where its file is


def test_a_failed_save_keeps_the_measurement_in_the_user_data_dir(tmp_path, capsys, monkeypatch):
    import errno

    from anebench.cli import saving

    def full_disk(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(saving, "save_records", full_disk)
    code, _, err = run_small(capsys, "--out", str(tmp_path / "r.json"))
    assert code == 2
    line = one_line_error(err, "No space left on device", "kept in")
    kept = Path(line.split("kept in ", 1)[1].strip())
    assert kept.parent == tmp_path / "xdg-data" / "anebench" / "unsaved"
    assert json.loads(kept.read_text())["results"][0]["method"]["runs"] == 5


def test_out_a_read_only_system_file_fails_before_measuring(tmp_path, capsys):
    code, _, err = run_small(capsys, "--out", "/proc/version")
    assert code == 2
    one_line_error(err, "/proc/version")


@pytest.mark.parametrize("argv,phrase", [
    (("run", *SMALL[:4], "--runs", "1000001"), "1000001"),
    (("run", *SMALL[:4], "--time-budget", "nan"), "not a finite number"),
    (("run", *SMALL[:4], "--time-budget", "inf"), "not a finite number"),
    (("run", *SMALL[:4], "--time-budget", "-1"), "must be >"),
    (("run", *SMALL[:4], "--warmup", "99999999999"), "99999999999"),
    (("sweep", "--engine", "numpy", "--max-mb", "inf"), "not a finite number"),
    (("sweep", "--engine", "numpy", "--min-mb", "nan"), "not a finite number"),
    (("sweep", "--engine", "numpy", "--cache-mb", "1e400"), "not a finite number"),
    (("run", "--engine", "numpy", "-w", "lm_head:" + "9" * 400 + "x4096"), "at most"),
    (("run", "--engine", "numpy", "-w", "lm_head:4096x" + "1" * 400 + ":fp32"), "at most"),
    (("build", "lm_head:" + "9" * 400 + "x4096"), "at most"),
    (("run", "--engine", "numpy", "-w", "lm_head:16777217x16777217:fp32"), "at most"),
    (("roofline", "--engine", "numpy", "--max-batch", "99999999999"), "99999999999"),
    (("concurrent", "--engine", "numpy", "--copies", "100000"), "100000"),
    (("compute", "--engine", "numpy", "--time-budget", "inf"), "not a finite number"),
    (("latency", "--engine", "numpy", "--time-budget", "nan"), "not a finite number"),
])
def test_limits_and_non_finite_numbers_are_refused_before_measuring(argv, phrase, capsys):
    started = time.perf_counter()
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and time.perf_counter() - started < REFUSAL_S
    one_line_error(err, phrase)


def test_ctrl_c_in_a_multi_step_run_keeps_the_finished_steps(tmp_path, capsys, monkeypatch):
    from fakepipeline import real_measure as real
    from fakepipeline import state_executor

    calls = []

    def second_is_interrupted(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            os.kill(os.getpid(), signal.SIGTERM)  # SIGTERM unwinds like Ctrl-C (cli.main's handler)
            time.sleep(1)  # the handler runs before this returns
        return real(*args, **kwargs)

    state_executor(monkeypatch, measure=second_is_interrupted)
    out = tmp_path / "partial.json"
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", "lm_head:256x4096:fp32",
                           "-w", "lm_head:512x4096:fp32", "--runs", "5", "--warmup", "0", "--out", str(out))
    assert code == 130
    assert "interrupted: the 1 finished step(s) of 2 are saved to" in err
    assert [r["workload"]["name"] for r in json.loads(out.read_text())["results"]] == [
        "lm_head:256x4096:fp32"
    ]
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL or callable(signal.getsignal(signal.SIGTERM))


def test_an_interrupted_run_restores_the_cursor(tmp_path, capsys, monkeypatch):
    import io

    from rich.console import Console

    from anebench.cli import console
    from fakepipeline import state_executor

    terminal = io.StringIO()
    monkeypatch.setattr(console, "err_console", Console(file=terminal, force_terminal=True, emoji=False))

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    state_executor(monkeypatch, measure=interrupted)
    code, _, err = run_small(capsys)
    assert code == 130 and "interrupted: nothing was saved" in err
    shown = terminal.getvalue()
    assert "\x1b[?25l" in shown and shown.rindex("\x1b[?25h") > shown.rindex("\x1b[?25l")


def test_sigterm_during_build_removes_the_staging_folder(tmp_path, capsys, monkeypatch):
    pytest.importorskip("coremltools")
    from anebench.artifacts import cache

    def killed_midway(spec, package, progress=None):
        package.mkdir(parents=True)
        (package / "weight.bin").write_bytes(b"\0" * 4096)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)

    monkeypatch.setattr(cache, "build_bundle", killed_midway)
    code, _, err = run_cli(capsys, "build", "lm_head:64x1024", "--cache-dir", str(tmp_path / "c"))
    assert code == 130 and "interrupted" in err
    assert list((tmp_path / "c").iterdir()) == []  # no staging folder left behind


def test_build_of_a_head_larger_than_memory_is_refused_fast_with_small_rss(capsys):
    import resource

    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for argv in (("build", "lm_head:65536x262144:fp32"), ("build", "llama_lm_head", "--repeat", "64")):
        started = time.perf_counter()
        code, _, err = run_cli(capsys, *argv)
        assert code == 2 and time.perf_counter() - started < REFUSAL_S
        one_line_error(err, "GB of memory", "is free")
    assert (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) * 1024 < 100e6


def test_build_out_a_device_or_file_is_refused(tmp_path, capsys):
    node = tmp_path / "dev"
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    file = tmp_path / "file"
    file.write_text("x")
    for out, phrase in ((node, "not a directory"), (file, "is a file")):
        code, _, err = run_cli(capsys, "build", "lm_head:64x1024", "--out", str(out))
        assert code == 2
        one_line_error(err, phrase)
    assert stat.S_ISCHR(os.stat(node).st_mode) and file.read_text() == "x"


def test_out_dev_stdout_on_a_pipe_is_refused_not_replaced(tmp_path):
    env = dict(os.environ, PYTHONPATH=SRC)
    stdout = tmp_path / "stdout"
    stdout.symlink_to("/proc/self/fd/1")  # what /dev/stdout is; a link of our own, never /dev's
    done = subprocess.run(
        [sys.executable, "-m", "anebench", "run", *SMALL, "--out", str(stdout)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    one_line_error(done.stderr, "stdout", "FIFO")
    assert stdout.is_symlink()
