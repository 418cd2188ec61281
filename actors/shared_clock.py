"""``DatabaseClock``: a node's clock whose wall-clock reading is the shared database's clock.

On a shared store the database's clock decides what is due (``actors/store/protocol.py``,
``SharedStore``), so a node reads the wall clock there too: the due times it writes (``delay``
seconds from now), the run keys it makes and the times in the run ledger are then on the one
clock every node shares, and a machine whose clock is off cannot run anything early or late.
Monotonic time (``now``, deadlines, sleeps) stays the node's own.

The offset between the two clocks is sampled (``sample``) when the node starts and then at
every poll; ``wall()`` is the local monotonic clock plus the best recent offset. The offset
moves by a few milliseconds between samples, far below the 1 s at which the scheduler treats a
change of the wall clock as a jump.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from actors.clock import Clock, FakeClock, Unwatch
from actors.shared_plan import ClockSample
from actors.store.protocol import SharedStore

__all__ = ["DatabaseClock"]

KEEP_SAMPLE: Final = 60.0
"""Seconds a tight sample of the offset is preferred to a looser new one."""


class DatabaseClock:
    """The node's monotonic clock, with the database's clock as its wall clock. Any thread."""

    def __init__(self, base: Clock, read_database: Callable[[], float]) -> None:
        """Wrap ``base`` (the node's clock); ``read_database`` returns the database's ``now()``.

        Call ``sample`` once before reading ``wall``.
        """
        self._base = base
        self._read_database = read_database
        self.now: Callable[[], float] = base.now  # read on every message: bound once, no wrapper
        self._lock = threading.Lock()  # guards _sample and _sampled_at
        self._sample: ClockSample | None = None
        self._sampled_at = 0.0

    @classmethod
    def over(cls, base: Clock, store: SharedStore) -> DatabaseClock:
        """The clock of a scheduler on ``store``: ``base`` for deadlines, the database's for the wall.

        Reads the database's clock once (caller's thread).

        Raises:
            ValueError: ``base`` is a ``FakeClock``: a shared store's database decides what is
                due on its own clock, which no fake clock can move.
            StoreError: the database's clock cannot be read.
        """
        if isinstance(base, FakeClock):
            raise ValueError(
                "a shared store decides what is due on the database's clock, which a FakeClock "
                "cannot move; use the default clock (tests of shared stores wait for real time)"
            )
        clock = cls(base, store.db_now)
        clock.sample()
        return clock

    @property
    def base(self) -> Clock:
        """The node's own clock."""
        return self._base

    def sample(self) -> float:
        """Read the database's clock now and adjust the offset; return the database's clock.

        Runs on the caller's thread (a query); the store's ``StoreError`` passes through.
        """
        before = self._base.now()
        db_now = self._read_database()
        after = self._base.now()
        sample = ClockSample.between(before, db_now, after)
        with self._lock:
            if sample.better_than(self._sample, age=after - self._sampled_at, max_age=KEEP_SAMPLE):
                self._sample, self._sampled_at = sample, after
        return db_now

    @property
    def offset(self) -> float:
        """The database's clock (UTC epoch seconds) minus this clock's ``now()``."""
        with self._lock:
            sample = self._sample
        if sample is None:
            raise RuntimeError("DatabaseClock.sample() was never called")
        return sample.offset

    def database_now(self) -> float:
        """The database's clock now, as this node believes it (UTC epoch seconds)."""
        return self._base.now() + self.offset

    def wall(self) -> datetime:
        """Return the database's clock now, as an aware UTC ``datetime``."""
        return datetime.fromtimestamp(self.database_now(), UTC)

    def sleep_time(self, deadline: float) -> float:
        """Return how many real seconds to wait for ``deadline`` (the node's clock decides)."""
        return self._base.sleep_time(deadline)

    def watch(self, callback: Callable[[], None]) -> Unwatch:
        """Call ``callback`` when the node's clock jumps (as its own clock does)."""
        return self._base.watch(callback)

    def __repr__(self) -> str:
        return f"DatabaseClock({self._base!r})"
