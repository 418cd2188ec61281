"""Clocks: where the scheduler reads the time. Injectable so tests never wait for real time.

Deadlines are seconds on a monotonic clock. Wall-clock time (``wall()``) places wall-clock
tasks (cron, and one-time tasks given an aware ``datetime``) on that clock; the scheduler
compares the two clocks as it goes, and re-plans those tasks when the wall clock jumps
(``actors/core/wall_tasks.py``).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Protocol

from messages.triggers import require_finite

Unwatch = Callable[[], None]


class Clock(Protocol):
    """What the scheduler needs from a clock. Every method may be called from any thread."""

    def now(self) -> float:
        """Return the current time in monotonic seconds."""

    def wall(self) -> datetime:
        """Return the current wall-clock time as an aware ``datetime``."""

    def sleep_time(self, deadline: float) -> float:
        """Return how many real seconds to wait for ``deadline``; ``math.inf`` means "until woken"."""

    def watch(self, callback: Callable[[], None]) -> Unwatch:
        """Call ``callback`` (on the thread that moved the clock) whenever time jumps.

        Returns a function that stops the calls. A real clock never calls: its jumps are
        found by comparing ``now()`` and ``wall()``, which the timer does as it wakes.
        """


def _no_op() -> None:
    return None


class MonotonicClock:
    """The real clock: ``time.monotonic()``, immune to system clock changes."""

    def __init__(self) -> None:
        """Bind ``now`` straight to ``time.monotonic``: it is read on every message."""
        self.now: Callable[[], float] = time.monotonic

    def wall(self) -> datetime:
        """Return the current UTC time."""
        return datetime.now(UTC)

    def __repr__(self) -> str:
        return "MonotonicClock()"

    def sleep_time(self, deadline: float) -> float:
        """Return the seconds left until ``deadline`` (at least 0)."""
        return max(0.0, deadline - time.monotonic())

    def watch(self, callback: Callable[[], None]) -> Unwatch:
        """Return a no-op: real time never jumps."""
        return _no_op


DEFAULT_FAKE_WALL_START = datetime(2026, 1, 1, tzinfo=UTC)


class FakeClock:
    """A clock that moves only when told to, for deterministic tests.

    ``advance`` jumps the clock the way a suspended or stalled process sees time jump:
    everything due in between becomes due at once (recurring tasks then skip missed slots).
    Prefer ``Scheduler.advance``, which steps through every due time so each run happens at
    its own time. The wall-clock reading moves with ``advance`` and can also be moved on its
    own (``set_wall``), like a system clock being reset.
    """

    def __init__(self, start: float = 0.0, *, wall_start: datetime = DEFAULT_FAKE_WALL_START) -> None:
        """Start at monotonic time ``start`` and wall-clock time ``wall_start`` (aware)."""
        if wall_start.tzinfo is None:
            raise ValueError("wall_start must be an aware datetime")
        self._lock = threading.Lock()  # guards _now, _wall and _watchers
        self._now = require_finite("start", start)
        self._wall = wall_start
        self._watchers: dict[int, Callable[[], None]] = {}
        self._next_watch_id = 0

    def now(self) -> float:
        """Return the fake monotonic time."""
        return self._now

    def wall(self) -> datetime:
        """Return the fake wall-clock time."""
        return self._wall

    def sleep_time(self, deadline: float) -> float:
        """Return 0 if ``deadline`` has passed, else ``math.inf``: only ``advance`` brings it."""
        return 0.0 if deadline <= self._now else math.inf

    def watch(self, callback: Callable[[], None]) -> Unwatch:
        """Call ``callback`` after every ``advance`` and ``set_wall``; return the function that stops it."""
        with self._lock:
            watch_id = self._next_watch_id
            self._next_watch_id += 1
            self._watchers[watch_id] = callback

        def unwatch() -> None:
            with self._lock:
                self._watchers.pop(watch_id, None)

        return unwatch

    def advance(self, seconds: float) -> float:
        """Move time forward by ``seconds`` (both clocks) and wake the watchers; return ``now()``.

        Raises:
            ValueError: ``seconds`` is negative or not finite (time can't go backwards), or
                so large the wall reading would pass year 9999. Nothing moves then.
        """
        step = require_finite("seconds", seconds)
        if step < 0:
            raise ValueError(f"time can't go backwards: advance({seconds!r})")
        with self._lock:
            now = self._move_to(self._now + step)
            watchers = list(self._watchers.values())
        for callback in watchers:
            callback()
        return now

    def advance_to(self, when: float) -> float:
        """Move time forward to exactly ``when`` and wake the watchers; return ``now()``.

        Raises:
            ValueError: ``when`` is earlier than ``now()``, not finite, or so far ahead the
                wall reading would pass year 9999. Nothing moves then.
        """
        target = require_finite("when", when)
        with self._lock:
            if target < self._now:
                raise ValueError(f"time can't go backwards: advance_to({when!r}) at {self._now!r}")
            now = self._move_to(target)
            watchers = list(self._watchers.values())
        for callback in watchers:
            callback()
        return now

    def _move_to(self, target: float) -> float:
        # Caller holds _lock. Setting the target itself (not now + step) keeps it exact.
        self._wall = self._wall_at(target)
        self._now = target
        return target

    def _wall_at(self, target: float) -> datetime:
        """The wall reading at monotonic ``target`` (caller holds ``_lock``).

        Raises:
            ValueError: it is past what a ``datetime`` can show (year 9999).
        """
        try:
            return self._wall + timedelta(seconds=target - self._now)
        except OverflowError:
            raise ValueError(
                f"moving the clock to {target!r} would move its wall reading past {datetime.max.year}"
            ) from None

    def check_reachable(self, target: float) -> None:
        """Raise ``ValueError`` if moving to ``target`` would take the wall reading past year 9999."""
        with self._lock:
            self._wall_at(target)

    def set_wall(self, when: datetime) -> None:
        """Set the wall-clock reading alone, as a system clock reset does, and wake the watchers.

        Monotonic time does not move. A scheduler on this clock notices the jump at once:
        its wall-clock tasks are re-planned and ``CLOCK_JUMPED`` is published (a jump of
        more than a second).

        Raises:
            ValueError: ``when`` is naive.
        """
        if when.tzinfo is None:
            raise ValueError("set_wall needs an aware datetime")
        with self._lock:
            self._wall = when
            watchers = list(self._watchers.values())
        for callback in watchers:
            callback()

    def __repr__(self) -> str:
        return f"FakeClock(now={self._now!r}, wall={self._wall.isoformat()})"
