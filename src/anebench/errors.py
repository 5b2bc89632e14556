"""Errors the user can fix: the CLI prints them as one line and exits with code 2."""


class UserError(Exception):
    """Bad input: the message names the input and what is valid. Nothing has been written."""

    exit_code = 2

    def __init__(self, message: str):
        super().__init__(" ".join(message.split()))


class MeasurementError(Exception):
    """A measurement could not be trusted (output check failed, call too short for the timer)."""

    exit_code = 1
