"""Import coreai-core (Apple's Core AI Python package) only when an .aimodel is built, read or run.

coreai-core installs on Linux and macOS; its authoring half (``coreai.authoring``) writes assets anywhere,
its runtime specialises and runs them through the OS's Core AI framework on macOS 27+ only.
"""

from __future__ import annotations

import importlib.util
from types import ModuleType

from ..errors import UserError

PACKAGE = "coreai-core"
MISSING_MESSAGE = (
    "coreai-core is not installed: Core AI assets need it (pip install 'anebench[coreai]'; Python 3.11+)"
)


def installed() -> bool:
    return importlib.util.find_spec("coreai") is not None


def version() -> str:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as distribution_version

    try:
        return distribution_version(PACKAGE)
    except PackageNotFoundError:
        raise UserError(MISSING_MESSAGE) from None


def _import(name: str) -> ModuleType:
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name not in ("coreai", name):  # a broken install: its own error says more than ours would
            raise
        raise UserError(MISSING_MESSAGE) from None


def authoring() -> ModuleType:
    """``coreai.authoring``: Module, graph, constant, batch_matmul, AIProgram, AIModelAsset."""
    return _import("coreai.authoring")


def runtime() -> ModuleType:
    """``coreai.runtime``: AIModel, SpecializationOptions, ComputeUnitKind (macOS only), NDArray."""
    return _import("coreai.runtime")
