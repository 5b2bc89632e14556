"""Import coremltools quietly: on Linux it logs a line for every macOS-only proxy it cannot load, and a
torch version notice, none of which concern building; its pass pipeline draws tqdm bars that would
tear through our Rich progress. Real errors still raise."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import UserError

MISSING_MESSAGE = "coremltools is not installed: Core ML bundles need it (pip install 'anebench[coreml]')"


def coremltools():
    logger = logging.getLogger("coremltools")
    if logger.level == logging.NOTSET:
        logger.setLevel(logging.ERROR)
    try:
        import coremltools as ct
    except ModuleNotFoundError as exc:
        if exc.name != "coremltools":  # a broken install: its own error says more than ours would
            raise
        raise UserError(MISSING_MESSAGE) from None
    return ct


@contextmanager
def no_pass_progress_bars() -> Iterator[None]:
    """Replace the pass pipeline's tqdm with a plain iterator while converting, then restore it."""
    coremltools()
    from coremltools.converters.mil.mil.passes import pass_pipeline

    original = pass_pipeline.tqdm
    pass_pipeline.tqdm = lambda iterable, *args, **kwargs: iterable
    try:
        yield
    finally:
        pass_pipeline.tqdm = original
