"""`anebench engines` and `anebench info`: what this host can run and what it is."""

from __future__ import annotations

import json
from typing import Any

import click

from ..engines import active_engines
from ..model import HostInfo
from ..system.energy_sources import energy_sources
from ..system.host import SYSTEM_HOST
from .console import out_console
from .options import format_option, json_option
from .settings import output_format
from .tables import FittingTable, fmt_mb


@click.command()
@format_option("table", "json")
@json_option()
def engines(fmt: str | None, as_json: bool) -> None:
    """List engines, their devices, and why any are unavailable."""
    found: list[dict[str, Any]] = []
    for name, factory in active_engines().items():
        engine = factory()
        availability = engine.available()
        found.append(
            {
                "engine": name,
                "available": bool(availability),
                "version": engine.version() if availability else None,
                "devices": engine.devices() if availability else [],
                "thread_control": engine.thread_control,
                "why_not": availability.reason or None,
            }
        )
    if output_format(fmt, as_json) == "json":
        click.echo(json.dumps({"engines": found}, indent=1))
        return
    rows = [
        [
            e["engine"],
            "yes" if e["available"] else "no",
            e["version"] or "-",
            ", ".join(e["devices"]) or "-",
            e["why_not"] or "-",
        ]
        for e in found
    ]
    out_console().print(
        FittingTable(
            ["engine", "available", "version", "devices", "why not"],
            rows,
            "anebench engines",
            wrap={"devices", "why not"},
        )
    )


def _known(value: object, unknown: str = "unknown") -> str:
    if value is None or value == "":
        return unknown
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def blas_line(lib: dict) -> str:
    """'openblas 0.3.27 (SkylakeX kernel, 16 threads, pthreads)' from one threadpoolctl entry."""
    extras = [
        f"{lib['kernel']} kernel" if lib.get("kernel") else "",
        f"{lib['threads']} threads" if lib.get("threads") else "",
        str(lib.get("threading") or ""),
    ]
    details = ", ".join(e for e in extras if e)
    name = " ".join(str(lib[k]) for k in ("library", "version") if lib.get(k)) or "unknown library"
    return f"{name} ({details})" if details else name


def host_rows(host: HostInfo) -> list[tuple[str, str]]:
    """The host as (fact, value) lines a reader can take in: units stated, nothing shown as None."""
    os_line = " ".join(p for p in (host.os, host.os_version) if p) + f" ({host.arch})"
    cores = ", ".join(
        f"{n} {kind}" for n, kind in ((host.cores_physical, "physical"), (host.cores_logical, "logical")) if n
    )
    rows = [
        ("OS", os_line),
        ("CPU", _known(host.cpu_model)),
        ("Apple chip", host.chip or "none (not an Apple silicon host)"),
        ("machine model", _known(host.machine_model, "-")),
        ("cores", cores or "unknown"),
        ("memory", f"{host.memory_bytes / 1e9:.1f} GB" if host.memory_bytes else "unknown"),
        ("last-level cache", f"{fmt_mb(host.llc_bytes)} MB" if host.llc_bytes else "unknown"),
        ("Python", _known(host.python)),
        ("under Rosetta", _known(host.rosetta, "no" if host.os != "macOS" else "unknown")),
    ]
    rows += [("BLAS" if i == 0 else "", blas_line(lib)) for i, lib in enumerate(host.blas)] or [
        ("BLAS", "none found")
    ]
    rows += [
        ("power source", _known(host.power_source)),
        ("low-power mode", _known(host.low_power_mode)),
        ("host fingerprint", _known(host.fingerprint, "-")),
    ]
    return rows


def source_detail(source) -> str:
    """The channels an IOReport source was found by (with their units), and what is missing or why not."""
    parts = [f"found: {'; '.join(source.channels)}"] if source.channels else []
    parts += [source.reason] if source.reason else []
    return "; ".join(parts) or "-"


@click.command()
@format_option("table", "json")
@json_option()
def info(fmt: str | None, as_json: bool) -> None:
    """Describe this host: OS, CPU, memory, caches, BLAS, power, and the energy sources --power can read."""
    host = SYSTEM_HOST.info()
    if output_format(fmt, as_json) == "json":
        click.echo(host.model_dump_json(indent=1))
        return
    console = out_console()
    console.print(
        FittingTable(
            ["fact", "value"],
            [list(row) for row in host_rows(host)],
            "this host",
            "MB = 1e6 bytes, GB = 1e9 bytes",
            wrap={"value"},
        )
    )
    rows = [
        [source.name, source.covers, "yes" if source.available else "no", source_detail(source)]
        for source in energy_sources()
    ]
    console.print(
        FittingTable(
            ["source", "measures", "available", "channels found / why not"],
            rows,
            "energy sources (--power)",
            wrap={"measures", "channels found / why not"},
        )
    )
