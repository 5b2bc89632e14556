"""Suite results as what they are: a sweep curve, a roofline, latency, compute, concurrency runs.

Records that are not single-call bandwidth results never enter the bandwidth matrix; each becomes a point
of its suite's group (a curve or table per chip, engine, device and workload), with the group's result
(the fit, the ridge, the verdict) re-checked against the stated gates when the report is made, so a
stored fit that fails them is shown as failed, never as a bandwidth.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from ..measure.line_fit import BELOW_RESOLUTION, FIT_GATES, LineFit, fit_failures
from ..measure.roofline import RIDGE_GATES, RIDGE_RULE, ridge_failures
from ..measure.sweep import cache_bound
from ..model import MeasurementKey, ResultRecord
from ..system.chips import memory_bound_gbps

# The report's section order, and the title of each suite's groups.
SUITE_TITLES = {"decode": "Decode",
                "sweep": "Sweep", "roofline": "Roofline", "latency": "Latency", "compute": "Compute",
                "concurrency": "Concurrency", "quant": "Quantisation",
                "batched": "Runs with batch or tokens > 1"}
Figures = dict[str, float | int | str | bool | None]


@dataclass
class SuitePoint:
    """One record of a suite: what identifies the point (batch, tokens, copy, phase, threads) and its
    figures."""

    suite: str
    chip: str
    config: str
    engine: str
    device: str
    workload: str
    fingerprint: str
    batch: int
    tokens: int
    copy: int | None
    phase: str | None
    threads: int | None
    weight_bytes: int
    latency_s: float | None
    statistic: str
    gbps: float | None
    flop_per_s: float | None
    provenance: str
    variant: str | None = None  # quant: fp16 | int8 | lut6 | lut4
    quant_verdict: str | None = None  # quant: what the variant streams (None: the fp16 reference)
    gbps_fp16_equivalent: float | None = None  # quant: the fp16 head's bytes over this variant's latency
    depth: int | None = None  # decode: the context depth of the KV cache read
    predicted_tokens_per_s: float | None = None  # decode: the sweep curve's prediction


@dataclass
class SuiteGroup:
    """One curve or table: a sweep, a roofline, a concurrency run, or the latency/compute results."""

    kind: str  # a key of SUITE_TITLES
    chip: str
    engine: str
    device: str
    workload: str
    points: list[SuitePoint]
    result: str  # one line: the fit, the ridge, the verdict with its phases, or "... failed: <reason>"
    figures: Figures = field(default_factory=dict)  # the result as numbers (none when it failed)
    rule: str = ""
    # the group's records, smallest first: the HTML report draws the suite's own plot from them
    records: list[ResultRecord] = field(default_factory=list, repr=False, compare=False)

    @property
    def title(self) -> str:
        return f"{SUITE_TITLES[self.kind]}: {self.workload} on {self.engine}:{self.device}, {self.chip}"


def _threads(record: ResultRecord) -> int | None:
    section = record.concurrency
    for value in (section.threads_per_copy if section else None, record.method.threads,
                  record.engine.details.get("blas_threads")):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _phase(record: ResultRecord) -> str | None:
    return record.concurrency.phase if record.concurrency is not None else None


def _copy(record: ResultRecord) -> int | None:
    return record.concurrency.copy_ if record.concurrency is not None else None


def suite_kind(record: ResultRecord) -> str:
    if record.decode is not None:
        return "decode"
    if record.sweep is not None:
        return "sweep"
    if record.roofline is not None:
        return "roofline"
    if record.latency is not None:
        return "latency"
    if record.compute is not None:
        return "compute"
    if record.suite == "concurrency" or record.concurrency is not None:
        return "concurrency"
    if record.quant is not None:
        return "quant"
    return "batched"


def point_of(record: ResultRecord, chip: str, config: str) -> SuitePoint:
    flops = record.roofline.flop_per_s if record.roofline else None
    if record.compute is not None:
        flops = record.compute.tflop_per_s * 1e12
    quant = record.quant
    return SuitePoint(
        suite=record.suite, chip=chip, config=config, engine=record.engine.name, device=record.engine.device,
        workload=record.workload.name, fingerprint=record.workload.fingerprint, batch=record.workload.batch,
        tokens=record.workload.tokens, copy=_copy(record), phase=_phase(record), threads=_threads(record),
        weight_bytes=record.workload.weight_bytes, latency_s=record.latency_s(),
        statistic=record.method.statistic, gbps=record.gbps, flop_per_s=flops, provenance=record.provenance,
        variant=quant.variant if quant else None, quant_verdict=quant.verdict if quant else None,
        gbps_fp16_equivalent=quant.gbps_fp16_equivalent if quant else None,
        depth=record.decode.depth if record.decode else None,
        predicted_tokens_per_s=record.decode.prediction.tokens_per_s
        if record.decode and record.decode.prediction else None,
    )


def _bound(chip: str, config: str) -> tuple[float, str] | None:
    return memory_bound_gbps(chip, config)


def _sweep_group(key: tuple, records: list[ResultRecord], points: list[SuitePoint]) -> SuiteGroup:
    first = records[0].sweep
    assert first is not None
    figures: Figures = {"knee_bytes": first.knee_bytes, "cache_peak_gbps": first.cache_peak_gbps}
    error = first.fit_error
    fit = first.fit
    if fit is not None:
        line = LineFit(fit.overhead_s, fit.bandwidth_gbps * 1e9, fit.r_squared, fit.median_abs_rel_residual,
                       fit.max_abs_rel_residual, fit.points, fit.method, fit.overhead_se_s)
        knee = first.knee_bytes or 0
        sizes = [p.weight_bytes for p in points]
        rates = [p.gbps or 0.0 for p in points]
        bound = _bound(key[0], key[1]) or cache_bound(sizes, rates, sum(size < knee for size in sizes))
        failures = fit_failures(line, *(bound or (None, "")))
        error = "; ".join(failures) or None
    if fit is None or error:
        result = f"fit failed: {error or 'not stated'}"
    else:
        figures |= {"bandwidth_gbps": fit.bandwidth_gbps, "overhead_us": fit.overhead_s * 1e6,
                    "overhead_se_us": fit.overhead_se_s * 1e6 if fit.overhead_se_s is not None else None,
                    "overhead_resolved": fit.overhead_resolved, "r_squared": fit.r_squared}
        overhead = (f"{fit.overhead_s * 1e6:.1f} us" if fit.overhead_resolved
                    else BELOW_RESOLUTION if fit.overhead_s <= 0
                    else f"not resolved ({fit.overhead_s * 1e6:.0f} us)")
        result = (
            f"fit: bandwidth {fit.bandwidth_gbps:.2f} GB/s, overhead {overhead}, R² {fit.r_squared:.4f}, "
            f"{fit.points} sizes past the knee"
        )
    figures["fit_error"] = error
    return SuiteGroup("sweep", key[0], key[2], key[3], key[4], points, result, figures,
                      f"{first.knee_rule or ''}; {FIT_GATES}")


def _roofline_group(key: tuple, records: list[ResultRecord], points: list[SuitePoint]) -> SuiteGroup:
    first = records[0].roofline
    assert first is not None
    # The vectors each call multiplies: the batch, or a token-batched bundle's tokens per predict (batch 1).
    batches = [r.roofline.batch if r.roofline else p.batch for r, p in zip(records, points)]
    unit = "tokens" if any(p.tokens > 1 for p in points) else "batch"
    ridge, error = first.ridge_batch, first.ridge_error
    if ridge is not None:  # stored before the gates existed, or re-checked: the gates decide
        failures = ridge_failures(
            batches, ridge, first.compute_bound, first.memory_gbps, _bound(key[0], key[1])
        )
        error = "; ".join(failures) or None
        ridge = None if failures else ridge
    figures: Figures = {"ridge_batch": ridge, "ridge_error": error, "baseline_batch": first.baseline_batch,
                        "peak_flop_per_s": first.peak_flop_per_s, "memory_gbps": first.memory_gbps,
                        "compute_bound": first.compute_bound}
    if unit == "tokens":
        found = f"ridge at {ridge} tokens per predict (from {first.baseline_batch} tokens)"
    else:
        found = f"ridge at batch {ridge} (from batch {first.baseline_batch})"
    result = found if ridge else f"ridge not found: {error or 'not stated'}"
    result += f"; peak {first.peak_flop_per_s / 1e9:.2f} GFLOP/s; {unit}-1 {first.memory_gbps:.2f} GB/s"
    return SuiteGroup("roofline", key[0], key[2], key[3], key[4], points, result, figures,
                      f"{RIDGE_RULE}; {RIDGE_GATES}")


def _decode_group(key: tuple, records: list[ResultRecord], points: list[SuitePoint]) -> SuiteGroup:
    """One model on one engine and device: tok/s against depth, each beside its prediction."""
    parts: list[str] = []
    figures: Figures = {}
    for point in sorted(points, key=lambda p: p.depth or 0):
        if not point.latency_s:
            continue
        rate = 1 / point.latency_s
        figures[f"tokens_per_s_depth_{point.depth}"] = rate
        predicted = point.predicted_tokens_per_s
        parts.append(f"depth {point.depth}: {rate:.3g} tok/s"
                     + (f" (predicted {predicted:.3g}, {(predicted - rate) / rate:+.0%})"
                        if predicted else ""))
    note = records[0].decode.note if records[0].decode else ""
    return SuiteGroup("decode", key[0], key[2], key[3], key[4], points, "; ".join(parts), figures, note)


def _simple_group(kind: str, key: tuple, records: list[ResultRecord], points: list[SuitePoint]) -> SuiteGroup:
    if kind == "compute":
        results = [r.compute for r in records if r.compute]
        text = "; ".join(f"batch {r.workload.batch}: {c.tflop_per_s:.4f} TFLOP/s"
                         f"{'' if c.compute_bound else ' (not clearly compute-bound)'}"
                         for r, c in zip(records, results))
        return SuiteGroup(kind, key[0], key[2], key[3], key[4], points, text,
                          {"tflop_per_s": max(c.tflop_per_s for c in results)}, results[0].rule)
    if kind == "latency":
        lats = [r.latency for r in records if r.latency]
        text = "; ".join(f"dispatch {lat.median_us:.2f} us median, {lat.p95_us:.2f} us p95" for lat in lats)
        return SuiteGroup(kind, key[0], key[2], key[3], key[4], points, text,
                          {"median_us": lats[0].median_us, "p95_us": lats[0].p95_us},
                          "the smallest workload the engine accepts, timed call by call")
    if kind == "quant":
        sections = [r.quant for r in records if r.quant]
        return SuiteGroup(kind, key[0], key[2], key[3], key[4], points, sections[0].inference,
                          {"inference": sections[0].inference}, sections[0].rule)
    return SuiteGroup(kind, key[0], key[2], key[3], key[4], points, "", {},
                      "one call reads every weight once per batch element and token; not a matrix figure")


def _group_key(kind: str, record: ResultRecord, chip: str, config: str) -> tuple:
    base = (chip, config, record.engine.name, record.engine.device, record.workload.name)
    if kind == "decode" and record.decode is not None:  # one model's depths share a table
        return (chip, config, record.engine.name, record.engine.device, record.decode.model,
                record.engine.run_dtype, record.host.fingerprint)
    if kind == "sweep" and record.sweep is not None:  # one sweep: its sizes share the analysis
        s = record.sweep
        label = f"hidden {record.workload.shape[1]}, {record.workload.dtype}"
        return (
            chip,
            config,
            record.engine.name,
            record.engine.device,
            label,
            record.host.fingerprint,
            s.points,
            s.knee_bytes,
            s.fit_error,
            s.fit.bandwidth_gbps if s.fit else None,
            s.cache_peak_gbps,
        )
    if kind == "roofline" and record.roofline is not None:
        r = record.roofline
        return (*base, record.host.fingerprint, r.peak_flop_per_s, r.memory_gbps, r.baseline_batch)
    if kind == "quant" and record.quant is not None:  # one quant run: its variants share the inference
        q = record.quant
        name = record.workload.name
        head = name.removesuffix(f"_{q.variant}") if q.variant != "fp16" else name
        return (chip, config, record.engine.name, record.engine.device, head, record.host.fingerprint,
                q.fp16_bytes, q.inference)
    if kind == "concurrency":
        fingerprint = (record.concurrency.base_fingerprint if record.concurrency else None) or \
            record.workload.fingerprint
        return (*base, fingerprint)
    return (*base, record.workload.fingerprint if kind == "batched" else "")


def suite_groups(entries: list[tuple[ResultRecord, str, str]],
                 verdicts: dict[MeasurementKey, tuple[str, Figures]]) -> list[SuiteGroup]:
    """Groups of (record, chip label, config) entries; ``verdicts`` maps each chip's measurement (across
    configurations) to the concurrency verdict line and figures the aggregate found for it."""
    grouped: dict[tuple, list[ResultRecord]] = defaultdict(list)
    for record, chip, config in entries:
        kind = suite_kind(record)
        group = (kind, *_group_key(kind, record, chip, config))
        grouped[group].append(record)
    groups = []
    for (kind, *key), records in grouped.items():
        records.sort(
            key=lambda r: (r.workload.weight_bytes, r.workload.batch, _copy(r) or 0, _phase(r) or "")
        )
        points = [point_of(r, key[0], key[1]) for r in records]
        if kind == "sweep":
            groups.append(_sweep_group(tuple(key), records, points))
        elif kind == "roofline":
            groups.append(_roofline_group(tuple(key), records, points))
        elif kind == "decode":
            groups.append(_decode_group(tuple(key), records, points))
        elif kind == "concurrency":
            missing: tuple[str, Figures] = ("no verdict: a solo or combined figure is missing", {})
            verdict, figures = verdicts.get(MeasurementKey(key[5], key[2], key[3], key[0]), missing)
            groups.append(SuiteGroup(kind, key[0], key[2], key[3], key[4], points, verdict, figures,
                                     "each copy solo, then together from a common start"))
        else:
            groups.append(_simple_group(kind, tuple(key), records, points))
        groups[-1].records = records
    order = list(SUITE_TITLES)
    groups.sort(key=lambda g: (order.index(g.kind), g.workload, g.chip, g.engine, g.device))
    return groups
