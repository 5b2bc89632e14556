"""`anebench decode MODEL`: one token's weight + KV stream measured on each engine, beside its prediction.

The stream comes from the config (workloads/decode_stream.py); numpy, torch and MLX run it as a chain of
matvecs (engines/decode.py) through the same ``measure_workload`` as every suite, so timing, the output
check, energy (--power) and the record are made the same way. The prediction prices the token's dispatches
with the overhead + bandwidth curve of a sweep of the same engine and device: a stored one (the results
store, newest first), else a small sweep run here, said so (as `latency` does).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from dataclasses import replace as dc_replace

from ...engines import PUBLISHED_ANE_ENGINE
from ...engines.base import Engine
from ...engines.decode import DecodeEngine
from ...errors import UserError
from ...measure.decode_predict import PREDICTION_RULE, SweepCurve, seconds_per_token
from ...measure.sweep import CACHE_FACTOR, MiB
from ...model import GB, ChunkTime, DecodeBytes, DecodePrediction, DecodeSection, ResultRecord
from ...workloads import resolve_workload
from ...workloads.decode_stream import accounting
from ...workloads.models import DecodeWorkload
from ..executor import active_executor
from ..session import MeasureHooks, RunOptions
from . import sweep as sweep_suite
from .common import ProgressFactory, no_progress
from .decode_plan import DEFAULT_CHUNK_BYTES, token_dispatches
from .sweep import DEFAULT_MAX_CACHE_FACTOR

QUICK_SWEEP_MAX_BYTES = 512 * MiB
QUICK_SWEEP_POINTS = 8
QUICK_SWEEP_RUNS = 15
QUICK_SWEEP_BUDGET_S = 0.5


# The Mac campaign's decode step: one small public config on the Neural Engine, the GPU and the CPU, power on.
CAMPAIGN_MODEL = "qwen3-0.6b"
CAMPAIGN_DEPTHS = (0, 2048)
CAMPAIGN_TARGETS = ((PUBLISHED_ANE_ENGINE, "ane"), ("mlx", "gpu"), ("mlx", "cpu"))


def campaign_targets() -> tuple[list[DecodeTarget], list[str]]:
    """The campaign's targets this host has, and a line for each it lacks."""
    from ...engines import available_engine

    found, missing = [], []
    for name, device in CAMPAIGN_TARGETS:
        engine = available_engine(name)
        if engine is not None and device in engine.devices():
            found.append(DecodeTarget(engine, device))
        else:
            missing.append(f"{name}:{device}: not available here, left out of the decode campaign")
    return found, missing


@dataclass
class DecodeTarget:
    engine: Engine
    device: str


@dataclass
class Predicted:
    """A prediction (or why there is none) for one engine, device and depth."""

    engine: str
    device: str
    workload: DecodeWorkload
    run_dtype: str
    prediction: DecodePrediction | None
    error: str | None


@dataclass
class DecodeSuite:
    records: list[ResultRecord] = field(default_factory=list)
    predicted: list[Predicted] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def stored_curve(
    saved: Sequence[ResultRecord], engine: str, device: str, host_fingerprint: str | None
) -> tuple[SweepCurve, ResultRecord] | None:
    """The newest fitted sweep of ``engine:device`` (on this host where given), with its
    points past the knee."""
    from .latency import newest_sweep_fit

    newest = newest_sweep_fit(saved, engine, device, host_fingerprint)
    if newest is None or newest.sweep is None or newest.sweep.fit is None:
        return None
    fit, knee = newest.sweep.fit, newest.sweep.knee_bytes or 0
    same = [
        r
        for r in saved
        if r.suite == "sweep"
        and r.sweep is not None
        and r.sweep.fit == fit
        and r.engine.name == engine
        and r.engine.device == device
    ]
    points = [
        (r.workload.weight_bytes, r.latency_s() or 0.0) for r in same if r.workload.weight_bytes >= knee
    ]
    return SweepCurve(fit.overhead_s, fit.bandwidth_gbps * GB, tuple(points)), newest


def predict(
    workload: DecodeWorkload,
    engine: Engine,
    run_dtype: str,
    curve: SweepCurve,
    source: str,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
) -> DecodePrediction:
    sent = token_dispatches(workload, engine, run_dtype, chunk_bytes)
    seconds = seconds_per_token([d.bytes for d in sent], curve)
    return DecodePrediction(
        tokens_per_s=1 / seconds,
        seconds_per_token=seconds,
        dispatches=len(sent),
        overhead_s=max(0.0, curve.overhead_s),
        bandwidth_gbps=curve.bandwidth_bps / GB,
        source=source[:2000],
        rule=PREDICTION_RULE,
    )


def run_dtype_of(target: DecodeTarget, workload: DecodeWorkload) -> str:
    return target.engine.decode_dtype or target.engine.dtype_for(workload, target.device).run_dtype


def decode_section(workload: DecodeWorkload, run_dtype: str, predicted: Predicted | None) -> DecodeSection:
    m = workload.facts
    rows = accounting(m, workload.depth, run_dtype)
    return DecodeSection(
        model=m.name,
        family=m.family,
        config_source=m.source[:2000],
        weights="checkpoint" if workload.checkpoint is not None else "synthetic",
        depth=workload.depth,
        layers=m.layers,
        stream_bytes=workload.bytes_as(run_dtype),
        stored_bytes=sum(r.stored_bytes for r in rows),
        accounting=[DecodeBytes(**r.__dict__) for r in rows],
        prediction=predicted.prediction if predicted else None,
        prediction_error=predicted.error if predicted else "not predicted",
    )


