"""Minted task ids: ``task-1``, ``task-2``, ... from one source, so they never clash.

The facade mints on callers' threads and the scheduler mints for ``Schedule`` messages that
come without an id; both draw from the same ``IdMint``. With a store, numbers are reserved
from the store in blocks, so an id minted now never repeats one stored before a restart, nor
(on a shared store) one another node minted.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Final

__all__ = ["BLOCK", "IdMint"]

BLOCK: Final = 1024
"""Numbers reserved from a store at once (one transaction per block)."""


class IdMint:
    """Hands out fresh ``task-<n>`` ids. Any thread may call it."""

    def __init__(self, reserve: Callable[[int], range] | None = None) -> None:
        """Count from 1, or take blocks of numbers from ``reserve`` (a store's ``reserve_minted``)."""
        self._reserve = reserve
        # _lock guards _numbers when numbers come from a store (a block runs out, another is
        # reserved); a plain counter needs none: next() on itertools.count is atomic.
        self._lock = threading.Lock()
        self._numbers: Iterator[int] = itertools.count(1) if reserve is None else iter(())

    def __call__(self) -> str:
        """Return a new id."""
        if self._reserve is None:
            return f"task-{next(self._numbers)}"
        with self._lock:
            number = next(self._numbers, None)
            if number is None:
                self._numbers = iter(self._reserve(BLOCK))
                number = next(self._numbers)
        return f"task-{number}"

    def many(self, count: int) -> list[str]:
        """Return ``count`` new ids (for ``schedule_many``: one call instead of ``count``)."""
        if self._reserve is None:
            return [f"task-{number}" for number in itertools.islice(self._numbers, count)]
        return [self() for _ in range(count)]
