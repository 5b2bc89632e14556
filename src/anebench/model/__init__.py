"""The result model: typed, versioned records. A leaf: it imports nothing else of anebench."""
# isort: skip_file
# record first: the typed sections (concurrency, ...) use its types, and it imports them once those exist.

from .record import *
from .record import __all__ as _record_all
from .concurrency import *
from .concurrency import __all__ as _concurrency_all

__all__ = _record_all + _concurrency_all  # noqa: PLE0605