def curve_for(
    target: DecodeTarget,
    saved: Sequence[ResultRecord],
    saved_from: str | None,
    host_fingerprint: str | None,
    options: RunOptions,
    sweep_if_missing: bool,
    progress: ProgressFactory,
    note: Callable[[str], None],
) -> tuple[SweepCurve | None, str]:
    """(curve, where it came from) or (None, why there is none)."""
    label = f"{target.engine.name}:{target.device}"
    found = stored_curve(saved, target.engine.name, target.device, host_fingerprint)
    if found is not None:
        curve, record = found
        source = f"the sweep of {record.created:%Y-%m-%d %H:%M} in {saved_from or 'the results given'}"
        note(f"{label}: prediction from {source}")
        return curve, source
    if not sweep_if_missing:
        return None, f"no stored sweep of {label} on this host"
    if not target.engine.available():  # an engine that plans anywhere but does not run here
        return None, (
            f"no stored sweep of {label} on this host, and {target.engine.title} cannot run a small one "
            "here; "
            "ingest or store a sweep of this Mac"
        )
    return quick_curve(target, options, progress, note)


def quick_curve(
    target: DecodeTarget, options: RunOptions, progress: ProgressFactory, note: Callable[[str], None]
) -> tuple[SweepCurve | None, str]:
    """A sweep of seconds that reaches past the cache (a decode step's weights always do): 1 MiB to 8x the
    device's cache (at least 64 MiB, at most QUICK_SWEEP_MAX_BYTES), QUICK_SWEEP_POINTS sizes."""
    engine, device = target.engine, target.device
    label = f"{engine.name}:{device}"
    cache = engine.cache_bytes(device)
    top = min(QUICK_SWEEP_MAX_BYTES, max(64 * MiB, DEFAULT_MAX_CACHE_FACTOR * (cache or 0)))
    try:
        plan = sweep_suite.plan_sweep(
            engine,
            device,
            1 * MiB,
            top,
            QUICK_SWEEP_POINTS,
            cache if cache and CACHE_FACTOR * cache < top else None,
            options.host,
        )
        quick = dc_replace(
            options,
            runs=QUICK_SWEEP_RUNS,
            time_budget_s=QUICK_SWEEP_BUDGET_S,
            suite="latency-sweep",
            power=False,
        )
        swept = sweep_suite.run_sweep(
            engine, device, resolve_workload("llama_lm_head"), plan, quick, progress
        )
    except UserError as exc:
        return None, f"no stored sweep of {label}, and a small one could not run: {exc}"
    span = f"{len(plan.sizes)} sizes, {plan.sizes[0] / 1e6:.3g}-{plan.sizes[-1] / 1e6:.3g} MB"
    if swept.analysis.fit is None:
        return (
            None,
            f"no stored sweep of {label}; the small sweep run here ({span}) has no fit: {swept.error}",
        )
    fit, knee = swept.analysis.fit, swept.analysis.knee.size_bytes or 0
    points = tuple(
        (r.workload.weight_bytes, r.latency_s() or 0.0)
        for r in swept.records
        if r.workload.weight_bytes >= knee
    )
    curve = SweepCurve(fit.overhead_s, fit.bandwidth_bps, points)
    source = f"a small sweep run here ({span}); `anebench sweep --store` keeps a full one for next time"
    note(f"{label}: no stored sweep; prediction from {source}")
    return curve, source


def run_decode(
    targets: Sequence[DecodeTarget],
    workloads: Sequence[DecodeWorkload],
    options: RunOptions,
    saved: Sequence[ResultRecord] = (),
    saved_from: str | None = None,
    host_fingerprint: str | None = None,
    predict_only: bool = False,
    sweep_if_missing: bool = True,
    chunk_bytes: int = DEFAULT_CHUNK_BYTES,
    progress: ProgressFactory = no_progress,
    on_note: Callable[[str], None] | None = None,
) -> DecodeSuite:
    """Predict (and, unless ``predict_only``, measure) each workload (one per depth) on each target."""
    suite = DecodeSuite()

    def note(line: str) -> None:
        suite.notes.append(line)
        if on_note is not None:
            on_note(line)

    for target in targets:
        curve, source = curve_for(
            target, saved, saved_from, host_fingerprint, options, sweep_if_missing, progress, note
        )
        for workload in workloads:
            run_dtype = run_dtype_of(target, workload)
            prediction = (
                predict(workload, target.engine, run_dtype, curve, source, chunk_bytes)
                if curve is not None
                else None
            )
            predicted = Predicted(
                target.engine.name,
                target.device,
                workload,
                run_dtype,
                prediction,
                None if curve is not None else source,
            )
            suite.predicted.append(predicted)
            if predict_only:
                continue
            label = f"decode {target.engine.name}:{target.device} {workload.name}"
            loaded: list = []
            measurement = active_executor().measure_parts(
                DecodeEngine(target.engine, chunk_bytes), target.device, workload,
                dc_replace(options, suite="decode"), progress(label, options.runs),
                MeasureHooks(on_prepared=loaded.append),
            )
            section = decode_section(workload, measurement.facts.run_dtype, predicted)
            timeline = getattr(loaded[0], "timeline", None) if loaded else None
            if timeline is not None:  # chained predicts: each chunk's median over the timed calls
                section.timeline = [ChunkTime(name=n, bytes=b, median_s=t)
                                    for n, b, t in timeline(len(measurement.timing.samples_s))]
            suite.records.append(measurement.record({"decode": section}))
    return suite
