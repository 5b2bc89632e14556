"""Generators of hostile result files (anebench and anemll-bench formats)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from test_store import make_record

ANEMLL_DOC = {
    "timestamp": "2025-03-01 10:00:00",
    "system_info": {"cpu": {"brand": "Apple M1 Max", "cores": 10}, "ram": {"total_gb": 64.0},
                    "mac_model": "MacBookPro18,2"},
    "results": [{"model_name": "llama_lm_head", "backend": "ANE", "inference_time_ms": 20.0,
                 "throughput_gb_s": 52.5, "model_size_mb": 1050.0}],
}


def record_json(**changes) -> dict:
    """A measured record as JSON, with nested changes given as 'summary.median'=value; id cleared."""
    raw = make_record(gbps=100).model_dump(mode="json", by_alias=True)
    raw["id"] = None
    for dotted, value in changes.items():
        target = raw
        *parents, leaf = dotted.split(".")
        for key in parents:
            target = target[key]
        target[leaf] = value
    return raw


def device(tmp: Path, name: str, minor: int) -> Path:
    """A node of a memory device (1, minor) in the test's folder: never the machine's own /dev."""
    node = tmp / name
    os.mknod(node, 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    return node


def write(path: Path, content: object) -> Path:
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def consistent(gbps: float, chip: str = "Apple M1") -> dict:
    """A self-consistent record (latency, samples and GB/s agree) at an impossible bandwidth."""
    raw = make_record(gbps=gbps, chip=chip).model_dump(mode="json", by_alias=True)
    raw["id"] = None
    return raw


def anebench_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, a phrase the refusal must contain)."""
    latency = make_record(gbps=100).summary.median
    deep = "[" * 5000 + "]" * 5000
    cases = {
        "5000-deep nesting": (write(tmp / "deep.json", deep), "nested 5000 levels"),
        "weight_bytes 1e400": (
            write(
                tmp / "big.json",
                json.dumps(record_json()).replace('"weight_bytes": 1050673152', '"weight_bytes": 1e400'),
            ),
            "outside the range of a float",
        ),
        "gbps 1e400": (
            write(tmp / "gbps.json", json.dumps(record_json()).replace('"gbps": 100.0', '"gbps": 1e400')),
            "outside the range",
        ),
        "400-digit integer": (
            write(
                tmp / "digits.json",
                json.dumps(record_json()).replace(
                    '"weight_bytes": 1050673152', '"weight_bytes": ' + "9" * 400
                ),
            ),
            "out of range",
        ),
        "90,000 GB/s on an M1": (
            write(tmp / "fast.json", consistent(90_000)),
            "above what the device can read",
        ),
        "2,000 GB/s on an M1": (
            write(tmp / "fast2.json", consistent(2_000)),
            "68.25 GB/s of memory bandwidth",
        ),
        "unknown chip at 50,000 GB/s": (
            write(tmp / "fast3.json", consistent(50_000, chip="Mystery X1")),
            "is not in the chip catalog",
        ),
        "weight_bytes unrelated to the shape": (
            write(
                tmp / "wb.json",
                record_json(**{"workload.weight_bytes": 1_000_000, "gbps": 1_000_000 / latency / 1e9}),
            ),
            "workload.weight_bytes",
        ),
        # a measured record's summary is derived from its samples: a stored one that disagrees is refused
        "median above max": (
            write(tmp / "med.json", record_json(**{"summary.max": latency * 0.5})),
            "contradicts the samples",
        ),
        "p5 above p95": (
            write(
                tmp / "p5.json",
                record_json(
                    **{"summary.p5": latency, "summary.p95": latency * 0.9, "summary.max": latency * 1.1}
                ),
            ),
            "contradicts the samples",
        ),
        "claims provenance published": (
            write(
                tmp / "pub.json",
                record_json(provenance="published", provenance_note="anemll-bench Results.MD"),
            ),
            "reserved for the figures",
        ),
        "NaN gbps": (
            write(tmp / "nan.json", json.dumps(record_json()).replace('"gbps": 100.0', '"gbps": NaN')),
            "gbps",
        ),
        "not JSON": (write(tmp / "text.json", "hello {"), "not valid JSON"),
        "binary": (tmp / "bin.json", "bin.json: not"),
        "empty file": (write(tmp / "empty.json", ""), "not valid JSON"),
        "a list": (write(tmp / "list.json", [1, 2, 3]), "expected a results document"),
        "directory": (tmp, "is a directory"),
        "missing": (tmp / "nope.json", "no such file"),
        "/dev/zero": (device(tmp, "zero", 5), "not a regular file"),
        "/dev/null": (device(tmp, "null", 3), "not a regular file"),
    }
    (tmp / "bin.json").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)
    cases["FIFO"] = (fifo, "FIFO")
    return cases


def anemll_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    doc = json.dumps(ANEMLL_DOC)
    second = json.dumps(ANEMLL_DOC | {"timestamp": "2025-03-02 10:00:00"})
    fast = json.loads(doc)
    fast["results"][0].update(inference_time_ms=0.011, throughput_gb_s=95515.0, model_size_mb=1050.665)
    ram = json.loads(doc)
    ram["system_info"]["ram"]["total_gb"] = 1e300
    cases = {
        '{"a":[ x 700000': (write(tmp / "nest.txt", '{"a":[' * 700_000), "nested"),
        "JS string of deep JSON": (
            write(
                tmp / "lit.html",
                '<script>var d = "' + '{\\"a\\":[' * 100_000 + "0" + "]}" * 100_000 + '";</script>',
            ),
            "deeply nested",
        ),
        "one valid, one truncated block": (
            write(tmp / "issue.md", f"Run 1:\n```json\n{doc}\n```\nRun 2:\n```json\n{second[:-60]}\n```\n"),
            "broken",
        ),
        "95,515 GB/s": (write(tmp / "fast.json", fast), "above what the device can read"),
        "ram.total_gb 1e300": (write(tmp / "ram.json", ram), "total_gb"),
        "ram.total_gb 1e400": (
            write(tmp / "ram2.json", doc.replace('"total_gb": 64.0', '"total_gb": 1e400')),
            "total_gb",
        ),
        "5000-deep": (write(tmp / "deep.txt", "[" * 5000 + "]" * 5000), "nested"),
        "no JSON at all": (
            write(tmp / "prose.txt", "nothing here { to see }"),
            "no anemll-bench result JSON",
        ),
        "/dev/zero": (device(tmp, "zero", 5), "not a regular file"),
    }
    fifo = tmp / "fifo.txt"
    os.mkfifo(fifo)
    cases["FIFO"] = (fifo, "FIFO")
    return cases
