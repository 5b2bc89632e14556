"""Typed errors of the library. Their messages name inputs and settings, never command-line flags: a
setting is named with :func:`setting`, which a library caller reads as the setting's name (``max_mb``)
and the CLI as the flag that set it (``--max-mb``); the CLI also maps every error to an exit code."""

from __future__ import annotations

import re
from collections.abc import Callable

# Brackets a setting's name inside a message: a private-use character, never in text otherwise, and not
# whitespace (UserError folds whitespace).
_MARK = "\ue000"
_NAMED = re.compile(f"{_MARK}([A-Za-z0-9_]+){_MARK}")


def setting(name: str) -> str:
    """The setting ``name`` (a library parameter: ``runs``, ``max_mb``) named inside an error message."""
    return f"{_MARK}{name}{_MARK}"


def name_settings(template: str, name: Callable[[str], str] | None = None) -> str:
    """``template`` with each :func:`setting` written as ``name(setting)``, or as the bare setting."""
    return _NAMED.sub(lambda m: name(m[1]) if name else m[1], template)


class NamesSettings(Exception):
    """An error whose message may name settings: ``str()`` gives their names, ``template`` keeps them
    marked so that the CLI can write the flags instead."""

    def __init__(self, message: str = ""):
        self.template = message
        super().__init__(name_settings(message))


class UserError(NamesSettings):
    """Bad input: the message names the input and what is valid. Nothing has been written."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class SettingError(UserError):
    """A bad value of one named setting (``setting``: e.g. "format", "out"). The message starts with the
    value, so that the CLI can put the flag that set it in front ("--from 'x' is not a known format")."""

    def __init__(self, setting: str, message: str):
        self.setting = setting
        super().__init__(message)


class MeasurementError(NamesSettings):
    """A measurement could not be trusted (output check failed, call too short for the timer)."""

    exit_code = 1


class AnalysisFailed(NamesSettings):
    """A suite measured (its records are saved, and stored with --store) but its analysis failed its
    stated gates: a sweep fit, a roofline ridge, a compute peak, a quant inference or a concurrency
    verdict. The message says which and why; the CLI exits with ``exit_code`` (docs/uncertainty.md)."""

    exit_code = 3
