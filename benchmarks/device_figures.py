"""device_check.sh's last step: each GPU's run figures against its read ceiling and its datasheet.

Reads run_cuda*.json (anebench records) and read_ceiling.json from the folder given, prints one line per
GPU and writes figures.json. Expected: per-call >= 0.90 x the read ceiling measured in the same run
(x.sum() over a tensor >> L2), and every figure below the datasheet bandwidth (H200: 4800 GB/s).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from anebench.system.chips import lookup_chip

TARGET = 0.90  # per-call figure / measured read ceiling


def figures(out: Path) -> list[dict]:
    ceiling_file = out / "read_ceiling.json"
    ceilings = json.loads(ceiling_file.read_text()) if ceiling_file.exists() else {}
    rows = []
    for path in sorted(out.glob("run_cuda*.json")):
        data = json.loads(path.read_text())
        for rec in data.get("results", [data]):
            rows.append(row(rec, ceilings.get(rec["engine"]["device"], {}).get("gbps_median")))
    return rows


def row(rec: dict, ceiling: float | None) -> dict:
    name = rec["engine"]["details"].get("gpu")
    chip = lookup_chip(name)
    sheet = chip.bandwidth_gbps_max if chip else None
    gpu = rec.get("gpu") or {}
    streaming = {s["method"]: s["gbps"] for s in gpu.get("streaming", [])}
    found = {
        "device": rec["engine"]["device"], "gpu": name, "datasheet_gbps": sheet, "read_ceiling_gbps": ceiling,
        "per_call_gbps": rec["gbps"], "device_time_gbps": rec.get("device_gbps"), "streaming_gbps": streaming,
        "expected": f"per-call >= {TARGET:.2f} x read ceiling; every figure below the datasheet",
        "warnings": rec.get("warnings", []), "energy": rec.get("energy"),
        "energy_window": gpu.get("energy_window"), "verdicts": [],
    }
    if ceiling:
        ratio = rec["gbps"] / ceiling
        found["per_call_over_ceiling"] = ratio
        verdict = "ok" if ratio >= TARGET else "BELOW TARGET"
        found["verdicts"].append(f"per-call/ceiling {ratio:.3f} ({verdict})")
    if sheet:
        top = max([rec["gbps"], rec.get("device_gbps") or 0, *streaming.values()])
        verdict = "ok" if top < sheet else "ABOVE DATASHEET"
        found["verdicts"].append(f"max/datasheet {top / sheet:.3f} ({verdict})")
    return found


def line(r: dict) -> str:
    streams = ", ".join(f"{k} {v:.0f}" for k, v in r["streaming_gbps"].items()) or "none"
    return (f"{r['device']} {r['gpu']}: per-call {r['per_call_gbps']:.0f} GB/s, device-time "
            f"{r['device_time_gbps'] or 0:.0f}, streaming [{streams}], "
            f"read ceiling {r['read_ceiling_gbps'] or 0:.0f}, datasheet {r['datasheet_gbps'] or 0:g}; "
            + "; ".join(r["verdicts"]))


def main(argv: list[str]) -> int:
    out = Path(argv[1] if len(argv) > 1 else "device_check_out")
    rows = figures(out)
    for r in rows:
        print(line(r))
    if not rows:
        print("no run records to compare")
    (out / "figures.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
