"""The browsable dataset: Datasette's metadata for the leaderboard's SQLite file (titles, units,
descriptions, facets, canned queries), written by `leaderboard build` and used by `leaderboard serve`."""

from __future__ import annotations

from ..engines import ENGINE_FACTORIES

DATABASE = "results"  # Datasette names a database after its file: leaderboard/results.sqlite
FACETS = ["chip", "engine", "device", "workload"]

MATRIX_SQL = (
    "select chip, config, workload, engine, device, median_gbps, gbps_rel_halfwidth95, contributors, "
    "submitters, median_latency_s, memory_bandwidth, utilisation_low, utilisation_high, tier, flags "
    "from matrix order by workload, engine, device, median_gbps desc, chip"
)
CHIP_HISTORY_SQL = (
    "select created, submission, workload, engine, device, gbps, latency_s, runs, tool_version, "
    "os_version, power_source, warnings from results where chip_key = :chip or chip = :chip "
    "order by created, id"
)
ENGINES_SQL = (
    "select a.workload, a.fingerprint, a.engine || ':' || a.device as first, a.median_gbps as first_gbps, "
    "b.engine || ':' || b.device as second, b.median_gbps as second_gbps, "
    "round(b.median_gbps / a.median_gbps, 4) as ratio_second_to_first "
    "from matrix a join matrix b "
    "on a.chip = b.chip and a.config = b.config and a.fingerprint = b.fingerprint "
    "where a.chip = :chip and a.engine = :engine_a and b.engine = :engine_b "
    "order by a.workload, a.device, b.device"
)

GBPS = "GB/s, GB = 10^9 bytes"
MATRIX_COLUMNS = {
    "chip": "the chip's catalog name (the GPU for CUDA devices)",
    "config": "the configuration, where the chip's memory bandwidth depends on it",
    "workload": "the workload's name; compare rows only within one fingerprint",
    "fingerprint": "sha256 of what one call reads and how (shape, stored dtype, quantisation, batch, tokens)",
    "engine": f"the engine that ran the workload ({', '.join(ENGINE_FACTORIES)})",
    "device": "the device it ran on (ane, gpu, cpu, mps, cuda:N)",
    "median_gbps": f"median weight-read bandwidth over contributing records ({GBPS})",
    "gbps_rel_halfwidth95": "largest between-run 95% half-width among the contributors, as a fraction",
    "contributors": "records that contribute to the median",
    "submitters": "submissions (runs) that contribute to the median",
    "median_latency_s": "median latency of one call, seconds",
    "memory_bandwidth": "the chip's published memory bandwidth (GB/s)",
    "utilisation_low": "median GB/s over the chip's published bandwidth (low end of its range)",
    "utilisation_high": "median GB/s over the chip's published bandwidth (high end of its range)",
    "tier": "tier within the workload and engine/device (1 is the fastest)",
    "flags": "what limits the figure's trust",
}


def datasette_metadata(title: str) -> dict:
    """Datasette 0.65 metadata: every key in a fixed order (the file is part of the deterministic build)."""
    return {
        "title": title,
        "description": "Weight-read bandwidth for LLM decode by chip, engine and device, regenerated from "
        "the submissions of a results repository by `anebench leaderboard build`.",
        "about": "anebench",
        "databases": {
            DATABASE: {
                "tables": {
                    "matrix": {
                        "title": "The per-chip matrix (single-call bandwidth)",
                        "description": "One row per chip x workload fingerprint x engine x device: the "
                        f"median over contributors, in {GBPS}.",
                        "columns": MATRIX_COLUMNS,
                        "units": {"median_latency_s": "s"},
                        "facets": FACETS,
                        "sort_desc": "median_gbps",
                    },
                    "results": {
                        "title": "Every accepted record",
                        "description": "One row per measured record, with the submission it came from.",
                        "columns": {
                            "gbps": f"the record's bandwidth ({GBPS})",
                            "latency_s": "the record's median latency of one call, seconds",
                            "weight_bytes": "bytes one call reads",
                            "submission": "the submission file (submissions/<chip>/<run-id>.json)",
                        },
                        "units": {"latency_s": "s", "weight_bytes": "byte"},
                        "facets": FACETS,
                    },
                    "submissions": {
                        "title": "Accepted submissions",
                        "description": "One row per run: tool version and commit, OS, power and thermal "
                        "state, the run's own log.",
                        "facets": ["chip", "os_version", "power_source"],
                    },
                    "rejected": {
                        "title": "Rejected submissions",
                        "description": "Kept out of every figure, with the one-line reason.",
                    },
                    "records": {"hidden": True},
                    "meta": {"hidden": True},
                    "ingests": {"hidden": True},
                },
                "queries": {
                    "matrix_by_chip": {
                        "title": "The matrix",
                        "description": f"Every chip's median bandwidth ({GBPS}) by workload, engine, device.",
                        "sql": MATRIX_SQL,
                    },
                    "chip_history": {
                        "title": "One chip's history",
                        "description": "Every record of one chip (its catalog name: M4 Pro), oldest first.",
                        "sql": CHIP_HISTORY_SQL,
                    },
                    "engine_vs_engine": {
                        "title": "Engine against engine on one chip",
                        "description": "Two engines' medians on one workload fingerprint, and their ratio.",
                        "sql": ENGINES_SQL,
                    },
                },
            }
        },
    }


__all__ = ["DATABASE", "FACETS", "MATRIX_SQL", "datasette_metadata"]
