"""The CLI's settings are parsed once into a typed, frozen value and passed explicitly: no CLI module keeps
them in click's context (``ctx.meta``), and the parse refuses conflicting options in one line."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

import anebench.cli
from anebench.cli.console import NORMAL
from anebench.cli.settings import Settings, parse_settings
from anebench.errors import UserError

CLI = Path(anebench.cli.__file__).parent


def meta_uses(folder: Path = CLI) -> list[str]:
    """Every ``X.meta`` in the modules of ``folder`` (read, write or call), as file:line."""
    found = []
    for path in sorted(folder.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and node.attr == "meta":
                found.append(f"{path.name}:{node.lineno}")
    return found


def test_no_cli_module_keeps_state_in_the_click_context():
    assert meta_uses() == []


def test_the_scan_finds_a_meta_use(tmp_path):
    """The scan above is not vacuous: a module that reads ctx.meta is found."""
    (tmp_path / "bad.py").write_text("def f(ctx):\n    return ctx.meta.get('anebench.format')\n")
    assert meta_uses(tmp_path) == ["bad.py:2"]


def params(**given):
    base = {"fmt": None, "as_json": False, "out": None, "no_save": False, "force": False,
            "export_csv": None, "export_json": None, "engines": ()}
    return base | given


def test_parse_takes_the_settings_out_and_leaves_the_command_its_own():
    given = params(fmt="csv", force=True, export_json="x.json", store=True, db=Path("s.db"), threads=2)
    settings = parse_settings(given)
    assert settings == Settings(format="csv", force=True, store=True, db=Path("s.db"),
                                exports=(("json", Path("x.json")),), threads=2, verbosity=NORMAL)
    assert settings.machine
    assert "fmt" not in given and "store" not in given and "engines" in given


def test_json_is_the_json_format_and_a_conflict_is_one_line():
    assert parse_settings(params(as_json=True)).format == "json"
    assert parse_settings(params()).format == "table"
    with pytest.raises(UserError, match="--json and --format csv"):
        parse_settings(params(as_json=True, fmt="csv"))
    with pytest.raises(UserError, match="--no-save and --out"):
        parse_settings(params(no_save=True, out=Path("r.json")))


def test_db_belongs_to_the_settings_only_with_store():
    """A command's own --db without --store (decode reads sweeps from it) is no results store to write."""
    assert parse_settings(params(db=Path("s.db"))).db is None
    assert parse_settings(params(db=Path("s.db"), store=False)).db == Path("s.db")


def test_settings_are_frozen_and_inputs_are_added_by_copy(tmp_path):
    settings = Settings()
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.force = True  # type: ignore[misc]
    reading = settings.reading(tmp_path / "shard.safetensors")
    assert settings.inputs == () and reading.inputs == (tmp_path / "shard.safetensors",)
    assert (tmp_path / "shard.safetensors", "an input of this command") in reading.protected_paths()


def test_an_input_is_refused_as_out(tmp_path):
    source = tmp_path / "sweep.json"
    source.write_text("{}")
    with pytest.raises(UserError, match="input"):
        Settings(out=source).reading(source).check_out_path()


def test_the_store_named_by_db_is_refused_as_out(tmp_path):
    db = tmp_path / "r.sqlite"
    with pytest.raises(UserError, match="--db"):
        Settings(out=db, store=True, db=db).check_out_path()
