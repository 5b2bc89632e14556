"""The command line: parses, calls the library, prints. No measurement logic lives here."""

from __future__ import annotations

import signal
import sys
import threading

import click
from rich.markup import escape  # messages quote shapes like [vocab, hidden]

from .. import __version__
from ..errors import MeasurementError, UserError
from ..report.escape import clean_text
from .common import err_console


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="anebench")
def app() -> None:
    """Measure how fast an accelerator streams LLM weights from memory."""


def _register_commands() -> None:
    from . import run as run_commands

    run_commands.register(app)
    for module in ("build", "suites", "quant", "results"):  # each concern adds its commands when present
        try:
            imported = __import__(f"anebench.cli.{module}", fromlist=["register"])
        except ModuleNotFoundError as exc:
            if exc.name != f"anebench.cli.{module}":
                raise
            continue
        imported.register(app)


_register_commands()


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C: finished steps are saved, staging folders removed, the cursor shown."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        _main(argv)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main(argv: list[str] | None) -> None:
    try:
        app.main(args=argv, prog_name="anebench", standalone_mode=False)
    except click.exceptions.Abort:
        err_console.print("interrupted: nothing was saved")
        sys.exit(130)
    except click.UsageError as exc:
        command = exc.ctx.command_path if exc.ctx else "anebench"
        err_console.print(f"[red]error:[/red] {exc.format_message()} (see '{command} --help')",
                          highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except UserError as exc:
        err_console.print(f"[red]error:[/red] {escape(clean_text(str(exc)))}", highlight=False, soft_wrap=True)
        sys.exit(UserError.exit_code)
    except MeasurementError as exc:
        err_console.print(f"[red]measurement refused:[/red] {escape(clean_text(str(exc)))}", highlight=False,
                          soft_wrap=True)
        sys.exit(MeasurementError.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted: nothing was saved", highlight=False)
        sys.exit(130)


if __name__ == "__main__":
    main()
