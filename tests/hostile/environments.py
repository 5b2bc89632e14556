"""Hostile environments for the real CLI: LANG=C with an ASCII-only output, a full disk (a 1 MB tmpfs
filled to the last byte), a deleted working directory and a read-only output folder. Each command runs
in a child process; :func:`verdict` classifies what came back as the hostile review did.

Used by test_hostile_environments.py and by ``python tests/hostile/attack.py`` (the counts)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SRC = os.environ.get("ANEBENCH_TEST_SRC") or str(Path(__file__).resolve().parents[2] / "src")
SMALL = ["-e", "numpy", "-w", "lm_head:256x4096:fp32", "--runs", "5", "--warmup", "0"]
MEASURING = ("run", "sweep", "latency", "concurrent", "roofline", "compute")


@dataclass
class Outcome:
    env: str
    name: str
    code: int | None
    stderr: str
    stdout: str

    @property
    def verdict(self) -> str:
        return verdict(self)


def verdict(outcome: Outcome) -> str:
    """traceback / clean refusal / handled / wrong / loss, as the review counted them."""
    err = outcome.stderr
    if outcome.code is None or "Traceback" in err or "Exception ignored" in err:
        return "traceback" if outcome.code is not None else "hang"
    if outcome.code not in (0, 1, 2, 130):
        return "traceback"
    if outcome.code == 0:
        return "handled"
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith(" ")]
    errors = [line for line in lines if line.startswith(("error:", "measurement refused:"))]
    if len(errors) != 1:
        return "wrong"
    if outcome.name.split()[0] in MEASURING and "could not save" in errors[0]:
        if "kept in" not in errors[0] and "lost" not in errors[0]:
            return "loss"
    return "clean refusal"


def fixtures(base: Path) -> dict[str, Path]:
    """A results file and a store (on a normal disk) the commands read."""
    good = base / "good.json"
    db = base / "store.sqlite"
    env = {**os.environ, "PYTHONPATH": SRC, "XDG_DATA_HOME": str(base / "data")}
    cli = [sys.executable, "-m", "anebench"]
    subprocess.run([*cli, "-q", "run", *SMALL, "--out", str(good)], env=env, check=True, capture_output=True)
    subprocess.run([*cli, "ingest", "--published", str(good), "--db", str(db)], env=env, check=True,
                   capture_output=True)
    return {"good": good, "db": db}


def commands(inputs: dict[str, Path], out: Path) -> dict[str, list[str]]:
    """Every command, small and fast, writing under ``out`` (or its default place, the cwd)."""
    good, db = str(inputs["good"]), str(inputs["db"])
    store_copy = str(out / "copy.sqlite")
    record_id = json.loads(Path(good).read_text())["results"][0]["id"]
    return {
        "engines": ["engines"],
        "info": ["info"],
        "run (default name)": ["run", *SMALL],
        "run --out": ["run", *SMALL, "--out", str(out / "r.json")],
        "run --format md": ["run", *SMALL, "--format", "md", "--no-save"],
        "run --store": ["run", *SMALL, "--store", "--db", str(out / "new.sqlite"),
                        "--out", str(out / "s.json")],
        "sweep": ["sweep", "-e", "numpy", "--points", "4", "--min-mb", "1", "--max-mb", "4",
                  "--cache-mb", "0", "--runs", "10", "--warmup", "0"],
        "latency": ["latency", "-e", "numpy", "-w", "lm_head:256x1024:fp32", "--runs", "5", "--warmup", "0",
                    "--no-sweep"],
        "concurrent": ["concurrent", *SMALL, "--copies", "2"],
        "ingest": ["ingest", good, "--db", store_copy],
        "report md --out": ["report", "--db", db, "--format", "md", "--out", str(out / "r.md")],
        "report html --out": ["report", "--db", db, "--format", "html", "--out", str(out / "r.html")],
        "report": ["report", "--db", db],
        "compare": ["compare", good, good],
        "compare --format md": ["compare", good, good, "--format", "md"],
        "submit": ["submit", good, "--out-dir", str(out), "--drop-host-ids"],
        "store remove": ["store", "remove", record_id[:12], "--db", store_copy],
    }


def _drop_caps() -> list[str]:
    """As root every file is writable: drop the capabilities so file modes apply (the review's 'no caps')."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return []
    return ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]


