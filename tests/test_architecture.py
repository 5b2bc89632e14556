"""The shape of the code, checked: no module cycle (imports inside functions included), and no library
error that names a command-line flag (the CLI adds the flag; docs/architecture.md)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import grimp
import pytest

import anebench

SOURCE = Path(anebench.__file__).parent


def import_cycles(package: str) -> list[list[str]]:
    """One shortest cycle through each module edge that closes one, as [a, b, ..., a].

    grimp reads every import statement of every module, those inside function bodies and under
    TYPE_CHECKING too, so a cycle hidden behind a function-level import is found as well."""
    graph = grimp.build_graph(package, cache_dir=None)
    cycles, seen = [], set()
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            back = graph.find_shortest_chain(importer=imported, imported=importer)
            if back is None:
                continue
            cycle = [importer, *back]
            key = frozenset(cycle)
            if key not in seen:
                seen.add(key)
                cycles.append(cycle)
    return cycles


def test_the_module_graph_has_no_cycle():
    cycles = import_cycles("anebench")
    assert not cycles, "import cycles:\n" + "\n".join(" -> ".join(c) for c in cycles)


def test_a_cycle_closed_by_an_import_inside_a_function_is_found(tmp_path, monkeypatch):
    package = tmp_path / "cyclic_pkg_for_test"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "low.py").write_text("from . import high\n")
    (package / "high.py").write_text(textwrap.dedent("""
        def later():
            from . import low  # only inside a function: invisible to a check of module-level imports
            return low
    """))
    (package / "apart.py").write_text("from . import low\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    cycles = import_cycles("cyclic_pkg_for_test")
    assert [sorted(set(c)) for c in cycles] == [["cyclic_pkg_for_test.high", "cyclic_pkg_for_test.low"]]


def flag_naming_raises(path: Path) -> list[tuple[int, str]]:
    """(line, text) of each string constant inside a ``raise`` statement that names a flag (``--x``):
    f-string parts and implicitly joined lines included."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        for inner in ast.walk(node.exc):
            if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and _names_flag(inner.value):
                found.append((node.lineno, inner.value))
    return found


def _names_flag(text: str) -> bool:
    at = text.find("--")
    while at != -1:
        if at + 2 < len(text) and text[at + 2].isalpha() and (at == 0 or not text[at - 1].isalnum()):
            return True
        at = text.find("--", at + 2)
    return False


def test_no_library_error_names_a_flag():
    """A library error names the setting; the CLI (cli/) says which flag sets it."""
    library = [p for p in sorted(SOURCE.rglob("*.py")) if "cli" not in p.relative_to(SOURCE).parts]
    offenders = [f"{p.relative_to(SOURCE)}:{line}: {text!r}"
                 for p in library for line, text in flag_naming_raises(p)]
    assert not offenders, "library errors naming a flag:\n" + "\n".join(offenders)


def test_the_flag_scan_sees_split_and_formatted_messages(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(textwrap.dedent('''
        def f(n):
            if n:
                raise ValueError(f"runs {n}: "
                                 "use a larger --runs")
            raise ValueError("a range 1--3 and a -- separator name no flag")
    '''))
    assert flag_naming_raises(sample) == [(4, ": use a larger --runs")]


def test_a_library_error_names_the_setting_and_the_cli_the_flag(capsys, tmp_path):
    from anebench.errors import UserError
    from anebench.measure.timing import split_runs
    from clitools import run_cli

    with pytest.raises(UserError) as refused:
        split_runs(2, 3)
    message = str(refused.value)
    assert message.startswith("runs 2 is fewer than repetitions 3") and "--" not in message
    code, _, stderr = run_cli(capsys, "run", "-e", "numpy", "-w", "lm_head:64x512:fp32", "--runs", "2",
                              "--repetitions", "3", "--no-save")
    assert code == 2 and "--runs 2 is fewer than --repetitions 3" in stderr
    missing = tmp_path / "none.sqlite"
    code, _, stderr = run_cli(capsys, "store", "list", "--db", str(missing))
    assert code == 2 and f"--db {missing}: no such database" in stderr and "give an existing --db" in stderr


def test_a_command_names_its_own_flag_for_a_setting():
    from anebench.cli.common import flags
    from anebench.errors import MeasurementError, setting

    with pytest.raises(MeasurementError) as refused, flags(batch="--predicts-per-call"):
        raise MeasurementError(f"too short; use a larger {setting('batch')} or {setting('runs')}")
    assert str(refused.value) == "too short; use a larger batch or runs"
    from anebench.cli.boundary import error_text

    assert error_text(refused.value) == "too short; use a larger --predicts-per-call or --runs"
