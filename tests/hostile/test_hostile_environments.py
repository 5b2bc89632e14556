"""Under LANG=C with an ASCII-only output, on a full disk (a filled 1 MB tmpfs), in a deleted working
directory and with a read-only output folder, every writer exits with one line and no traceback, and a
measurement that cannot be saved where asked is kept elsewhere (or said to be lost)."""

from __future__ import annotations

import os
import re

import environments
import pytest

WRITERS = ("run --out", "run (default name)", "report md --out", "report html --out", "submit", "ingest")


@pytest.mark.parametrize("kind", environments.ENVIRONMENTS)
def test_every_writer_fails_in_one_line_or_works(kind, tmp_path):
    if kind == "full disk" and os.geteuid() != 0:
        pytest.skip(reason="mounting a small tmpfs needs root")
    inputs = environments.fixtures(tmp_path)
    outcomes = environments.run_in(kind, tmp_path, inputs, only=WRITERS)
    if not outcomes:
        pytest.skip(reason=f"{kind}: not available here (needs root and setpriv)")
    assert {o.name for o in outcomes} == set(WRITERS)
    bad = [(o.name, o.code, o.verdict, o.stderr[-400:]) for o in outcomes
           if o.verdict not in ("handled", "clean refusal")]
    assert not bad, bad
    for outcome in outcomes:
        kept = re.search(r"kept in (\S+?\.json)", outcome.stderr)
        if kept:  # the fallback file holds the measurement; removed here (it may be in the system temp dir)
            path = kept.group(1)
            assert '"results"' in open(path).read()
            os.unlink(path)
