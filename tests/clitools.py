"""Running the real `anebench` entry point in-process, as a user would, for CLI tests."""

from __future__ import annotations

from anebench.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of `anebench ARGV`; 0 when it returns without exiting."""
    try:
        main(list(argv))
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def document_results(document: dict) -> list[dict]:
    """A results document's records' JSON, each whole: its suite result (held once in the document's
    ``suite_results``) joined back into each point, as the loader does."""
    from anebench.results.suite_document import expand
    from anebench.results.upgrade import upgrade_document

    whole, problems = expand(upgrade_document(document), "document")
    assert not problems, problems
    return whole