@contextmanager
def full_disk(base: Path) -> Iterator[Path | None]:
    """A 1 MB tmpfs filled to the last byte (root only; None where it cannot be mounted). Always unmounted."""
    mount = base / "full"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1M", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        yield None
        return
    try:
        (mount / "data").mkdir()
        (mount / "tmp").mkdir()
        fd = os.open(mount / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            for size in (65536, 4096, 512, 1):  # to the last byte
                try:
                    while True:
                        os.write(fd, b"\0" * size)
                except OSError:
                    continue
        finally:
            os.close(fd)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@contextmanager
def environment(kind: str, base: Path) -> Iterator[tuple[dict, Path, Path, list[str]] | None]:
    """(env vars, cwd, output folder, command prefix) of one hostile environment, or None if unavailable."""
    # No COLUMNS: the output is a log, where every message stays one line (at a stated width notes and
    # errors wrap), so the classifier reads each error, and the path it names, whole.
    env = {**{k: v for k, v in os.environ.items() if k != "COLUMNS"}, "PYTHONPATH": SRC,
           "XDG_DATA_HOME": str(base / "data")}
    if kind == "LANG=C, ASCII output":
        out = base / "out"
        out.mkdir()
        yield {**env, "LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"}, out, out, []
    elif kind == "full disk":
        with full_disk(base) as mount:
            if mount is None:
                yield None
                return
            yield ({**env, "XDG_DATA_HOME": str(mount / "data"), "TMPDIR": str(mount / "tmp")}, mount, mount,
                   [])
    elif kind == "deleted cwd":
        gone = base / "gone"
        gone.mkdir()
        out = base / "out"
        out.mkdir()
        yield env, gone, out, ["DELETE_CWD"]
    elif kind == "read-only folder":
        prefix = _drop_caps()
        if not prefix and os.geteuid() == 0:
            yield None
            return
        out = base / "ro"
        out.mkdir()
        shutil.copy(base / "store.sqlite", out / "copy.sqlite")
        out.chmod(0o555)
        try:
            yield env, out, out, prefix
        finally:
            out.chmod(0o755)
    else:
        raise ValueError(kind)


ENVIRONMENTS = ("LANG=C, ASCII output", "full disk", "deleted cwd", "read-only folder")
# A child that removes its own working directory before the CLI starts (Python cannot start in one).
_IN_DELETED_CWD = ("import os, sys, runpy; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
                   "sys.argv = ['anebench', *sys.argv[2:]]; "
                   "runpy.run_module('anebench', run_name='__main__')")


def run_in(kind: str, base: Path, inputs: dict[str, Path], only: tuple[str, ...] = (),
           timeout: float = 300) -> list[Outcome]:
    outcomes = []
    with environment(kind, base) as setting:
        if setting is None:
            return []
        env, cwd, out, prefix = setting
        for name, args in commands(inputs, out).items():
            if only and name not in only:
                continue
            if "copy.sqlite" in " ".join(args) and not (out / "copy.sqlite").exists():
                try:
                    shutil.copy(inputs["db"], out / "copy.sqlite")
                except OSError:
                    pass
            if prefix == ["DELETE_CWD"]:
                cwd.mkdir(exist_ok=True)
                argv = [sys.executable, "-c", _IN_DELETED_CWD, str(cwd), *args]
                run_cwd = base
            else:
                argv = [*prefix, sys.executable, "-m", "anebench", *args]
                run_cwd = cwd
            try:
                done = subprocess.run(argv, cwd=run_cwd, env=env, capture_output=True, text=True,
                                      timeout=timeout, stdin=subprocess.DEVNULL)
                outcomes.append(Outcome(kind, name, done.returncode, done.stderr, done.stdout))
            except subprocess.TimeoutExpired as exc:
                outcomes.append(Outcome(kind, name, None, str(exc.stderr or ""), ""))
    return outcomes


def attack(only: tuple[str, ...] = ()) -> list[Outcome]:
    outcomes = []
    for kind in ENVIRONMENTS:
        with tempfile.TemporaryDirectory(prefix="anebench-env-") as tmp:
            base = Path(tmp)
            inputs = fixtures(base)
            outcomes += run_in(kind, base, inputs, only)
    return outcomes
