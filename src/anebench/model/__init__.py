"""The result model: typed, versioned records. A leaf: it imports nothing else of anebench."""

from .energy import ComponentEnergy, DramTraffic, Energy  # noqa: F401
from .record import *  # noqa: F401,F403
from .record import __all__  # noqa: F401
