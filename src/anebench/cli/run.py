"""`anebench run`: the CLI builds a run request from its settings and options, calls the library's one
entry for it (orchestration/entry.py: plan, checks, measurement, interrupt), and maps the outcome to
output; `engines` and `info` are cli/host_info.py's."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict

import click

from ..engines import PUBLISHED_ANE_ENGINE
from ..errors import UserError
from ..measure.timing import DEFAULT_REPETITIONS, DEFAULT_RUNS
from ..model import ResultRecord
from ..orchestration import entry
from ..orchestration.campaign import Plan, StepStarted, Unrunnable
from ..orchestration.runplan import Mitigations, PlannedStep, mac_campaign_plan
from .common import (
    QUIET,
    StepSaver,
    announce_workloads,
    emit,
    err_console,
    flags,
    flush_warnings,
    hold_signals,
    measuring_options,
    out_console,
    progress_bar,
    say,
    warn,
    workload_inputs,
)
from .console import wraps
from .host_info import engines, info
from .options import dry_run_option
from .params import power_option, timing_flags
from .published_beside import show_family_comparison
from .results import store_measured
from .settings import Settings, store_options
from .tables import FittingTable
from .terminal import PointLog


def say_line(line: str | None) -> None:
    if line:
        say(line)


run_options = timing_flags(
    DEFAULT_RUNS,
    None,
    runs_help="Timed calls per measurement, split over the repetitions.",
    budget_help="Stop timing after this many seconds of calls (at least one run).",
)


def repetition_options(func):
    """How a measurement repeats: R independent repetitions, optionally each in a fresh process."""
    func = click.option(
        "--fresh-processes",
        is_flag=True,
        help="Run each repetition in a new process (re-draws memory placement and process "
        "state; pyperf's workers).",
    )(func)
    func = click.option(
        "--repetitions",
        "-r",
        type=click.IntRange(1, 1000),
        default=DEFAULT_REPETITIONS,
        show_default=True,
        help="Independent repetitions, each with its own warmup; their spread gives the "
        "headline (between-run) interval. 1: that interval is unknown.",
    )(func)
    return func


def interleave_options(func):
    """`run --interleave [--interleave-threads 1,2]`: configurations alternated A B A B ... per repetition."""
    func = click.option(
        "--interleave-threads",
        default=None,
        metavar="N,M,...",
        help="With --interleave: each engine and workload once per thread limit (e.g. 1,2).",
    )(func)
    return click.option(
        "--interleave",
        is_flag=True,
        help="Alternate the repetitions of every configuration (engines x workloads x threads) A B A B ..., "
        "so all see the same host phases; `compare` then pairs them repetition by repetition.",
    )(func)


def thread_counts(text: str | None) -> list[int | None]:
    """--interleave-threads "1,2" -> [1, 2]; none given: [None] (each engine's own thread count)."""
    if text is None:
        return [None]
    counts = []
    for part in text.split(","):
        if not part.strip().isdigit() or not 1 <= int(part) <= 4096:
            raise UserError(f"--interleave-threads {text!r}: give thread counts from 1 to 4096 separated by "
                            "commas, e.g. 1,2")
        counts.append(int(part))
    return list(counts)


def plan_table(plan: list[PlannedStep], title: str) -> FittingTable:
    rows = [
        [step.engine, step.device, step.workload, "on" if step.power else "off", step.energy_source]
        for step in plan
    ]
    return FittingTable(
        ["engine", "device", "workload", "power", "energy source"], rows, title, wrap={"energy source"}
    )


def show_plan(plan: list[PlannedStep], title: str, fmt: str) -> None:
    if fmt == "json":
        sys.stdout.write(json.dumps({"plan": [asdict(step) for step in plan]}, indent=1) + "\n")
        return
    out_console().print(plan_table(plan, title))


def show_unrunnable(unrunnable: list[Unrunnable], planned: list[PlannedStep], fmt: str) -> None:
    """A dry run naming engines this host cannot run: why, and what a host that can would do; the plan of
    the named engines that can run here, if any."""
    if fmt == "json":
        document = {"plan": [asdict(step) for step in planned],
                    "unavailable": [asdict(u) for u in unrunnable]}
        sys.stdout.write(json.dumps(document, indent=1) + "\n")
        return
    console = out_console()
    if planned:
        console.print(plan_table(planned, "anebench run on this host"))
    for item in unrunnable:
        console.print(f"dry run: engine {item.engine} cannot run on this host: {item.reason}", markup=False,
                      highlight=False, soft_wrap=not wraps(console))
        for note in item.notes:
            console.print(f"  {note}", markup=False, highlight=False, soft_wrap=not wraps(console))
    console.print("nothing was built or measured", markup=False, highlight=False)


def mitigation_options(func):
    """The idle-state mitigations of a run (K predicts and R weight sets: engines with call mitigations);
    each is recorded in method.mitigations."""
    func = click.option(
        "--repeat",
        type=click.IntRange(1, 64),
        default=1,
        show_default=True,
        help=f"-e {PUBLISHED_ANE_ENGINE}: the bundle reads R distinct weight sets per call (longer ANE "
        "tasks).",
    )(func)
    func = click.option(
        "--batch",
        "deprecated_batch",
        type=click.IntRange(1, 4096),
        default=None,
        hidden=True,
        help="Deprecated name of --predicts-per-call.",
    )(func)
    func = click.option(
        "--predicts-per-call",
        "predicts",
        type=click.IntRange(1, 4096),
        default=1,
        show_default=True,
        help=f"-e {PUBLISHED_ANE_ENGINE}: K predicts per call, each re-reading every weight (longer calls; "
        "not "
        "a batch: for several tokens per weight read build with --tokens).",
    )(func)
    func = click.option(
        "--keep-awake",
        is_flag=True,
        help="A separate process keeps one CPU core busy during warmup and timing; its CPU share is "
        "recorded.",
    )(func)
    return func


class RunDisplay:
    """The CLI's side of a run, as the library's run events: the workloads announced and --out checked
    once the plan is known, the busy warning before measuring, the progress bars (one line per finished
    step when piped), and a checkpoint of the records after each step."""

    def __init__(self, settings: Settings, interleave: bool):
        self.settings, self.interleave = settings, interleave
        self.saver: StepSaver | None = None
        self.log, self.piped = PointLog(), not err_console.is_terminal and settings.verbosity > QUIET

    def events(self) -> entry.RunEvents:
        return entry.RunEvents(self.planned, self.warn, self.progress, self.finished)

    def planned(self, plan: Plan, measuring: bool) -> None:
        announce_workloads(plan.workloads)  # which real weights a checkpoint workload measures
        self.settings = self.settings.reading(*workload_inputs(plan.workloads))
        if measuring:
            self.settings.check_out_path()
            self.saver = StepSaver("run", self.settings, len(plan.steps))

    def warn(self, text: str) -> None:
        warn(text)
        flush_warnings()  # said now, before measuring: only once

    @contextmanager
    def progress(self, steps: int) -> Iterator[StepStarted]:
        with progress_bar() as bars:  # its exit restores the cursor, however the run ends
            if self.interleave:

                def bar(label: str, total: int) -> Callable[[int, int], None]:
                    task = bars.add_task(label, total=total)
                    return lambda done, total: bars.update(task, completed=done)

                yield bar
                return

            def started(label: str, total: int) -> Callable[[int, int], None]:
                if steps > 1:  # "(2/5)": which step, and what the time-left estimate counts
                    label = f"{label} ({len(bars.tasks) + 1}/{steps})"
                if self.piped:  # a log gets one line per finished step, not redraws
                    say_line(self.log.start(label))
                task = bars.add_task(f"{label} (loading)", total=total)
                return lambda done, total: bars.update(task, completed=done, description=label)

            yield started

    def finished(self, records: list[ResultRecord]) -> None:
        if self.saver is not None:
            self.saver(records)


@click.command()
@store_options
@measuring_options
@run_options
@repetition_options
@power_option
@mitigation_options
@interleave_options
@dry_run_option("Print the plan (engine, device, workload, power) and measure nothing.")
@click.option(
    "--plan-for",
    type=click.Choice(["mac"]),
    default=None,
    help="With --dry-run: the plan `anebench run` with no options follows on that host (mac: the "
    "campaign with every engine, power on).",
)
@flags(batch="--predicts-per-call")  # a call too short to time: in `run`, K predicts per call lengthen it
def run(
    settings: Settings,
    engines,
    device,
    workloads,
    runs: int,
    time_budget: float | None,
    warmup: int | None,
    repetitions: int = DEFAULT_REPETITIONS,
    fresh_processes: bool = False,
    power: bool | None = None,
    keep_awake: bool = False,
    predicts: int = 1,
    deprecated_batch: int | None = None,
    repeat: int = 1,
    dry_run: bool = False,
    plan_for: str | None = None,
    interleave: bool = False,
    interleave_threads: str | None = None,
) -> None:
    """Measure weight-read bandwidth (default: llama_lm_head on the best engine here; on a Mac, the
    published campaign with energy: ANE heads, then the same head on GPU and CPU)."""
    if plan_for is not None:
        if not dry_run:
            raise UserError(f"--plan-for {plan_for}: only with --dry-run (this host cannot measure another)")
        if engines or device or workloads:
            raise UserError(
                f"--plan-for {plan_for} shows the campaign of `anebench run` with no options; "
                "drop --engine, --device and --workload"
            )
        show_plan(
            mac_campaign_plan(power is not False), "anebench run on a Mac (every engine installed)",
            settings.format,
        )
        return
    if deprecated_batch is not None:
        say("--batch is deprecated: it is --predicts-per-call (K predicts, each re-reading every weight)")
        predicts = deprecated_batch if predicts == 1 else predicts
    if interleave_threads is not None and not interleave:
        raise UserError("--interleave-threads: only with --interleave")
    if interleave and keep_awake:
        raise UserError("--interleave with --keep-awake: the spinner is set up per measurement; drop one")
    request = entry.RunRequest(
        engines,
        device,
        workloads,
        entry.Timing(runs, time_budget, warmup, settings.threads, repetitions, fresh_processes),
        power,
        Mitigations(keep_awake, predicts, repeat),
        interleave,
        tuple(thread_counts(interleave_threads)),
        dry_run,
    )
    display = RunDisplay(settings, interleave)
    outcome = entry.run(request, display.events())
    show_outcome(outcome, display, repetitions)


def show_outcome(outcome: entry.RunOutcome, display: RunDisplay, repetitions: int) -> None:
    """The outcome as output: a dry run's plan; else the results (saved first), --store, the figure
    beside the published ones, and what to run next. An interrupted run saves its finished steps, says
    so and exits 130."""
    settings = display.settings
    if not outcome.measured:
        if outcome.unrunnable:
            show_unrunnable(outcome.unrunnable, outcome.plan, settings.format)
        else:
            show_plan(outcome.plan, "anebench run on this host", settings.format)
        return
    if outcome.configurations:
        emit(outcome.records, "run", settings)
        finish_run(outcome.records, settings)
        say(f"interleaved: {outcome.configurations} configurations in {repetitions} rounds; "
            "`anebench compare FILE` pairs them repetition by repetition")
        return
    out = display.saver.final_out() if display.saver is not None else settings.out
    if display.piped and not outcome.interrupted:  # after the bars' last frame, so the log reads in order
        say_line(display.log.finish())
    if outcome.interrupted:
        hold_signals()  # a second Ctrl-C (or a SIGHUP) cannot cut the save of the finished steps
        saved = emit(outcome.records, "run", settings, out)
        where = f"saved to {saved}" if saved else "not saved (--no-save)"
        say(
            f"interrupted: the {len(outcome.records)} finished step(s) of {outcome.steps} are {where}",
            quiet_too=True,
        )
        raise SystemExit(130)
    emit(outcome.records, "run", settings, out)
    finish_run(outcome.records, settings)  # --store, and the figure beside the published ones
    if outcome.hint:
        say(outcome.hint)
    if outcome.campaign:
        say("the campaign's decode step: `anebench decode --campaign` (qwen3-0.6b on the ANE, GPU and CPU, "
            "power on; docs/decode.md)")


def finish_run(records: list[ResultRecord], settings: Settings) -> None:
    """After a run is saved: store it if asked, then show it beside the published figures (stderr
    under a machine format, so stdout stays one document)."""
    if settings.store:
        store_measured(records, settings.db)
    show_family_comparison(records, err_console if settings.machine else out_console())


def register(app: click.Group) -> None:
    for command in (run, engines, info):
        app.add_command(command)


__all__ = ["err_console", "power_option", "register", "repetition_options", "run_options"]
