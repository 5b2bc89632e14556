"""Examples that cannot rot (issue 26): every `$ anebench ...` line of README.md and docs/*.md is parsed
against the real click command tree and executed (tests/docs_examples.py says how, and which workloads
are swapped for small ones); the CLI reference is generated from the same tree."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from anebench.cli import app, main
from docs_examples import ALSO_ACCEPTED, PAGES, ROOT, UnknownCommandLine, examples, parse, small_twin


def _run(argv: list[str], capsys, stdout_to: str | None) -> tuple[int, str]:
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    captured = capsys.readouterr()
    if stdout_to:
        Path(stdout_to).write_text(captured.out, encoding="utf-8")
    return code, (captured.out + captured.err)[-1500:]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_shown_command_parses_and_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # one scratch folder per page: its lines share the files they write
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # a private results store
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("ANEBENCH_CACHE_DIR", str(tmp_path / "cache" / "bundles"))
    monkeypatch.setenv("COLUMNS", "80")
    problems = []
    for example in examples(page):
        try:
            example.path = parse(app, example.argv)
        except UnknownCommandLine as exc:
            problems.append(f"{example.where}: `{example.text}`: {exc}")
            continue
        if not example.run:
            continue
        argv = small_twin(example.argv, example.path)
        code, output = _run(argv, capsys, example.stdout_to)
        accepted = {example.exit_code} | (
            ALSO_ACCEPTED.get(example.path[0], set()) if example.exit_code == 0 and example.path else set()
        )
        if code not in accepted:
            problems.append(
                f"{example.where}: `{example.text}` ran as `anebench {' '.join(argv)}` and exited {code}, "
                f"expected {example.exit_code}:\n{output}"
            )
    assert not problems, "\n\n".join(problems)


def test_readme_shows_commands_and_docs_use_the_convention():
    shown = [e for page in PAGES for e in examples(page)]
    assert len([e for e in shown if e.page.name == "README.md"]) >= 12
    assert all(e.reason for e in shown if not e.run)  # a line not run says why


def test_a_renamed_option_or_command_fails_the_parse():
    assert parse(app, ["run", "-e", "numpy", "--runs", "5"]) == ["run"]
    assert parse(app, ["store", "list"]) == ["store", "list"]
    with pytest.raises(UnknownCommandLine, match="--runz"):
        parse(app, ["run", "--runz", "5"])
    with pytest.raises(UnknownCommandLine, match="no such command 'lst'"):
        parse(app, ["store", "lst"])
    with pytest.raises(UnknownCommandLine, match="--runs"):
        parse(app, ["run", "--runs"])  # an option missing its value


def test_the_small_twin_swaps_large_workloads_and_keeps_small_ones():
    assert small_twin(["run"], ["run"]) == ["run", "-w", "lm_head:256x2048:fp32", "--runs", "6"]
    assert small_twin(["run", "-w", "llama_lm_head", "--runs", "300"], ["run"]) == [
        "run", "-w", "lm_head:256x2048:fp32", "--runs", "6"]
    assert small_twin(["run", "-w", "lm_head:4096x16384:fp32"], ["run"])[2] == "lm_head:256x2048:fp32"
    assert small_twin(["run", "-w", "lm_head:1024x4096:fp32"], ["run"])[2] == "lm_head:1024x4096:fp32"
    assert small_twin(["build", "llama_lm_head", "--quant", "lut6"], ["build"]) == [
        "build", "lm_head:256x2048:fp32", "--quant", "lut6"]
    assert small_twin(["compare", "a.json", "b.json"], ["compare"]) == ["compare", "a.json", "b.json"]


def test_the_cli_reference_is_generated_from_the_click_commands():
    """docs/cli.md holds no hand-written option: mkdocs-click renders the command tree at build time."""
    markdown = pytest.importorskip("markdown")
    pytest.importorskip("mkdocs_click")
    source = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert ":module: anebench.cli" in source and ":command: app" in source
    html = markdown.markdown(source, extensions=["attr_list", "mkdocs-click"])
    for name, command in app.commands.items():
        assert re.search(rf"<h\d[^>]*>anebench {name}</h\d>", html), name
        for param in command.params:
            for opt in getattr(param, "opts", []):
                if opt.startswith("--") and not getattr(param, "hidden", False):
                    assert opt in html, f"{name} {opt}"
