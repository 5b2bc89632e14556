"""Rerun the hostile review's attack (shared/reviews/hostile.md) and print its counts.

    python tests/hostile/attack.py            # environments x commands, the corpus, the scenario tests
    python tests/hostile/attack.py --skip-scenarios   # the first two only

Three parts: (1) every command in each hostile environment (LANG=C, full disk, deleted cwd, read-only
folder; environments.py), (2) the generated corpus of hostile files through ingest, compare and submit,
(3) the scenario tests of tests/hostile/ (signals, orphans, races, injection, privacy, store), each test
one failure class with several inputs. Verdicts as in the review: clean refusal, handled, traceback,
loss, leak, hang, wrong."""

from __future__ import annotations

import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
SRC = os.environ.get("ANEBENCH_TEST_SRC") or str(HERE.parents[1] / "src")
os.environ["PYTHONPATH"] = SRC
sys.path.insert(0, SRC)

import environments  # noqa: E402


def _in_process(args: list[str]) -> tuple[int | None, str, str]:
    """`anebench ARGS` in this process (the corpus has hundreds of files; a process each is too slow)."""
    import contextlib
    import io

    from anebench.cli import main

    out, err = io.StringIO(), io.StringIO()
    code: int | None = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            main(args)
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # noqa: BLE001 - an escape is what the attack counts as a traceback
            import traceback

            err.write(traceback.format_exc())
            code = 99
    return code, out.getvalue(), err.getvalue()


def corpus_outcomes(base: Path) -> list[tuple[str, str, str]]:
    """(group, name, verdict) of each corpus file through ingest, compare and submit."""
    from corpus import anebench_files, anemll_files

    os.environ["XDG_DATA_HOME"] = str(base / "data")
    inputs = environments.fixtures(base)
    found = []
    for fmt, generator in (("anebench", anebench_files), ("anemll-bench", anemll_files)):
        folder = base / fmt
        folder.mkdir()
        for name, (path, _phrase) in generator(folder).items():
            runs = [("ingest", ["ingest", "--from", fmt, str(path), "--db", str(base / "c.sqlite")])]
            if fmt == "anebench":
                runs += [("compare", ["compare", str(inputs["good"]), str(path)]),
                         ("submit", ["submit", str(path), "--out-dir", str(base / "sub")])]
            for group, args in runs:
                (base / "sub").mkdir(exist_ok=True)
                code, out, err = _in_process(args)
                outcome = environments.Outcome(f"corpus: {group}", name, code, err, out)
                found.append((outcome.env, name, outcome.verdict))
    return found


def scenario_outcomes() -> list[tuple[str, str, str]]:
    """(group, test, verdict) of each hostile scenario test: passed = handled, failed = wrong."""
    done = subprocess.run([sys.executable, "-m", "pytest", str(HERE), "-q", "-rA", "-p", "no:cacheprovider",
                           "--ignore", str(HERE / "test_hostile_environments.py")],
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": SRC})
    found = []
    for line in done.stdout.splitlines():
        match = re.match(r"^(PASSED|FAILED|ERROR|SKIPPED)\s+\S+::(\S+)", line)
        if match:
            state, test = match.groups()
            verdict = {"PASSED": "handled", "SKIPPED": "skipped"}.get(state, "wrong")
            found.append(("scenarios (tests/hostile)", test, verdict))
    return found


def main() -> int:
    rows: list[tuple[str, str, str]] = []
    kept = []
    for outcome in environments.attack():
        rows.append((f"environment: {outcome.env}", outcome.name, outcome.verdict))
        kept += re.findall(r"kept in (\S+?\.json)", outcome.stderr)
    for path in kept:  # fallback files the full disk sent to the system temp dir
        Path(path).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix="anebench-corpus-") as tmp:
        rows += corpus_outcomes(Path(tmp))
    if "--skip-scenarios" not in sys.argv:  # when the suite has just run them
        rows += scenario_outcomes()
    columns = ("clean refusal", "handled", "traceback", "loss", "leak", "hang", "wrong", "skipped")
    table: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for group, _name, verdict in rows:
        table[group][verdict] += 1
    print(f"| group | tried | {' | '.join(columns)} |")
    print("|---|---:|" + "---:|" * len(columns))
    total: collections.Counter = collections.Counter()
    for group, counts in table.items():
        total.update(counts)
        cells = " | ".join(str(counts[c]) for c in columns)
        print(f"| {group} | {sum(counts.values())} | {cells} |")
    cells = " | ".join(f"**{total[c]}**" for c in columns)
    print(f"| **total** | **{sum(total.values())}** | {cells} |")
    for group, name, verdict in rows:
        if verdict not in ("clean refusal", "handled", "skipped"):
            print(f"- {verdict}: {group}: {name}")
    return 0 if all(v in ("clean refusal", "handled", "skipped") for *_, v in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
