"""Names a user types (engines, devices, workloads): matched case-insensitively, and a typo gets the
nearest valid name ("did you mean"), as click does for commands and options."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def match_name(given: str, valid: Iterable[str]) -> str | None:
    """The valid name equal to ``given`` ignoring case (``Torch`` is ``torch``), else None."""
    folded = given.strip().casefold()
    return next((name for name in valid if name.casefold() == folded), None)


def did_you_mean(given: str, valid: Iterable[str]) -> str:
    """"did you mean 'numpy'? " for the closest valid name, else ''. difflib's ratio >= 0.7: 'nunpy' and
    'cpux' get a suggestion, 'gpu' (ratio 0.67 against 'cpu') does not, as it is not a typo of it."""
    names = list(valid)
    by_fold = {name.casefold(): name for name in names}
    close = difflib.get_close_matches(given.strip().casefold(), list(by_fold), n=1, cutoff=0.7)
    return f"did you mean {by_fold[close[0]]!r}? " if close else ""


__all__ = ["did_you_mean", "match_name"]
