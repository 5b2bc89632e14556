"""Import coremltools without its import-time noise, and keep what it says when a model will not load.

On Linux coremltools logs a line for every macOS-only proxy it cannot load, and a torch version notice,
none of which concern building: those import-time records are kept in ``IMPORT_MESSAGES`` instead of
printed (on a Mac, "Failed to load _MLModelProxy: ..." there is the reason no model can load). The
logger is not muted afterwards: ``captured_messages`` collects what coremltools says while loading a
model, so a load failure can name its reason. Its pass pipeline draws tqdm bars that would tear through
our Rich progress. Real errors still raise.
"""

from __future__ import annotations

import logging
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from ..errors import UserError

MISSING_MESSAGE = "coremltools is not installed: Core ML bundles need it (pip install 'anebench[coreml]')"
LOGGER = "coremltools"
IMPORT_MESSAGES: list[str] = []  # what coremltools logged while it was imported here


class _Collect(logging.Handler):
    def __init__(self, into: list[str]):
        super().__init__(logging.DEBUG)
        self.into = into

    def emit(self, record: logging.LogRecord) -> None:
        self.into.append(record.getMessage())


@contextmanager
def captured_messages() -> Iterator[list[str]]:
    """coremltools' log records (warning and above) and Python warnings (not deprecations) raised in the
    block, collected into the list instead of printed; the logger is as it was afterwards."""
    messages: list[str] = []
    logger = logging.getLogger(LOGGER)
    handler = _Collect(messages)
    handler.setLevel(logging.WARNING)
    propagate, level = logger.propagate, logger.level
    logger.addHandler(handler)
    logger.propagate = False
    if logger.level == logging.NOTSET or logger.level > logging.WARNING:
        logger.setLevel(logging.WARNING)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                yield messages
            finally:
                messages.extend(
                    str(w.message)
                    for w in caught
                    if not issubclass(w.category, (DeprecationWarning, PendingDeprecationWarning))
                )
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate
        logger.setLevel(level)


def coremltools():
    imported = sys.modules.get("coremltools")
    if imported is not None:  # None: an import that failed (or a test that says it is missing)
        return imported
    try:
        with captured_messages() as messages:
            import coremltools as ct
    except ModuleNotFoundError as exc:
        if exc.name != "coremltools":  # a broken install: its own error says more than ours would
            raise
        raise UserError(MISSING_MESSAGE) from None
    IMPORT_MESSAGES.extend(messages)
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
