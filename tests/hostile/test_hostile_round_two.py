"""Round two of the hostile review (shared/reviews/hostile.md): one test per failure class. Each asserts
the exit code, one line, no traceback and that nothing measured or owned by the user is lost."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from anebench.model import RecordWarning
from checkpoint_builders import sharded_model, weights
from clitools import run_cli
from conftest import digest, one_line_error

SMALL = ("--engine", "numpy", "--workload", "lm_head:256x4096:fp32", "--runs", "5", "--warmup", "0")
SRC = os.environ.get("ANEBENCH_TEST_SRC") or str(Path(__file__).resolve().parents[2] / "src")


def cli(args: list[str], cwd: Path, env: dict | None = None, stdin=None, **kw) -> subprocess.CompletedProcess:
    """The real entry point in a child process (the scenarios need a real stdout, cwd or encoding)."""
    full = {**os.environ, "PYTHONPATH": SRC, **(env or {})}
    return subprocess.run([sys.executable, "-m", "anebench", *args], cwd=cwd, env=full, capture_output=True,
                          text=True, timeout=180, stdin=stdin, **kw)


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


# -- class: the workload's own files, the store and SQLite's side files are inputs of the output policy --

@pytest.mark.parametrize("victim", ["config.json", "model.safetensors.index.json", "other-shard"])
def test_a_checkpoints_own_files_are_refused_as_out(victim, tmp_path, capsys):
    model = sharded_model(
        tmp_path / "ckpt",
        [{"lm_head.weight": weights(256, 64)}, {"model.embed_tokens.weight": weights(256, 64)}],
    )
    shards = sorted(model.glob("*.safetensors"))
    target = shards[1] if victim == "other-shard" else model / victim
    before = {p.name: digest(p) for p in model.iterdir()}
    code, _, err = run_cli(capsys, "run", "--engine", "numpy", "-w", f"hf:{model}:lm_head.weight",
                           "--runs", "5", "--warmup", "0", "--out", str(target))
    assert code == 2
    one_line_error(err, "is an input of this command")
    assert {p.name: digest(p) for p in model.iterdir()} == before


def test_the_default_store_a_stores_side_file_and_any_sqlite_file_are_refused(tmp_path, capsys):
    from anebench.results.store import default_db_path

    code, _, err = run_cli(capsys, "ingest", "--published")
    assert code == 0, err
    store = default_db_path()
    before = digest(store)
    for target, phrase in (
        (store, "results store"),  # without --store: the default store is still the store
        (Path(f"{store}-journal"), "journal file"),
        (Path(f"{store}-wal"), "wal file"),
    ):
        code, _, err = run_cli(capsys, "run", *SMALL, "--out", str(target))
        assert code == 2, target
        one_line_error(err, phrase)
    other = tmp_path / "elsewhere.db"
    sqlite3.connect(other).execute("create table t (x)").connection.commit()
    code, _, err = run_cli(capsys, "run", *SMALL, "--out", str(other), "--force")
    assert code == 2
    one_line_error(err, "is an SQLite database")
    code, _, err = run_cli(capsys, "run", *SMALL, "--out", f"{other}-journal")
    assert code == 2
    one_line_error(err, "side file of the SQLite database")
    assert digest(store) == before and sqlite3.connect(other).execute("select * from t").fetchall() == []


# -- class: the error boundary (full disk, read-only folder, deleted cwd, encoding, closed pipe, bugs) --

def test_a_closed_stdout_keeps_the_measurement_and_says_so(tmp_path):
    out = tmp_path / "bp.json"
    proc = subprocess.Popen([sys.executable, "-m", "anebench", "run", *SMALL, "--out", str(out)],
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    proc.stdout.close()  # `| head -c 0`
    err = proc.stderr.read()
    code = proc.wait(timeout=180)
    assert code == 1
    no_traceback(err)
    assert json.loads(out.read_text())["results"][0]["engine"]["name"] == "numpy"  # saved before printing
    assert err.strip().splitlines()[-1].startswith("error:") and "closed" in err


def test_an_ascii_only_output_gets_ascii_fallbacks(tmp_path):
    result = cli(["run", *SMALL, "--no-save"], tmp_path, env={"PYTHONIOENCODING": "ascii", "LANG": "C"})
    assert result.returncode == 0, result.stderr
    no_traceback(result.stderr)
    assert "median us" in result.stdout or "median ms" in result.stdout
    assert (result.stdout + result.stderr).isascii()  # the GB/s range is [low-high]; units use "us"
    report = cli(["report", "--format", "md", "--db", str(tmp_path / "s.db")], tmp_path,
                 env={"PYTHONIOENCODING": "ascii"})
    no_traceback(report.stderr)


def test_a_deleted_working_directory_is_refused_before_anything_runs(tmp_path):
    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, sys, runpy; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "sys.argv = ['anebench', *sys.argv[2:]]; runpy.run_module('anebench', run_name='__main__')"
    )
    for args in (["run", *SMALL], ["engines"], ["report"]):
        gone.mkdir(exist_ok=True)
        result = subprocess.run([sys.executable, "-c", script, str(gone), *args], capture_output=True,
                                text=True, timeout=180, env={**os.environ, "PYTHONPATH": SRC})
        no_traceback(result.stderr)
        assert result.returncode == 2, result.stderr
        one_line_error(result.stderr, "current directory no longer exists")


def test_a_working_directory_deleted_during_the_run_keeps_the_records(tmp_path, capsys, monkeypatch):
    def deleted() -> Path:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(Path, "cwd", staticmethod(deleted))
    code, _, err = run_cli(capsys, "run", *SMALL)
    assert code == 2
    line = one_line_error(err, "no longer exists", "kept in")
    kept = Path(line.split("kept in ")[1].split()[0].rstrip(";"))
    assert json.loads(kept.read_text())["results"]


def test_a_read_only_output_folder_fails_in_one_line_for_every_writer(tmp_path):
    folder = tmp_path / "ro"
    folder.mkdir()
    db = tmp_path / "s.db"
    assert cli(["ingest", "--published", "--db", str(db)], tmp_path).returncode == 0
    drop = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"] if os.geteuid() == 0 else []
    if drop and subprocess.run(["setpriv", "--help"], capture_output=True).returncode != 0:
        pytest.skip(reason="needs setpriv to drop root's capabilities")
    folder.chmod(0o555)
    try:
        commands = (
            ["report", "--db", str(db), "--format", "md", "--out", str(folder / "r.md")],
            ["report", "--db", str(db), "--format", "html", "--out", str(folder / "r.html")],
        )
        for args in commands:
            result = subprocess.run([*drop, sys.executable, "-m", "anebench", *args], capture_output=True,
                                    text=True, timeout=180, cwd=tmp_path,
                                    env={**os.environ, "PYTHONPATH": SRC})
            assert result.returncode == 2, (args, result.stderr)
            no_traceback(result.stderr)
            one_line_error(result.stderr, str(folder))
    finally:
        folder.chmod(0o755)
    assert not list(folder.iterdir())


def test_an_unexpected_error_is_one_line_and_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    from fakepipeline import state_executor

    def broken(*args, **kwargs):
        raise RuntimeError("engine exploded\nsecond line")

    state_executor(monkeypatch, measure=broken)
    code, _, err = run_cli(capsys, "run", *SMALL, "--no-save")
    assert code == 1
    line = one_line_error(err, "unexpected RuntimeError", "engine exploded", "--debug")
    assert "second line" in line
    code, _, err = run_cli(capsys, "--debug", "run", *SMALL, "--no-save")
    assert code == 1 and "Traceback" in err


def test_memory_and_disk_errors_from_the_library_are_one_line(tmp_path, capsys, monkeypatch):
    import errno

    from fakepipeline import state_executor

    for exc, phrase in (
        (MemoryError(), "out of memory"),
        (OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "x")), "the disk is full"),
        (PermissionError(errno.EACCES, "Permission denied", str(tmp_path / "y")), str(tmp_path / "y")),
    ):
        def raising(*args, _exc=exc, **kwargs):
            raise _exc

        state_executor(monkeypatch, measure=raising)
        code, _, err = run_cli(capsys, "run", *SMALL, "--no-save")
        assert code == 2, err
        one_line_error(err, phrase)


# -- class: no orphans: SIGKILL of the parent leaves no process of the run --

def _group(pgid: int) -> list[int]:
    import psutil

    alive = []
    for proc in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(proc.pid) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc.pid)
        except (ProcessLookupError, psutil.Error):
            continue
    return alive


def _children(pid: int) -> int:
    """The run's child processes other than multiprocessing's resource tracker; a child that exits
    while it is listed (a short-lived helper) is not counted rather than raising."""
    import psutil

    count = 0
    for child in psutil.Process(pid).children(recursive=True):
        try:
            count += "resource_tracker" not in " ".join(child.cmdline())
        except psutil.Error:  # gone (or a zombie) between the listing and the read
            continue
    return count


@pytest.mark.parametrize("args", [
    ["run", "--keep-awake"],
    ["concurrent", "--processes", "--copies", "2"],
    ["run", "--fresh-processes", "--repetitions", "3"],
], ids=["keep-awake", "concurrent-processes", "fresh-processes"])
def test_sigkill_of_the_parent_leaves_no_process_of_the_run(args, tmp_path):
    import signal
    import time


    command = [sys.executable, "-m", "anebench", *args, "-e", "numpy", "-w", "lm_head:256x4096:fp32",
               "--runs", "1000000", "--time-budget", "60", "--warmup", "1", "--no-save"]
    proc = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:  # until the children (spinner, copies, worker) run
            if _children(proc.pid) >= 1:
                break
            time.sleep(0.2)
        else:
            pytest.fail("the run started no child process")
        time.sleep(2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
        time.sleep(5)
        assert _group(proc.pid) == []
    finally:
        for pid in _group(proc.pid):
            os.kill(pid, signal.SIGKILL)


def test_a_sigkilled_builds_staging_folder_is_removed_by_the_next_build(tmp_path):
    import signal
    import time

    pytest.importorskip("coremltools", reason="builds need coremltools")
    from anebench.artifacts import BuildSpec, build_or_reuse
    from anebench.workloads import Workload

    cache = tmp_path / "cache"
    cache.mkdir()
    spec = BuildSpec(Workload("tiny_head", 64, 1024, "fp16", seed=7), "fp16", max_split_rows=128)
    # A builder that holds its staging folder's lock, as a real build does, until it is SIGKILLed.
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys, time, tempfile; from pathlib import Path; from anebench.artifacts import cache; "
         "s = Path(tempfile.mkdtemp(prefix='.0123456789abcdef-', dir=sys.argv[1])); cache.lock_staging(s); "
         "(s / 'part.bin').write_bytes(b'x' * 1000); print(s, flush=True); time.sleep(600)", str(cache)],
        env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE, text=True)
    try:
        live = Path(holder.stdout.readline().strip())
        old = cache / ".fedcba9876543210-oldstyle"  # an older version's folder: no lock file, days old
        old.mkdir()
        os.utime(old, (time.time() - 3 * 86400, time.time() - 3 * 86400))
        build_or_reuse(spec, cache)
        assert live.is_dir() and not old.exists()  # a build in progress is left alone
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        other = BuildSpec(Workload("tiny_head", 64, 1024, "fp16", seed=8), "fp16", max_split_rows=128)
        build_or_reuse(other, cache)
        assert not live.exists()
        assert sorted(p.name for p in cache.iterdir()) == sorted([spec.key, other.key])
    finally:
        holder.kill()


# -- class: a record cannot lift its own bound or borrow another workload's identity --

def _m1_at(gbps: float, **changes) -> dict:
    from corpus import consistent

    raw = consistent(gbps, chip="Apple M1")
    for dotted, value in changes.items():
        target = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            target = target[key]
        target[leaf] = value
    return raw


@pytest.mark.parametrize("claim", [
    {"host.llc_bytes": 10 * 10**12},  # "my cache is 10 TB"
    {"warnings": ["cache-resident: weights fit the cache, trust me"]},
    {"host.chip": "Apple M1\u200b"},  # a zero-width space: "not in the catalog"
    {"host.chip": "Apple\u2060 M1", "host.llc_bytes": 10 * 10**12,
     "warnings": ["cache-resident: yes"]},
], ids=["llc", "warning", "zwsp", "all"])
def test_an_m1_at_14970_gbps_is_refused_whatever_it_states(claim, tmp_path, store_db, capsys):
    path = tmp_path / "fast.json"
    path.write_text(json.dumps(_m1_at(14_970, **claim)))
    before = digest(store_db)
    code, _, err = run_cli(capsys, "ingest", str(path), "--db", str(store_db))
    assert code == 2
    one_line_error(err, "nothing from this file was stored")
    assert "above what the device can read" in err or "invisible character" in err
    assert digest(store_db) == before


def test_a_borrowed_fingerprint_is_refused_and_never_pairs(tmp_path, store_db, capsys):
    from anebench.workloads import resolve_workload
    from test_store import make_record

    small = make_record(gbps=50, workload="lm_head:1024x4096:fp32").model_dump(mode="json", by_alias=True)
    small["id"] = None
    small["workload"]["fingerprint"] = resolve_workload("llama_lm_head").fingerprint
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(small))
    honest = tmp_path / "honest.json"
    honest.write_text(json.dumps(_m1_at(60)))
    before = digest(store_db)
    code, _, err = run_cli(capsys, "ingest", str(forged), "--db", str(store_db))
    assert code == 2
    one_line_error(err, "nothing from this file was stored")
    assert "workload.fingerprint" in err and "belongs to another workload" in err
    assert digest(store_db) == before
    code, out, err = run_cli(capsys, "compare", str(forged), str(honest))
    assert code == 2, out
    one_line_error(err, "workload.fingerprint")
    # The honest record still loads: seeds of concurrent copies (seed + copy) are recognised too.
    copy = make_record(gbps=50).model_dump(mode="json", by_alias=True)
    copy["id"] = None
    from dataclasses import replace

    copy["workload"]["fingerprint"] = replace(resolve_workload("llama_lm_head"), seed=3).fingerprint
    ok = tmp_path / "copy.json"
    ok.write_text(json.dumps(copy))
    code, _, err = run_cli(capsys, "ingest", str(ok), "--db", str(store_db))
    assert code == 0, err


# -- class: injection into every output (invisible characters, separators, OSC, mentions, raw HTML) --

INVISIBLE = ["\u200b", "\u200d", "\u2060", "\ufeff", "\U000e0069", "\u2028", "\u2029", "\u202e", "\x1b"]
HOSTILE_TEXT = ("lm\u200bhead @everyone <script>alert(1)</script> [click](javascript:alert(1)) "
                "<img src=x onerror=alert(2)> \U000e0069\U000e0067\U000e006e\u2028\u2029"
                "\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\ \ufeff\u2060")


def _hostile_injection_record():
    from test_store import make_record

    record = make_record(gbps=100, chip="Apple M4 Pro")
    workload = record.workload.model_copy(update={"name": HOSTILE_TEXT[:190], "note": HOSTILE_TEXT})
    host = record.host.model_copy(update={"cpu_model": HOSTILE_TEXT[:190]})
    return record.model_copy(update={"workload": workload, "host": host, "id": None,
                                     "warnings": [RecordWarning.of(HOSTILE_TEXT)],
                                     "provenance_note": HOSTILE_TEXT}).with_id()


def test_hostile_names_reach_no_output_raw(tmp_path, capsys):
    from anebench.results.files import save_records

    db = tmp_path / "s.sqlite"
    evil = tmp_path / "evil.json"
    save_records(evil, [_hostile_injection_record()])
    named = tmp_path / "[click](javascript:alert(1)) <img src=x onerror=alert(2)> @here.json"
    save_records(named, [_hostile_injection_record()])
    outputs: dict[str, str] = {}
    code, out, err = run_cli(capsys, "ingest", str(evil), "--db", str(db))
    assert code == 0, err
    for fmt in ("md", "html", "csv"):
        code, out, err = run_cli(capsys, "report", "--db", str(db), "--format", fmt)
        assert code == 0, err
        outputs[f"report {fmt}"], outputs[f"stderr of report {fmt}"] = out, err
    code, out, err = run_cli(capsys, "report", "--db", str(db), "--format", "html", "--out",
                             str(tmp_path / "r.html"))
    assert code == 0, err
    outputs["report html --out"] = (tmp_path / "r.html").read_text() + out + err
    outputs["report table"] = "".join(run_cli(capsys, "report", "--db", str(db))[1:])
    for fmt in ("table", "md", "csv"):
        code, out, err = run_cli(capsys, "compare", str(evil), str(named), "--format", fmt)
        assert code == 0, err
        outputs[f"compare {fmt}"], outputs[f"stderr of compare {fmt}"] = out, err
    code, out, err = run_cli(capsys, "submit", str(evil), "--out-dir", str(tmp_path))
    assert code == 0, err
    outputs["issue body md"] = next(tmp_path.glob("*.issue.md")).read_text()
    outputs["terminal of submit"] = out + err
    import re

    for where, text in outputs.items():
        for char in INVISIBLE:
            assert char not in text, (where, hex(ord(char)))
        if where.startswith("report html"):  # HTML: every bracket is an entity
            assert "<script>alert" not in text and "<img src=x" not in text, where
        markdown = where.endswith(" md") and not where.startswith(("stderr", "terminal"))
        if markdown:  # Markdown: brackets escaped, so text; mentions defused
            assert not re.search(r"(?<!\\)<(script|img)|(?<!\\)\]\(javascript", text), where
            assert not re.search(r"(?<![\w@])@(everyone|here)", text), where


# -- class: --drop-host-ids scrubs device, user and server identifiers from every string field --

def test_drop_host_ids_scrubs_device_user_and_server_identifiers_everywhere(tmp_path, capsys):
    import getpass
    import socket

    from anebench.model.gpu import GpuIdentity, GpuReport
    from anebench.results.files import save_records
    from test_store import make_record

    uuid = "GPU-8f3c2a1e-5b7d-4c9e-a1f2-3d4e5f6a7b8c"
    bus = "00000000:3B:00.0"
    host, user = socket.gethostname(), getpass.getuser()
    record = make_record(gbps=100, chip="Apple M4 Pro")
    engine = record.engine.model_copy(update={"details": {"gpu_uuid": uuid, "pci_bus_id": bus,
                                                          "driver": "550.54"}})
    gpu = GpuReport(headline_reason="per call", identity=GpuIdentity(uuid=uuid, pci_bus_id=bus))
    record = record.model_copy(update={
        "engine": engine, "gpu": gpu, "id": None,
        "warnings": [RecordWarning.of(
            f"built on {host.upper()} by {user.upper()} from \\\\\\\\nas01\\\\models and "
            "//fileserver.corp/share/llama, NFS nas02.example.com:/export/ckpt, device " + uuid)],
        "provenance_note": f"copied from smb://filer7/lab/{user} ({bus})",
    }).with_id()
    result = tmp_path / "cuda.json"
    save_records(result, [record])
    out = tmp_path / "sub"
    out.mkdir()
    code, _, err = run_cli(capsys, "submit", str(result), "--out-dir", str(out), "--drop-host-ids")
    assert code == 0, err
    text = "".join(p.read_text() for p in out.iterdir())
    for secret in (uuid, uuid[4:], bus, "3B:00", "nas01", "fileserver", "nas02", "filer7", host.upper()):
        assert secret not in text, secret
    if len(user) >= 2 and user not in ("root", "user"):
        assert user.upper() not in text
    assert "550.54" in text and "Apple M4 Pro" in text  # what a comparison needs stays


# -- class: the store after a SIGKILLed writer, and a /1 store's own records --

def test_a_hot_journal_is_rolled_back_not_called_read_only(tmp_path, store_db, capsys):
    import signal

    writer = subprocess.Popen(
        [sys.executable, "-c",
         "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1], isolation_level=None); "
         "c.execute('PRAGMA cache_size=1'); c.execute('BEGIN IMMEDIATE'); "
         "[c.execute('INSERT INTO ingests (source_label, at, added, duplicates) VALUES (?, ?, 0, 0)', "
         "('x' * 2000, 'now')) for _ in range(300)]; print('ready', flush=True); time.sleep(600)",
         str(store_db)], stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "ready"
    writer.send_signal(signal.SIGKILL)
    writer.wait(10)
    journal = Path(f"{store_db}-journal")
    assert journal.exists() and journal.stat().st_size > 0  # hot: a killed write transaction
    code, out, err = run_cli(capsys, "report", "--db", str(store_db), "--format", "csv")
    assert code == 0, err
    assert "read-only" not in err and "M4 Pro" in out
    assert sqlite3.connect(store_db).execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_reingesting_a_v1_file_into_the_v1_store_that_holds_it_is_a_duplicate(tmp_path, capsys):
    import shutil

    data = Path(__file__).resolve().parents[1] / "data" / "v1"
    db = tmp_path / "v1.db"
    shutil.copy(data / "store.db", db)
    count = sqlite3.connect(db).execute("select count(*) from records").fetchone()[0]
    code, out, err = run_cli(capsys, "ingest", str(data / "run.json"), "--db", str(db))
    assert code == 0, err
    assert sqlite3.connect(db).execute("select count(*) from records").fetchone()[0] == count


def test_latency_skips_a_store_row_it_cannot_load_by_name(tmp_path, store_db, capsys):
    connection = sqlite3.connect(store_db)
    query = "select id, body from records where provenance='measured'"
    record_id, body = connection.execute(query).fetchone()
    poisoned = json.loads(body)
    poisoned["concurrency"] = {"mode": 5}
    connection.execute("update records set body = ? where id = ?", (json.dumps(poisoned), record_id))
    connection.commit()
    code, _, err = run_cli(capsys, "latency", "-e", "numpy", "--runs", "3", "--warmup", "0",
                           "-w", "lm_head:256x1024:fp32", "--time-budget", "0.5", "--db", str(store_db),
                           "--no-save")
    no_traceback(err)
    assert code == 0, err
    assert f"record {record_id[:16]} skipped" in err


# -- class: crafted files that raised inside the library (overflow, unhashable, huge integers) --

def _crafted_files(tmp_path: Path) -> dict[str, Path]:
    from corpus import record_json

    files = {}
    overflow = record_json()
    overflow["samples_s"] = [1e-60, 3000.0]
    overflow["summary"] = {"n": 2, "median": 1500.0}
    overflow["method"]["runs"] = 2
    overflow["gbps"] = None
    overflow["repetitions"] = {"runs": [{"runs": 1, "warmup_runs": 0}, {"runs": 1, "warmup_runs": 0}]}
    files["overflow"] = tmp_path / "n14.json"
    files["overflow"].write_text(json.dumps(overflow))
    v1 = json.loads((Path(__file__).resolve().parents[1] / "data" / "v1" / "run.json").read_text())
    first = v1["results"][0] if "results" in v1 else v1
    first["suite"] = ["run"]
    first.pop("id", None)
    files["v1 suite list"] = tmp_path / "v02.json"
    files["v1 suite list"].write_text(json.dumps(v1))
    stated = record_json(provenance="imported", provenance_note="from a colleague's notes")
    stated["samples_s"] = [1.0] * len(stated["samples_s"])  # samples of 1 s under a 7.4 ms median
    files["stated contradicts its samples"] = tmp_path / "s12.json"
    files["stated contradicts its samples"].write_text(json.dumps(stated))
    from corpus import ANEMLL_DOC

    files["anemll 5000 digits"] = tmp_path / "a01.md"  # a pasted issue: the block is found in the text
    files["anemll 5000 digits"].write_text(
        "My results:\n```json\n" + json.dumps(ANEMLL_DOC).replace('"cores": 10', '"cores": ' + "9" * 5000)
        + "\n```\n")
    return files


def test_crafted_files_are_refused_in_one_line_by_every_reader(tmp_path, store_db, capsys):
    from anebench.results.files import save_records
    from test_store import make_record

    good = tmp_path / "good.json"
    save_records(good, [make_record(gbps=100)])
    before = digest(store_db)
    for name, path in _crafted_files(tmp_path).items():
        if name == "overflow":  # readable: its interval is capped (test below), not refused
            continue
        commands = [["ingest", str(path), "--db", str(store_db)], ["compare", str(good), str(path)]]
        if "anemll" in name:
            commands = [["ingest", "--from", "anemll-bench", str(path), "--db", str(store_db)]]
        else:
            commands.append(["submit", str(path), "--out-dir", str(tmp_path)])
        for args in commands:
            code, _, err = run_cli(capsys, *args)
            assert code == 2, (name, args, err)
            one_line_error(err)
    assert digest(store_db) == before


def test_an_interval_too_wide_for_exp_is_capped_and_marked_not_a_traceback(tmp_path, store_db, capsys):
    from anebench.model import ResultRecord

    path = _crafted_files(tmp_path)["overflow"]
    code, _, err = run_cli(capsys, "ingest", str(path), "--db", str(store_db))
    assert code == 0, err
    assert "Traceback" not in err
    code, out, err = run_cli(capsys, "submit", str(path), "--out-dir", str(tmp_path))
    assert code == 0 and "Traceback" not in err, err
    record = ResultRecord.model_validate(json.loads(path.read_text()))
    low, high = record.between_run()
    assert 0 < low < high < float("inf")  # capped at a factor of a million either side


# -- class: finished steps survive every way of stopping a multi-step run --

@pytest.mark.parametrize("how", ["SIGHUP", "SIGINT twice", "SIGTERM", "SIGKILL"])
def test_finished_steps_survive_every_way_of_stopping(how, tmp_path):
    import signal
    import time

    out = tmp_path / "steps.json"
    # steps of a few seconds each, so an idle machine cannot finish the run before the signal arrives
    command = [sys.executable, "-m", "anebench", "run", "-e", "numpy", "-w", "lm_head:1024x8192:fp32",
               "-w", "lm_head:1025x8192:fp32", "-w", "lm_head:1026x8192:fp32", "--runs", "2000",
               "--time-budget", "60", "--warmup", "1", "--out", str(out)]
    # a job started in the background by a non-interactive shell (a CI runner's) inherits SIGINT ignored,
    # and Python then installs no Ctrl-C handler: the child gets the default disposition a terminal gives
    proc = subprocess.Popen(command, cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)  # the first step's checkpoint
    time.sleep(0.3)
    if how == "SIGINT twice":
        proc.send_signal(signal.SIGINT)
        time.sleep(0.005)
        proc.send_signal(signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=120)
    no_traceback(err)
    assert proc.returncode in ((-9,) if how == "SIGKILL" else (130,)), err
    saved = json.loads(out.read_text())["results"]
    assert 1 <= len(saved) < 3
    if how != "SIGKILL":
        assert f"saved to {out}" in err or f"are saved to {out}" in err, err


# -- class: races and partial commands (a file swapped for a FIFO, one bad id among good ones) --

def test_a_file_swapped_for_a_fifo_after_the_check_does_not_hang(tmp_path):
    fifo = tmp_path / "swapped.json"
    os.mkfifo(fifo)
    regular = tmp_path / "regular.json"
    regular.write_text("{}")
    # The check sees a regular file; by the open, the name is a FIFO (with no writer, open() would block).
    script = (
        "import os, sys; from anebench.util import inputs; from anebench.errors import UserError\n"
        "real = os.stat\n"
        "inputs.os.stat = lambda p, *a, **k: (real(sys.argv[2]) if str(p) == sys.argv[1]\n"
        "                                     else real(p, *a, **k))\n"
        "try:\n    inputs.read_input_bytes(sys.argv[1], 'result file')\n"
        "except UserError as exc:\n    print(exc)\n"
    )
    result = subprocess.run([sys.executable, "-c", script, str(fifo), str(regular)], capture_output=True,
                            text=True, timeout=30, env={**os.environ, "PYTHONPATH": SRC})
    assert "is not a regular file" in result.stdout, result.stderr


def test_store_remove_with_one_missing_id_removes_nothing(tmp_path, store_db, capsys):
    connection = sqlite3.connect(store_db)
    ids = [row[0] for row in connection.execute("select id from records limit 2")]
    connection.close()
    before = digest(store_db)
    code, _, err = run_cli(capsys, "store", "remove", ids[0][:12], "00000000deadbeef", "--db", str(store_db))
    assert code == 2
    one_line_error(err, "00000000deadbeef", "nothing was removed")
    assert digest(store_db) == before
    code, _, err = run_cli(capsys, "store", "remove", ids[0][:12], ids[1][:12], "--db", str(store_db))
    assert code == 0, err
    remaining = {row[0] for row in sqlite3.connect(store_db).execute("select id from records")}
    assert not remaining & set(ids)


def test_a_sigtermed_sweep_keeps_its_finished_points(tmp_path):
    import signal
    import time

    out = tmp_path / "sweep.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "anebench", "sweep", "-e", "numpy", "--points", "5", "--min-mb", "1",
         "--max-mb", "8", "--cache-mb", "0", "--runs", "2000", "--out", str(out)],
        cwd=tmp_path, env={**os.environ, "PYTHONPATH": SRC}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True)
    deadline = time.monotonic() + 90
    while not out.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    no_traceback(err)
    assert proc.returncode == 130, err
    assert 1 <= len(json.loads(out.read_text())["results"]) < 5
    assert f"saved to {out}" in err
