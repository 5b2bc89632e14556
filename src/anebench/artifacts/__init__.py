"""Building what an engine loads: Core ML LM-head bundles, their cache, and reading them back.

coremltools is imported only when a bundle is built or read, so importing this package is cheap and
works where coremltools is missing.
"""

from .cache import Artifact, build_or_reuse, default_cache_dir, lookup
from .coreml import LUT_MODES, MAX_REPEAT, MAX_SPLIT_ROWS, MAX_TOKENS, QUANTS, BuildSpec
from .mlprogram import BundleError, MLProgramBundle

__all__ = [
    "LUT_MODES",
    "MAX_REPEAT",
    "MAX_SPLIT_ROWS",
    "MAX_TOKENS",
    "QUANTS",
    "Artifact",
    "BuildSpec",
    "BundleError",
    "MLProgramBundle",
    "build_or_reuse",
    "default_cache_dir",
    "lookup",
]
