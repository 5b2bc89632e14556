"""Typed errors of the library. Their messages name inputs and settings, never command-line flags:
the CLI maps a :class:`SettingError` to the flag that set it and every error to an exit code."""


class UserError(Exception):
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


class MeasurementError(Exception):
    """A measurement could not be trusted (output check failed, call too short for the timer)."""

    exit_code = 1


class AnalysisFailed(Exception):
    """A suite measured (its records are saved, and stored with --store) but its analysis failed its
    stated gates: a sweep fit, a roofline ridge, a compute peak, a quant inference or a concurrency
    verdict. The message says which and why; the CLI exits with ``exit_code`` (docs/uncertainty.md)."""

    exit_code = 3
