"""Where anebench keeps what it may rebuild (caches) and what it must keep (the results store).

One resolver each, so that every cache agrees on its root: ``$ANEBENCH_CACHE_DIR`` when set, else the
platform's cache directory (e.g. ~/Library/Caches/anebench). Bundles live in the root itself
(one directory per build key); every other cache in a subdirectory named for its kind.
"""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

CACHE_ENV = "ANEBENCH_CACHE_DIR"
APP = "anebench"


def cache_root() -> Path:
    """``$ANEBENCH_CACHE_DIR`` or the platform's cache directory for anebench."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_cache_path(APP)


def cache_dir(kind: str) -> Path:
    """The directory of one kind of cache (e.g. ``tensor-sha256``) under ``cache_root()``."""
    return cache_root() / kind


def data_dir() -> Path:
    """The platform's data directory for anebench (what is not a cache: the results store)."""
    return Path(platformdirs.user_data_dir(APP, appauthor=False))
