"""The decode suite's tables: bytes per token by kind, measured beside predicted tok/s, a chained token's
chunks.

Measured figures come from the records (tok/s = 1 / the median seconds per token; GB/s = the stream's
bytes / that median); predicted ones from the record's decode section or a prediction-only run.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import DecodeBytes, DecodePrediction, ResultRecord
from .format import sig
from .term_table import TermTable, target


def accounting_table(title: str, rows: Sequence[DecodeBytes], stored_dtype: str, run_dtype: str) -> TermTable:
    table = TermTable(
        title,
        [
            "kind",
            "one matrix",
            "stored",
            "streamed",
            f"stored MB ({stored_dtype})",
            f"per token MB ({run_dtype})",
        ],
        [False, False, True, True, True, True],
    )
    for row in rows:
        table.rows.append(
            [
                row.kind,
                row.shape,
                str(row.stored_count),
                str(row.streamed_count),
                sig(row.stored_bytes / 1e6) if row.stored_bytes else "0",
                sig(row.streamed_bytes / 1e6) if row.streamed_bytes else "0",
            ]
        )
    stored = sum(r.stored_bytes for r in rows)
    streamed = sum(r.streamed_bytes for r in rows)
    table.rows.append(["total", "", "", "", sig(stored / 1e6), sig(streamed / 1e6)])
    table.notes.append(
        "stored: every matrix in the checkpoint's dtype (all experts; a tied head once, as the "
        "embedding); per token: what one decode step streams in the engine's dtype"
    )
    return table


def _error(measured: float | None, predicted: DecodePrediction | None) -> str:
    if measured is None or predicted is None:
        return "-"
    return f"{(predicted.tokens_per_s - measured) / measured:+.0%}"


def _joules(record: ResultRecord) -> str:
    energy = record.energy
    if energy is None or not energy.available or energy.joules_per_call is None:
        return "-"
    parts = [f"{energy.joules_per_call:.3g}"]
    parts += [
        f"{c.component} {c.joules_per_call:.3g}"
        for c in energy.components
        if c.available and c.joules_per_call is not None and c.component != "package"
    ]
    return "; ".join(parts)


def decode_table(records: Sequence[ResultRecord]) -> TermTable:
    """One row per engine, device and depth: measured ms/token, tok/s, GB/s, J/token, and the prediction."""
    models = sorted({r.decode.model for r in records if r.decode})
    energy = any(_joules(r) != "-" for r in records)
    table = TermTable(
        f"decode {', '.join(models)}: one token's weight + KV stream (not a full model)",
        ["engine:dev", "depth", "MB/token", "ms/token", "tok/s", "GB/s", "pred tok/s", "error"]
        + (["J/token"] if energy else []),
        [False, True, True, True, True, True, True, True] + ([False] if energy else []),
    )
    for record in records:
        section = record.decode
        latency = record.latency_s()
        measured = 1 / latency if latency else None
        predicted = section.prediction if section else None
        table.rows.append(
            [
                target(record),
                str(section.depth) if section else "-",
                sig(record.workload.weight_bytes / 1e6),
                sig(latency * 1e3) if latency else "-",
                sig(measured) if measured else "-",
                f"{record.gbps:.2f}" if record.gbps else "-",
                sig(predicted.tokens_per_s) if predicted else "-",
                _error(measured, predicted),
            ]
            + ([_joules(record)] if energy else [])
        )
    errors = {r.decode.prediction_error for r in records if r.decode and r.decode.prediction_error}
    table.notes += [f"no prediction: {e}" for e in sorted(errors)]
    table.notes.append(
        "error: (predicted - measured) / measured tok/s"
        + ("; J/token: the energy scope's joules per token, then each component's" if energy else "")
    )
    return table


def prediction_table(
    rows: Sequence[tuple[str, str, int, int, DecodePrediction | None, str | None]],
) -> TermTable:
    """--predict: (engine:dev, model, depth, bytes per token, prediction, why none) per row."""
    table = TermTable(
        "decode --predict: tok/s from the sweep curve (nothing measured)",
        ["engine:dev", "model", "depth", "MB/token", "dispatches", "ms/token", "tok/s"],
        [False, False, True, True, True, True, True],
    )
    reasons = []
    for label, model, depth, stream, prediction, error in rows:
        if prediction is None:
            table.rows.append([label, model, str(depth), sig(stream / 1e6), "-", "-", "failed"])
            reasons.append(f"{label}: no prediction: {error}")
            continue
        table.rows.append(
            [
                label,
                model,
                str(depth),
                sig(stream / 1e6),
                str(prediction.dispatches),
                sig(prediction.seconds_per_token * 1e3),
                sig(prediction.tokens_per_s),
            ]
        )
    table.notes += list(dict.fromkeys(reasons))
    return table


def timeline_table(records: Sequence[ResultRecord]) -> TermTable | None:
    """Chained predicts: each chunk's median time per token and the bytes it streams."""
    timed = [r for r in records if r.decode is not None and r.decode.timeline]
    if not timed:
        return None
    table = TermTable(
        "decode: per-token timeline (each predict's median over the timed tokens)",
        ["engine:dev", "depth", "predict", "MB", "ms", "GB/s"],
        [False, True, False, True, True, True],
    )
    for record in timed:
        assert record.decode is not None
        for chunk in record.decode.timeline:
            table.rows.append(
                [
                    target(record),
                    str(record.decode.depth),
                    chunk.name,
                    sig(chunk.bytes / 1e6),
                    sig(chunk.median_s * 1e3),
                    f"{chunk.bytes / chunk.median_s / 1e9:.2f}",
                ]
            )
    return table


def chunks_table(title: str, chunks: Sequence[dict]) -> TermTable:
    """--dry-run of an engine that chains bundles: each bundle of a token, its stored bytes and what one
    predict streams."""
    table = TermTable(
        title, ["bundle", "layers", "stored MB", "per predict MB", "splits"], [False, False, True, True, True]
    )
    for chunk in chunks:
        layers = chunk["layers"]
        table.rows.append(
            [
                chunk["name"],
                f"{layers[0]}-{layers[1] - 1}" if layers else "-",
                sig(chunk["weight_bytes"] / 1e6),
                sig(chunk["streamed_bytes"] / 1e6),
                str(chunk["splits"]),
            ]
        )
    table.notes.append(
        f"{len(chunks)} predicts per token (an embedding model, {len(chunks) - 2} chunk(s) of "
        "whole layers, the LM head in one predict of its splits), as ANEMLL runs a token"
    )
    return table
