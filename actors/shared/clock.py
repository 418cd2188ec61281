"""``DatabaseClock``: a node's clock whose wall-clock reading is the shared database's clock.

On a shared store the database's clock decides what is due (``actors/store/protocol.py``,
``SharedStore``), so a node reads the wall clock there too: the due times it writes (``delay``
seconds from now), the run keys it makes and the times in the run ledger are then on the one
clock every node shares, and a machine whose clock is off cannot run anything early or late.
Monotonic time (``now``, deadlines, sleeps) stays the node's own.

The offset between the two clocks is sampled (``sample``) when the node starts (the tightest
of a few readings) and then at every poll; ``wall()`` is the local monotonic clock plus the
offset. The offset is kept steady: a later reading replaces it only when it is tight and says
the clocks have drifted apart by more than ``OFFSET_STEP``. Readings scatter by a few
milliseconds, and a recurring task's next due time is planned on this clock: a scattering
offset would move its slots off their grid, a steady one keeps them on it to the microsecond.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Final

from actors.shared.plan import ClockSample
from actors.store.protocol import SharedStore
from actors.sync.clock import Clock, FakeClock, Unwatch

__all__ = ["DatabaseClock"]

OFFSET_STEP: Final = 0.05
"""Seconds the clocks must have drifted apart before the offset follows (a slew, a step)."""

TIGHT: Final = 0.02
"""A reading that took at most this long (seconds) may move the offset."""

FIRST_READINGS: Final = 3
"""Readings taken when the node starts; the tightest one sets the offset."""


class DatabaseClock:
    """The node's monotonic clock, with the database's clock as its wall clock. Any thread."""

    def __init__(self, base: Clock, read_database: Callable[[], float]) -> None:
        """Wrap ``base`` (the node's clock); ``read_database`` returns the database's ``now()``.

        Call ``sample`` once before reading ``wall``.
        """
        self._base = base
        self._read_database = read_database
        self.now: Callable[[], float] = base.now  # read on every message: bound once, no wrapper
        self._lock = threading.Lock()  # guards _sample
        self._sample: ClockSample | None = None
        self._settled = False  # the offset came from a tight reading: only a drift moves it now

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
        for _ in range(FIRST_READINGS):
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
            current = self._sample
            if current is None or (not self._settled and sample.spread < current.spread):
                current = self._sample = sample  # the first reading, or a tighter one before any was tight
            elif sample.spread <= TIGHT and abs(sample.offset - current.offset) > OFFSET_STEP:
                current = self._sample = sample  # the clocks have drifted apart: follow
            self._settled = self._settled or current.spread <= TIGHT
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
