"""A stated seam: one value the library asks for (the host, the engine registry, the measurement executor,
a native binding), which a caller or a test states for a block instead of patching what each module
imported. Outside any block the seam answers its default (the native one)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Generic, TypeVar

T = TypeVar("T")


class Seam(Generic[T]):
    """``get()`` is the value stated with ``use(value)`` while its block runs (the innermost one where
    blocks nest), else ``default``. ``stated`` is the stated value or None: a pytest fixture that cannot
    wrap the test in a block sets it with ``monkeypatch.setattr(seam, "stated", value)``, restored at the
    test's end."""

    def __init__(self, default: T):
        self.default = default
        self.stated: T | None = None

    def get(self) -> T:
        return self.stated if self.stated is not None else self.default

    @contextmanager
    def use(self, value: T) -> Iterator[T]:
        before, self.stated = self.stated, value
        try:
            yield value
        finally:
            self.stated = before
