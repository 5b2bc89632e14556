"""The shell examples of README.md and docs/*.md, as the docs test reads them.

Convention (docs/developing.md): a shell example is a line `$ anebench ...` inside a ```console block.
Every such line is parsed against the real click command tree (an unknown command or option fails), then
executed, in the order of its page, in one scratch folder per page (so `--out a.json` on one line makes the
file that `compare a.json b.json` reads on a later one), and its exit code checked: 0, or N where the line
ends with `  # exit N`. A line ending with `  # not run here: <reason>` is parsed only.

Workloads too large for CI are swapped for small ones by SUBSTITUTIONS below, and the measuring commands
get few runs (SMALL_RUNS); the page shows what a user would type, the test runs its small twin.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^```(\w*)\s*$")
NOT_RUN = re.compile(r"\s{2,}#\s*not run here:\s*(?P<reason>\S.*)$")
EXIT = re.compile(r"\s{2,}#\s*exit\s+(?P<code>\d+)\s*$")
COMMENT = re.compile(r"\s{2,}#.*$")

# --- the small-workload substitution table ----------------------------------------------------------------
SMALL_HEAD = "lm_head:256x2048:fp32"  # 2.1 MB: a few ms per run on any CPU
# Named or large workloads -> SMALL_HEAD (the canonical heads are 1-2 GB and take a minute or more each).
LARGE_WORKLOAD = re.compile(r"^(llama_lm_head(_lut6)?|DeepHermes_lm_head|lm_head:\d+x\d+(:\w+)?)$", re.I)
SMALL_ENOUGH_BYTES = 64e6  # an lm_head:RxC workload under this runs as written
SMALL_RUNS = 6  # --runs above this is lowered to it; measuring commands without --runs get it
SMALL_BUDGET = "0.3"  # seconds: --time-budget above this is lowered to it
MEASURING = {"run", "sweep", "roofline", "latency", "compute", "concurrent", "quant", "decode"}
# What each measuring command gets when the page gives no workload (its default is the canonical head).
DEFAULT_WORKLOAD_FOR = {"run", "roofline", "concurrent", "quant"}
# Extra flags that keep a suite small when the page does not set them; (flag, value) added if absent.
SUITE_LIMITS = {
    "sweep": [("--max-mb", "4"), ("--cache-mb", "0.25"), ("--points", "4")],
    "roofline": [("--max-batch", "4")],
    "compute": [("--batch", "16"), ("-w", "lm_head:64x256:fp32")],
}
# A suite whose analysis fails its gates (a sweep's fit, a roofline's ridge, compute not compute-bound)
# exits 3 after saving and printing every point: on a small CI workload on a shared machine that is a
# result, not a rotten example, so a suite line without `# exit N` may end with 0 or 3.
ALSO_ACCEPTED = {"sweep": {3}, "roofline": {3}, "compute": {3}}


@dataclass
class Example:
    page: Path
    line_no: int
    text: str  # as shown, after "$ "
    argv: list[str]  # the shown command's arguments, after "anebench"
    run: bool = True
    reason: str = ""
    exit_code: int = 0
    path: list[str] = field(default_factory=list)  # the command names, e.g. ["store", "list"]
    stdout_to: str | None = None  # `> FILE`: the test writes the command's stdout there

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line_no}"


def examples(page: Path) -> list[Example]:
    """Every `$ anebench` line of the page's ```console blocks, in order."""
    found, in_console, fenced = [], False, False
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        fence = FENCE.match(line.strip())
        if fence:
            if fenced:
                fenced = in_console = False
            else:
                fenced, in_console = True, fence.group(1) == "console"
            continue
        stripped = line.strip()
        if not (in_console and stripped.startswith("$ anebench")):
            continue
        command = stripped[2:]
        example = Example(page, number, command, [])
        not_run = NOT_RUN.search(command)
        if not_run:
            example.run, example.reason = False, not_run.group("reason")
        code = EXIT.search(command)
        if code:
            example.exit_code = int(code.group("code"))
        words = shlex.split(COMMENT.sub("", command))
        if ">" in words:  # a shell redirection of stdout, the only one the pages use
            at = words.index(">")
            words, example.stdout_to = words[:at], words[at + 1]
        example.argv = words[1:]
        found.append(example)
    return found


class UnknownCommandLine(Exception):
    """A documented command line the CLI would refuse: an unknown command or option, a missing value."""


def parse(app: click.Group, argv: list[str]) -> list[str]:
    """Walk the click tree as click would, without running anything; the command path, e.g. ["run"].

    Raises UnknownCommandLine for an unknown command or option, or an option missing its value."""
    command: click.Command = app
    ctx = click.Context(app, info_name="anebench", resilient_parsing=False)
    rest, path = list(argv), []
    while True:
        parser = command.make_parser(ctx)
        try:
            _, rest, _ = parser.parse_args(rest)
        except click.UsageError as exc:
            raise UnknownCommandLine(f"{' '.join(['anebench', *path])}: {exc.format_message()}") from None
        if not isinstance(command, click.Group) or not rest:
            return path
        name = rest.pop(0)
        sub = command.get_command(ctx, name)
        if sub is None:
            raise UnknownCommandLine(f"{' '.join(['anebench', *path])}: no such command {name!r}")
        path.append(name)
        ctx = click.Context(sub, parent=ctx, info_name=name, resilient_parsing=False)
        command = sub


def _is_large(spec: str) -> bool:
    if not LARGE_WORKLOAD.match(spec):
        return False
    shape = re.match(r"^lm_head:(\d+)x(\d+)(?::(\w+))?$", spec)
    if not shape:
        return True  # a named canonical head
    size = {"fp32": 4}.get((shape.group(3) or "fp16").lower(), 2)
    return int(shape.group(1)) * int(shape.group(2)) * size > SMALL_ENOUGH_BYTES


def small_twin(argv: list[str], path: list[str]) -> list[str]:
    """The argv the test runs: large workloads swapped for SMALL_HEAD, runs and time budgets lowered, and
    the measuring commands kept small (the table above)."""
    command = path[0] if path else ""
    out: list[str] = []
    previous = ""
    for word in argv:
        if previous in ("-w", "--workload") and _is_large(word):
            word = SMALL_HEAD
        elif previous in ("--runs", "-n") and word.isdigit() and int(word) > SMALL_RUNS:
            word = str(SMALL_RUNS)
        elif previous == "--time-budget" and float(word) > float(SMALL_BUDGET):
            word = SMALL_BUDGET
        elif command == "build" and not previous and _is_large(word):
            word = SMALL_HEAD  # build's WORKLOAD argument
        out.append(word)
        previous = word if word.startswith("-") and "=" not in word else ""
    given = set(out)
    if command in MEASURING and "--dry-run" not in given:
        if command in DEFAULT_WORKLOAD_FOR and not given & {"-w", "--workload"}:
            out += ["-w", SMALL_HEAD]
        if command != "decode" and not given & {"--runs", "-n"}:
            out += ["--runs", str(SMALL_RUNS)]
        for flag, value in SUITE_LIMITS.get(command, []):
            if flag not in given:
                out += [flag, value]
    return out


__all__ = ["ALSO_ACCEPTED", "PAGES", "Example", "UnknownCommandLine", "examples", "parse", "small_twin"]
