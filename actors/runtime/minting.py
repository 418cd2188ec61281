"""Minted task ids: ``task-1``, ``task-2``, ... from one source, so they never clash.

The facade mints on callers' threads and the scheduler mints for ``Schedule`` messages that
come without an id; both draw from the same ``IdMint``. With a store, the numbers of tasks
kept in the store are reserved from it in blocks, so an id minted now never repeats one
stored before a restart, nor (on a shared store) one another node minted. Memory-only tasks
never need the store: with one, their ids are counted here, in a space of their own
(``task-m<n>``) that no stored id can take; without one, every task is memory-only and every
id ``task-<n>``. Both forms are reserved: a caller's ``task_id`` cannot have either.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterator
from typing import Final

__all__ = ["BLOCK", "MEMORY_PREFIX", "IdMint", "is_memory_id"]

BLOCK: Final = 1024
"""Numbers reserved from a store at once (one transaction per block)."""

MEMORY_PREFIX: Final = "task-m"
"""How the ids of memory-only tasks begin on a scheduler with a store."""


def is_memory_id(task_id: str) -> bool:
    """Whether ``task_id`` is a minted id of a memory-only task (``task-m<digits>``): never a stored row."""
    digits = task_id[len(MEMORY_PREFIX) :]
    return task_id.startswith(MEMORY_PREFIX) and digits.isascii() and digits.isdigit()


class IdMint:
    """Hands out fresh ``task-<n>`` ids (and ``task-m<n>`` ones). Any thread may call it."""

    def __init__(self, reserve: Callable[[int], range] | None = None) -> None:
        """Count from 1, or take blocks of numbers from ``reserve`` (a store's ``reserve_minted``)."""
        self._reserve = reserve
        # _lock guards _numbers when numbers come from a store (a block runs out, another is
        # reserved); a plain counter needs none: next() on itertools.count is atomic.
        self._lock = threading.Lock()
        self._numbers: Iterator[int] = itertools.count(1) if reserve is None else iter(())
        self._memory_numbers: Iterator[int] = itertools.count(1)  # with a store only
        # The memory-only ids, ready made: ``next`` of it is one C call (count, then format),
        # atomic under the GIL as ``next`` of the count is. It draws from the same numbers as
        # ``__call__`` without a store, and from ``_memory_numbers`` with one.
        self.memory_ids: Iterator[str] = (
            map("task-{}".format, self._numbers)
            if reserve is None
            else map(f"{MEMORY_PREFIX}{{}}".format, self._memory_numbers)
        )

    def __call__(self) -> str:
        """Return a new id for a task kept in the store (or any task, without a store).

        Raises:
            StoreError: A block of numbers had to be reserved, and the store failed.
        """
        if self._reserve is None:
            return f"task-{next(self._numbers)}"
        with self._lock:
            number = next(self._numbers, None)
            if number is None:
                self._numbers = iter(self._reserve(BLOCK))
                number = next(self._numbers)
        return f"task-{number}"

    def many(self, count: int) -> list[str]:
        """Return ``count`` new ids for tasks kept in the store: at most one reservation, of what is missing.

        For ``schedule_many(..., durable=True)``: 30,000 ids are one transaction, not 30.

        Raises:
            StoreError: Numbers had to be reserved, and the store failed (none is handed out).
        """
        if self._reserve is None:
            return [f"task-{number}" for number in itertools.islice(self._numbers, count)]
        with self._lock:
            numbers = list(itertools.islice(self._numbers, count))
            if len(numbers) < count:
                try:
                    numbers.extend(self._reserve(count - len(numbers)))
                except BaseException:
                    self._numbers = itertools.chain(numbers, self._numbers)  # not lost: handed out later
                    raise
        return [f"task-{number}" for number in numbers]

    def memory(self) -> str:
        """Return a new id for a memory-only task: never asks the store (``next(memory_ids)``)."""
        return next(self.memory_ids)

    def memory_many(self, count: int) -> list[str]:
        """Return ``count`` new memory-only ids (for ``schedule_many``: one call instead of ``count``)."""
        if self._reserve is None:
            return [f"task-{number}" for number in itertools.islice(self._numbers, count)]
        return [f"{MEMORY_PREFIX}{number}" for number in itertools.islice(self._memory_numbers, count)]
