"""A measuring command's settings, parsed once from its click parameters and passed explicitly
(hyperfine's ``Options``): the output format, --out/--no-save and the --export-* files, --force,
--store/--db, --threads, the verbosity, and the files the command reads (never an output).

:func:`measuring_options` defines the options every measuring command shares (`run` and the suites),
parses them into one :class:`Settings` and calls the command with ``settings=``; nothing reads them back
from the click context.
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import click

from ..errors import UserError
from ..util.outputs import check_target
from .console import NORMAL, verbosity
from .exports import EXPORT_FORMATS, format_for
from .options import db_option, force_option, format_option, json_option, out_file_option

MEASURING_FORMATS = ("table", "json", "jsonl", "csv", "md")


@dataclass(frozen=True)
class Settings:
    """What a measuring command was asked for, beyond what it measures."""

    format: str = "table"  # table, json, jsonl, csv or md (--json: json)
    out: Path | None = None  # --out: where the results go (default: a file named after host and time)
    no_save: bool = False
    force: bool = False  # replace a read-only --out or --export-* file
    store: bool = False  # --store: also into the results database
    db: Path | None = None  # the database --store writes to (None: the default one)
    exports: tuple[tuple[str, Path], ...] = ()  # (format, path) of each --export-FORMAT
    threads: int | None = None  # --threads: CPU threads per call (None: the engine's own)
    verbosity: int = NORMAL
    inputs: tuple[Path, ...] = ()  # files the command reads: no output may replace them

    @property
    def machine(self) -> bool:
        """A machine format: stdout holds one document, the tables go to stderr."""
        return self.format != "table"

    def reading(self, *paths: Path) -> Settings:
        """These settings, with more files the command reads (a checkpoint's shards, a saved sweep)."""
        return replace(self, inputs=self.inputs + tuple(Path(p) for p in paths))

    def protected_paths(self) -> list[tuple[Path, str]]:
        """The command's inputs, the default results store and any --db: never an output (the output
        policy also refuses their SQLite side files and any other SQLite database)."""
        from ..results.store import default_db_path

        protected = [(p, "an input of this command") for p in self.inputs]
        stores = [Path(db) for db in (self.db, default_db_path()) if db]
        label = "the results store (--db)" if self.store else "a results store"
        return protected + [(db, label) for db in stores]

    def check_out_path(self, out: Path | None = None) -> None:
        """Refuse, before anything is measured, an --out (or --export-FORMAT file) the output policy would
        refuse after, or whose extension names no format. ``out``: another --out than the settings'."""
        out = self.out if out is None else out
        if out is not None:
            check_target(out, "--out", self.force, self.protected_paths())
            format_for(out)
        for fmt, path in self.exports:
            check_target(path, f"--export-{fmt}", self.force, self.protected_paths())


def output_format(fmt: str | None, as_json: bool) -> str:
    """--format, with --json as its alias; both given and different is refused in one line."""
    if as_json and fmt not in (None, "json"):
        raise UserError(f"--json and --format {fmt}: give one (--json is --format json)")
    return "json" if as_json else fmt or "table"


def parse_settings(params: dict[str, Any]) -> Settings:
    """The settings from a measuring command's parameters (taken out of ``params``); conflicting options
    refused in one line before anything runs."""
    fmt = output_format(params.pop("fmt", None), bool(params.pop("as_json", False)))
    out, no_save = params.pop("out", None), bool(params.pop("no_save", False))
    if no_save and out is not None:
        raise UserError(f"--no-save and --out {out}: give one (--out saves the results there)")
    exports = tuple(
        (fmt_, Path(path)) for fmt_ in EXPORT_FORMATS if (path := params.pop(f"export_{fmt_}", None))
    )
    has_store = "store" in params
    store = bool(params.pop("store", False))
    return Settings(
        format=fmt,
        out=out,
        no_save=no_save,
        force=bool(params.pop("force", False)),
        store=store,
        db=params.get("db") if has_store else None,  # --db is the store's only where there is --store
        exports=exports,
        threads=params.pop("threads", None),
        verbosity=verbosity(),
    )


def measuring_options(func: Callable) -> Callable:
    """--engine/--device/--workload/--out/--format (--json)/--no-save/--force/--export-*, the same for
    `run` and every suite, parsed with the command's --store/--db and --threads into one
    :class:`Settings`, given to the command as ``settings``."""
    takes = set(inspect.signature(func).parameters)

    @functools.wraps(func)
    def checked(*args: Any, **kwargs: Any) -> Any:
        settings = parse_settings(kwargs)
        # an unknown extension: refused before anything runs, after the output policy's own refusals (a
        # store's side file); an existing file may be one of the command's inputs, which the command's
        # own check (once it knows its inputs) names first
        if settings.out is not None and not os.path.lexists(settings.out):
            settings.check_out_path()
        kept = {name: value for name, value in kwargs.items() if name in takes}
        return func(*args, settings=settings, **kept)

    options: list[Callable[[Callable], Callable]] = [
        click.option(
            "--engine", "-e", "engines", multiple=True, help="Engine (repeatable); default: best here."
        ),
        click.option(
            "--device", "-d", default=None, help="Device of the engine, e.g. cpu, cuda:0, ane, gpu."
        ),
        click.option(
            "--workload",
            "-w",
            "workloads",
            multiple=True,
            help="Catalog name, lm_head:HIDDENxVOCAB[:DTYPE] or hf:PATH[:TENSOR] (repeatable).",
        ),
        out_file_option(
            "Where to save the results (default: a file named after host and time); the format follows "
            "the extension: .json (default), .jsonl, .csv, .md, .txt (the table)."
        ),
        click.option("--no-save", is_flag=True, help="Do not save a results file."),
        force_option(),
        format_option(
            *MEASURING_FORMATS,
            help="Results on stdout as table (default), json, jsonl, csv or md; tables go to stderr then.",
        ),
        json_option("Same as --format json: one JSON document on stdout."),
        *(
            click.option(
                f"--export-{fmt}",
                f"export_{fmt}",
                type=click.Path(dir_okay=False, path_type=Path),
                default=None,
                help=f"Also write the results as {fmt} to this file (any --export-* may be combined).",
            )
            for fmt in EXPORT_FORMATS
        ),
    ]
    wrapped: Callable = checked
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def store_options(func: Callable, db: bool = True) -> Callable:
    """`--store [--db PATH]` for `run` and every suite, parsed into the settings. ``db=False``: the
    command has its own --db (latency), which --store then writes to."""
    if db:
        func = db_option("Results database for --store (default: the user data dir).")(func)
    return click.option(
        "--store", is_flag=True, help="Also store the measured records in the results database."
    )(func)


__all__ = ["MEASURING_FORMATS", "Settings", "measuring_options", "output_format", "parse_settings",
           "store_options"]
