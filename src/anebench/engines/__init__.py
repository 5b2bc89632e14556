"""The engine registry: every engine behind one protocol, looked up by name."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..errors import UserError
from ..util.names import did_you_mean, match_name
from ..util.seam import Seam
from .base import Availability, BundleSpec, DtypeChoice, Engine, Prepared


def _coreml() -> Engine:
    from .coreml_engine import CoreMLEngine

    return CoreMLEngine()


def _coreai() -> Engine:
    from .coreai_engine import CoreAIEngine

    return CoreAIEngine()


def _numpy() -> Engine:
    from .numpy_engine import NumpyEngine

    return NumpyEngine()


def _torch() -> Engine:
    from .torch_engine import TorchEngine

    return TorchEngine()


def _mlx() -> Engine:
    from .mlx_engine import MlxEngine

    return MlxEngine()


# Preference order for "the best engine this machine has": accelerators first (Core ML's Neural Engine
# on a Mac), numpy last. Core AI (macOS 27+) follows Core ML: the published figures are Core ML's.
ENGINE_FACTORIES: dict[str, Callable[[], Engine]] = {
    "coreml": _coreml,
    "coreai": _coreai,
    "mlx": _mlx,
    "torch": _torch,
    "numpy": _numpy,
}
CPU_DEVICES = {"cpu"}
Registry = Mapping[str, Callable[[], Engine]]
# The engines looked up where no registry is passed: ENGINE_FACTORIES, or the registry stated with
# use_engines (a stand-in engine, one removed) while its block runs, the CLI included: tests state engines
# there instead of patching ENGINE_FACTORIES.
ENGINES_SEAM: Seam[Registry] = Seam(ENGINE_FACTORIES)
active_engines = ENGINES_SEAM.get
use_engines = ENGINES_SEAM.use
# The engine the published Neural Engine figures were measured with (anemll-bench, the published
# bundles): the Mac campaign runs the published heads on it, and imported published results name it.
PUBLISHED_ANE_ENGINE = "coreml"
MAC_EXTRAS = f"{PUBLISHED_ANE_ENGINE},mlx,mac"  # the pip extras a Mac campaign needs


def published_compute_units() -> dict[str, str]:
    """Device -> the compute units the published engine loads a model with (what imports record)."""
    from .coreml_engine import COMPUTE_UNITS

    return dict(COMPUTE_UNITS)


def get_engine(name: str, registry: Registry | None = None) -> Engine:
    """The engine of that name, matched ignoring case; an unknown name gets the nearest valid one."""
    factories = active_engines() if registry is None else registry
    known = match_name(name, factories)
    if known is None:
        raise UserError(
            f"unknown engine {name!r}; {did_you_mean(name, factories)}"
            f"valid: {', '.join(factories)}"
        )
    return factories[known]()


def engines_with(capability: Callable[[Engine], bool], registry: Registry | None = None) -> list[Engine]:
    """The engines that have a capability, in preference order, available here or not (for messages:
    what to give -e instead of an engine the suite cannot take that path on)."""
    factories = active_engines() if registry is None else registry
    return [engine for engine in (factory() for factory in factories.values()) if capability(engine)]


def usable_engine(name: str, registry: Registry | None = None) -> Engine:
    engine = get_engine(name, registry)
    availability = engine.available()
    if not availability:
        raise UserError(f"engine {name!r} is not available: {availability.reason}")
    return engine


def available_engine(name: str, registry: Registry | None = None) -> Engine | None:
    """The engine if it can run here, else None (for plans that skip what this host lacks)."""
    engine = get_engine(name, registry)
    return engine if engine.available() else None


def resolve_device(engine: Engine, device: str | None) -> str:
    devices = engine.devices()
    if device is None:
        return devices[0]
    known = match_name(device, devices)
    if known is None:
        raise UserError(
            f"device {device!r} is not available for engine {engine.name!r}; {did_you_mean(device, devices)}"
            f"valid here: {', '.join(devices)}"
        )
    return known


def best_engine(registry: Registry | None = None) -> tuple[Engine, str]:
    """The first engine (in preference order) with an accelerator, else the first usable CPU engine."""
    factories = active_engines() if registry is None else registry
    usable = [e for e in (available_engine(name, factories) for name in factories) if e is not None]
    for engine in usable:
        device = engine.default_device()
        if device not in CPU_DEVICES:
            return engine, device
    cpu_engine = next(e for e in usable if e.name == "numpy")
    return cpu_engine, "cpu"


__all__ = [
    "MAC_EXTRAS",
    "PUBLISHED_ANE_ENGINE",
    "Availability",
    "BundleSpec",
    "DtypeChoice",
    "Engine",
    "Prepared",
    "Registry",
    "active_engines",
    "best_engine",
    "engines_with",
    "get_engine",
    "published_compute_units",
    "resolve_device",
    "usable_engine",
    "use_engines",
]
