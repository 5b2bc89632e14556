"""pydantic's validation errors as anebench states bad input: one line per invalid field."""

from __future__ import annotations

from pydantic import ValidationError


def error_lines(exc: ValidationError, whole: str = "(record)") -> list[str]:
    """``field.path: message`` for each error; ``whole`` names the object when an error has no field."""
    return [f"{'.'.join(str(p) for p in error['loc']) or whole}: {error['msg']}" for error in exc.errors()]
