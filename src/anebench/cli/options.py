"""One definition per shared option: --out (a file, or a directory for the commands that write several
files), --json, --format, --db, --force and --dry-run. A command states only its help text where its
meaning differs; the flag, its type and its alias are the same everywhere.

A measuring command's --format, --force, --db (with --store) and --export-* are parsed into its
``Settings`` (cli/settings.py) and passed to it explicitly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]
FORMATS = ("table", "json", "csv", "md")


def out_file_option(help: str, name: str = "out") -> Decorator:
    """--out/-o FILE."""
    return click.option(
        "--out", "-o", name, type=click.Path(dir_okay=False, path_type=Path), default=None, help=help
    )


def out_dir_option(help: str) -> Decorator:
    """--out/-o DIRECTORY, for a command that writes several files (build, submit)."""
    return click.option(
        "--out", "-o", "out", type=click.Path(file_okay=False, path_type=Path), default=None, help=help
    )


def json_option(help: str = "Same as --format json.") -> Decorator:
    return click.option("--json", "as_json", is_flag=True, help=help)


def format_option(*choices: str, default: str | None = None, help: str | None = None) -> Decorator:
    """--format CHOICE (default table): a machine format prints one document on stdout, tables on stderr."""
    allowed = choices or FORMATS
    machine = ", ".join(c for c in allowed if c != "table")
    text = help or f"table (default) or {machine}: one document on stdout, tables on stderr."
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(allowed),
        default=default,
        show_default=default is not None,
        help=text,
    )


def force_option(help: str = "Replace a read-only --out file.") -> Decorator:
    return click.option("--force", is_flag=True, help=help)


def db_option(help: str = "Results database (default: results.sqlite in the user data dir).") -> Decorator:
    return click.option(
        "--db", "db", type=click.Path(dir_okay=False, path_type=Path), default=None, help=help
    )


def dry_run_option(help: str) -> Decorator:
    return click.option("--dry-run", is_flag=True, help=help)
