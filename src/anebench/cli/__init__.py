"""The command line: parses, calls the library, prints. No measurement logic lives here."""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
import traceback

import click

from .. import __version__
from ..errors import AnalysisFailed, MeasurementError, UserError
from .boundary import cwd_missing, describe, error_text, safe_streams, silence_stdout
from .common import SAVED_SO_FAR, err_console, flush_warnings, interrupted_line
from .console import error_line, set_verbosity


class ClosedOutput(Exception):
    """stdout or stderr was closed (a BrokenPipeError), carried past click, which would exit silently."""


class Commands(click.Group):
    """`anebench --help` lists each command with its whole first sentence, wrapped, never cut."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except BrokenPipeError as exc:
            raise ClosedOutput() from exc

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = []
        for name in self.list_commands(ctx):
            command = self.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            text = command.short_help or " ".join((command.help or "").split())
            rows.append((name, text.split(". ")[0].rstrip(".") if not command.short_help else text))
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(
    cls=Commands,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="Units: MB = 1e6 bytes, GB = 1e9 bytes; times in the unit that gives 3 significant digits.",
)
@click.version_option(__version__, "-V", "--version", prog_name="anebench", message="%(prog)s %(version)s")
@click.option(
    "-q", "--quiet", is_flag=True, help="Print only results and errors (no progress, notes or warnings)."
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Print more: each warning per record, full workload names."
)
@click.option(
    "--debug", is_flag=True, help="On an unexpected error, print its traceback (default: one line)."
)
@click.pass_context
def app(ctx: click.Context, quiet: bool, verbose: bool, debug: bool) -> None:
    """Measure how fast an accelerator streams LLM weights from memory."""
    global _debug
    _debug = _debug or debug
    set_verbosity(quiet, verbose)
    ctx.call_on_close(flush_warnings)  # whatever a command collected and did not print yet
    if ctx.invoked_subcommand is None:  # bare `anebench`: the help, and success
        click.echo(ctx.get_help())
        ctx.exit(0)


def _register_commands() -> None:
    from . import run as run_commands

    run_commands.register(app)
    for module in (
        "build",
        "suites",
        "quant",
        "results",
        "compare",
        "doctor",
        "leaderboard",
        "decode",
    ):  # each concern adds its commands when present
        try:
            imported = __import__(f"anebench.cli.{module}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"anebench.cli.{module}":
                raise
            continue
        imported.register(app)


def _help_when_bare(group: click.Group) -> None:
    """A bare group command (`anebench store`, `anebench leaderboard`) prints its help and succeeds, as
    bare `anebench` does, instead of a usage error."""
    for command in group.commands.values():
        if not isinstance(command, click.Group):
            continue
        _help_when_bare(command)
        if command.invoke_without_command:
            continue  # the group handles a bare call itself
        command.invoke_without_command, command.no_args_is_help = True, False
        callback = command.callback

        def bare_is_help(*args, _callback=callback, **kwargs):
            ctx = click.get_current_context()
            if ctx.invoked_subcommand is None:
                click.echo(ctx.get_help())
                ctx.exit(0)
            return _callback(*args, **kwargs) if _callback is not None else None

        command.callback = functools.update_wrapper(bare_is_help, callback) if callback else bare_is_help


def _verbosity_after_subcommand(group: click.Group) -> None:
    """-q/-v are accepted after the subcommand too (`anebench sweep -q ...`), with the same meaning."""

    def remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        if value:
            set_verbosity(param.name == "quiet", param.name == "verbose")
        return value

    for command in group.commands.values():
        taken = {opt for param in command.params for opt in getattr(param, "opts", [])}
        for short, long, name, text in (
            ("-q", "--quiet", "quiet", "Print only results and errors (as `anebench -q`)."),
            ("-v", "--verbose", "verbose", "Print more (as `anebench -v`)."),
        ):
            if short not in taken and long not in taken:
                command.params.append(
                    click.Option([short, long], name, is_flag=True, expose_value=False, callback=remember,
                                 help=text)
                )
        if isinstance(command, click.Group):
            _verbosity_after_subcommand(command)


_register_commands()
_help_when_bare(app)
_verbosity_after_subcommand(app)


_debug = bool(os.environ.get("ANEBENCH_DEBUG"))
# Signals that unwind like Ctrl-C: a supervisor's SIGTERM, a closed terminal's (or ssh drop's) SIGHUP.
UNWINDING = tuple(s for s in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM and SIGHUP unwind like Ctrl-C: finished steps are saved, staging folders removed, the
    cursor shown."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    global _debug
    previous: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():
        previous[signal.SIGINT] = signal.getsignal(signal.SIGINT)  # restored: an interrupt may ignore it
        for signum in UNWINDING:
            previous[signum] = signal.signal(signum, _terminate)
    SAVED_SO_FAR.clear()
    debug_before = _debug
    _debug = _debug or "--debug" in (sys.argv[1:] if argv is None else argv)
    try:
        with safe_streams():
            if cwd_missing():  # before any import that resolves paths (torch's MKL aborts there)
                _fail("the current directory no longer exists (deleted while in use): cd to an existing "
                      "folder and run the command again", 2)
            _main(argv)
    finally:
        _debug = debug_before
        for signum, handler in previous.items():
            signal.signal(signum, handler)  # type: ignore[arg-type]


def _ignore_interrupts() -> None:
    """While the last words are printed, a second Ctrl-C (or SIGTERM) cannot cut them into a traceback."""
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, *UNWINDING):
            signal.signal(signum, signal.SIG_IGN)


def _fail(message: str, code: int) -> None:
    """The one line for an error the library let through, on stderr if stderr still works."""
    try:
        error_line("error", message)
        if _debug:
            err_console.print(traceback.format_exc(), markup=False, highlight=False)
    except Exception:  # stderr itself is gone (closed, full): the exit code is all that is left
        pass
    sys.exit(code)


def _main(argv: list[str] | None) -> None:
    try:
        _run(argv)
        sys.stdout.flush()  # a closed pipe or a full disk under stdout shows here, not in Python's exit
    except (BrokenPipeError, ClosedOutput):
        silence_stdout()
        _fail(describe(BrokenPipeError())[0], 1)
    except KeyboardInterrupt:
        _ignore_interrupts()
        try:
            err_console.print(interrupted_line(), highlight=False, markup=False)
        except Exception:
            pass
        sys.exit(130)
    except Exception as exc:  # the boundary: one line, never a traceback (--debug shows it)
        message, code = describe(exc)
        _settle_stdout()
        _fail(message, code)


def _settle_stdout() -> None:
    """If stdout cannot take what is buffered (a full disk under `> file`), drop it: Python's own flush
    at exit would otherwise print 'Exception ignored' and a traceback."""
    try:
        sys.stdout.flush()
    except Exception:
        silence_stdout()


def _run(argv: list[str] | None) -> None:
    try:
        code = app.main(args=argv, prog_name="anebench", standalone_mode=False)
        if isinstance(code, int) and code != 0:  # ctx.exit(N) returns N outside standalone mode
            sys.exit(code)
    except click.exceptions.Abort:
        _ignore_interrupts()
        err_console.print(interrupted_line(), highlight=False, markup=False)
        sys.exit(130)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "anebench"
        error_line("error", f"{exc.format_message()} (see '{command} --help')")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UserError as exc:
        error_line("error", error_text(exc))
        sys.exit(UserError.exit_code)
    except AnalysisFailed as exc:  # the records are saved: only the analysis could not be made
        error_line("analysis failed", error_text(exc))
        sys.exit(AnalysisFailed.exit_code)
    except MeasurementError as exc:
        error_line("measurement refused", error_text(exc))
        sys.exit(MeasurementError.exit_code)


if __name__ == "__main__":
    main()
