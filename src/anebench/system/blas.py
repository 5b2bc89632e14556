"""Which BLAS kernel numpy runs, and on how many threads (threadpoolctl)."""

from __future__ import annotations

import os

from threadpoolctl import threadpool_info

from ..model.base import Scalar

OPENBLAS_OVERRIDES = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def blas_libraries() -> list[dict[str, Scalar]]:
    found: list[dict[str, Scalar]] = []
    for lib in threadpool_info():
        if lib.get("user_api") != "blas":
            continue
        found.append(
            {
                "library": lib.get("internal_api"),
                "version": lib.get("version"),
                "threads": lib.get("num_threads"),
                "kernel": lib.get("architecture"),
                "threading": lib.get("threading_layer"),
            }
        )
    return found


def blas_summary() -> dict[str, Scalar]:
    """A flat description for an engine record, including any OpenBLAS core-type override in force."""
    libs = blas_libraries()
    summary: dict[str, Scalar] = {}
    if libs:
        lib = libs[0]
        summary = {f"blas_{k}": v for k, v in lib.items()}
    for var in OPENBLAS_OVERRIDES:
        if os.environ.get(var):
            summary[var.lower()] = os.environ[var]
    return summary
