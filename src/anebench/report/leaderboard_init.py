"""`anebench leaderboard init REPO`: the skeleton of a results repository (README with the markers, the CI
workflow that runs `leaderboard build --check` on every pull request, a PR template, CONTRIBUTING)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from .. import __version__
from ..engines import MAC_EXTRAS
from ..errors import UserError, setting
from ..util.outputs import atomic_write_bytes
from .leaderboard import CONFIG, END, README, START, Settings

WORKFLOW = ".github/workflows/leaderboard.yml"
PR_TEMPLATE = ".github/pull_request_template.md"
CONTRIBUTING = "CONTRIBUTING.md"
KEEP = "submissions/.gitkeep"
# What pip installs in CI: a name, a version pin, a path or a VCS URL; nothing a shell or YAML would read
_SPEC = re.compile(r"^[A-Za-z0-9._\-\[\]=<>!~+:/@#,]{1,300}$")

README_TEXT = """# {title}

Weight-read bandwidth for LLM decode (the number that sets batch-1 decode speed) measured by
[anebench](https://github.com/anebench/anebench) on many Macs, one immutable submission per run.

## Submit your Mac's results

```console
$ anebench run --out mine.json
$ anebench submit mine.json --into . --drop-host-ids
$ anebench leaderboard build .
```

Then open a pull request with the new file under `submissions/` and the files the build regenerated.
See [CONTRIBUTING.md](CONTRIBUTING.md).

## The matrix

{start}
(not built yet: run `anebench leaderboard build .`)
{end}
"""

WORKFLOW_TEXT = """name: leaderboard
on:
  pull_request:
  push:
    branches: [main]
permissions:
  contents: read
jobs:
  check:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install anebench
        run: python -m pip install "{spec}"
      - name: Validate every submission and check the generated files are a fresh build
        run: anebench leaderboard build . --check
"""

PR_TEXT = """<!-- One run per pull request. -->

- [ ] This pull request adds **one submission file** (`submissions/<chip>/<run-id>.json`, written by
      `anebench submit RESULT.json --into .`) and the files `anebench leaderboard build .` regenerated
      (README.md's table, `leaderboard/`). Nothing else, nothing edited by hand.
- [ ] The run was made with the Mac plugged in, with nothing else running.

CI runs `anebench leaderboard build . --check`: it fails when a submission does not validate (its
reason is one line) or when the generated files are not what a fresh build gives.
"""

CONTRIBUTING_TEXT = """# Contributing results

1. Install anebench on the Mac (`pip install "anebench[{extras}]"`) and run the Mac campaign,
   keeping its console output as the run's log:

       anebench run --out mine.json 2>&1 | tee run.log

   `anebench run --dry-run --plan-for mac` shows what it measures. Plug the Mac in, close other apps.
2. Add it to your fork of this repository (the run is validated as `anebench ingest` validates a file:
   samples against summary, physical bounds, content ids):

       anebench submit mine.json --log run.log --into . --drop-host-ids

   `--drop-host-ids` removes the host fingerprint, machine model, host and login names and private
   paths (from the log too); leave it out to keep them. A submission is never replaced, and a record
   already submitted is refused.
3. Regenerate the leaderboard and check it as CI will:

       anebench leaderboard build .
       anebench leaderboard build . --check

4. Commit `submissions/<chip>/<run-id>.json`, `README.md` and `leaderboard/`, and open a pull request.

To compare your run with everyone's: `anebench compare mine.json --leaderboard .`. To browse the data:
`anebench leaderboard serve .` (needs `pip install "anebench[dataset]"`).
"""


def skeleton(title: str, install: str) -> dict[str, str]:
    if not _SPEC.match(install):
        raise UserError(f"{setting('install')} {install[:80]!r}: give a pip requirement (a name, version, "
                        "path or URL)")
    return {
        README: README_TEXT.format(title=title, start=START, end=END),
        WORKFLOW: WORKFLOW_TEXT.format(spec=install),
        PR_TEMPLATE: PR_TEXT,
        CONTRIBUTING: CONTRIBUTING_TEXT.replace("{extras}", MAC_EXTRAS),
        CONFIG: json.dumps({"title": title, "datasette_url": None}, indent=1) + "\n",
        KEEP: "",
    }


def default_install() -> str:
    """This anebench's version, pinned: the committed files are what this version builds, and CI must
    build with the same one (another version's catalog or rules give other bytes)."""
    return f"anebench=={__version__}"


def init(root: Path, title: str = Settings.title, install: str | None = None) -> tuple[list[str], list[str]]:
    """(files written, files kept as they were): an existing file is never replaced; an existing README
    without the markers is refused before anything is written."""
    root = Path(root)
    if root.exists() and not root.is_dir():
        raise UserError(f"REPO {root}: exists and is not a directory")
    files = skeleton(title, install or default_install())
    readme = root / README
    if readme.is_file() and (
        START not in readme.read_text("utf-8", "replace") or END not in readme.read_text("utf-8", "replace")
    ):
        raise UserError(
            f"{readme}: exists without the leaderboard markers; add a line {START} and a line "
            f"{END} where the table goes, then run init again"
        )
    written, kept = [], []
    for relative, text in files.items():
        try:
            atomic_write_bytes(root / relative, text.encode(), "leaderboard skeleton", exclusive=True)
            written.append(relative)
        except FileExistsError:
            kept.append(relative)
    return written, kept


__all__ = ["CONTRIBUTING", "PR_TEMPLATE", "WORKFLOW", "init", "skeleton"]
