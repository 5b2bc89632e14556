"""A results repository of synthetic submissions: valid measured records made by the project's own record
builder (tests/uncertainty_records.py), submitted through `submit --into`'s library function."""

from __future__ import annotations

from pathlib import Path

from anebench.model import ResultRecord
from anebench.report.leaderboard import build
from anebench.report.leaderboard_init import init
from anebench.report.leaderboard_submit import submit_into
from anebench.results.files import save_records
from anebench.results.leaderboard import SubmittingTool
from anebench.system.chips import lookup_chip
from uncertainty_records import repeated_record

# Ten chips whose memory bandwidth does not depend on the configuration; figures at 30-60% of it.
CHIPS = ["M1", "M1 Pro", "M1 Max", "M2", "M2 Pro", "M3", "M3 Pro", "M4", "M4 Pro", "M5"]
SUBMISSIONS_PER_CHIP = 5
TOOL = SubmittingTool(version="0.1.0", commit="0123456789abcdef0123456789abcdef01234567", dirty=False)
WORKLOAD = "llama_lm_head"


def run_records(chip: str, gbps: float, submitter: int, engines=(("mlx", "gpu"), ("coreml", "ane"))) -> list:
    """One machine's run: the same head on each engine, three repetitions, this submitter's host."""
    from anebench.workloads import resolve_workload

    weight_bytes = resolve_workload(WORKLOAD).weight_bytes
    records = []
    for k, (engine, device) in enumerate(engines):
        centre = weight_bytes / (gbps * (1 - 0.2 * k) * 1e9)
        record = repeated_record(
            [centre * 0.99, centre, centre * 1.01],
            chip=f"Apple {chip}",
            engine=engine,
            device=device,
            workload=WORKLOAD,
        )
        host = record.host.model_copy(update={"fingerprint": f"host{submitter:04d}", "power_source": "ac"})
        records.append(record.model_copy(update={"host": host, "id": None}).with_id())
    return records


def submit(repo: Path, records: list[ResultRecord], folder: Path, name: str) -> Path:
    path = folder / f"{name}.json"
    save_records(path, records)
    return submit_into(path, repo, tool=TOOL)


def chip_gbps(chip: str, index: int) -> float:
    bandwidth = lookup_chip(chip).bandwidth_gbps_max  # type: ignore[union-attr]
    return bandwidth * (0.3 + 0.07 * index)


def make_repository(root: Path, scratch: Path) -> Path:
    """``root``: an initialised repository with 50 submissions from 10 chips, built once."""
    init(root, "test leaderboard", "anebench")
    scratch.mkdir(parents=True, exist_ok=True)
    n = 0
    for chip in CHIPS:
        for index in range(SUBMISSIONS_PER_CHIP):
            submit(root, run_records(chip, chip_gbps(chip, index), n), scratch, f"run{n}")
            n += 1
    build(root)
    return root
