"""The timer thread: sleeps until the head of the heap is due, then tells the scheduler ``Tick``.

It knows nothing about tasks: the scheduler arms it with one deadline (the head of its heap)
and it sends at most one ``Tick`` per arming. It never runs a task and never busy-waits: it
blocks on its condition until the deadline passes, a new deadline is armed, the clock jumps
past the deadline (``FakeClock``), or it is stopped.

While wall-clock tasks are pending the scheduler also gives it the wall-clock offset (wall
time minus clock time) they were planned with. The timer then wakes at least every
``WALL_CHECK_INTERVAL`` seconds, and whenever a ``FakeClock`` is moved, to compare the two
clocks; if the wall clock has jumped by more than ``JUMP_THRESHOLD`` it sends the ``Tick``
early, and the scheduler re-plans (``Timetable.observe_wall_offset``).
"""

from __future__ import annotations

import logging
import math
import threading
from typing import Any, Final

import pykka

from actors.core.wall_tasks import JUMP_THRESHOLD
from actors.sync.clock import Clock
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.waiting import LONGEST_WAIT
from messages import Tick

logger = logging.getLogger(__name__)

_TICK = Tick()

RETRY_WAIT: Final = (0.01, 1.0)
"""After an unexpected error the timer logs it and tries again, waiting from 10 ms up to 1 s."""

WALL_CHECK_INTERVAL: Final = 60.0
"""Longest sleep while wall-clock tasks are pending: how late a wall-clock jump may be noticed."""


class TimerThread:
    """One daemon thread that turns the armed deadline into a ``Tick`` for ``target``."""

    def __init__(
        self,
        clock: Clock,
        target: pykka.ActorRef[Any],
        *,
        name: str = "scheduler-timer",
        threads: ThreadRegistry | None = None,
    ) -> None:
        """Prepare (but do not start) a timer that tells ``target`` ``Tick()`` when due."""
        self._clock = clock
        self._target = target
        # _condition guards _deadline, _watched, _stopped and _wakeups. Whoever changes
        # _deadline, _watched or _stopped notifies it; the timer thread is its only waiter.
        self._condition = threading.Condition(threading.Lock())
        self._deadline: float | None = None
        self._watched: float | None = None  # the wall-clock offset to watch for a jump
        self._stopped = False
        self._wakeups = 0
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._threads = threads
        self._unwatch = clock.watch(self._on_clock_jump)

    @property
    def thread(self) -> threading.Thread:
        """The timer's thread."""
        return self._thread

    @property
    def wakeups(self) -> int:
        """How many times the thread has woken from a wait (for no-busy-wait tests)."""
        return self._wakeups

    def start(self) -> None:
        """Start the thread (called once, by the scheduler actor, on its thread)."""
        if self._threads is not None:
            self._threads.add(self._thread, Role.TIMER)
        self._thread.start()

    def arm(self, deadline: float | None, watched_wall_offset: float | None = None) -> None:
        """Make ``deadline`` the moment to send the next ``Tick`` (``None`` disarms).

        ``watched_wall_offset``: the wall-clock offset the pending wall-clock tasks were planned
        with (``None``: there are none); a ``Tick`` also goes out when the clocks drift apart
        from it by more than ``JUMP_THRESHOLD``.

        Called on the scheduler actor's thread whenever either changes. Cheap: it takes the
        lock and notifies only if something really changed.
        """
        with self._condition:
            if deadline != self._deadline or watched_wall_offset != self._watched:
                self._deadline = deadline
                self._watched = watched_wall_offset
                self._condition.notify()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the thread and wait up to ``timeout`` seconds for it to end. Idempotent."""
        self._unwatch()
        with self._condition:
            self._stopped = True
            self._condition.notify()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _on_clock_jump(self) -> None:
        # Runs on the thread that moved a FakeClock: wake the timer only if now due, or jumped.
        with self._condition:
            if self._is_due() or self._wall_jumped():
                self._condition.notify()

    def _is_due(self) -> bool:
        """Whether the armed deadline has come (caller holds ``_condition``)."""
        return self._deadline is not None and self._clock.sleep_time(self._deadline) <= 0.0

    def _wall_jumped(self) -> bool:
        """Whether the wall clock moved too far from the watched offset (caller holds ``_condition``)."""
        watched = self._watched
        if watched is None:
            return False
        try:
            offset = self._clock.wall().timestamp() - self._clock.now()
        except (OverflowError, ValueError, OSError):
            return False
        return abs(offset - watched) > JUMP_THRESHOLD

    def _run(self) -> None:
        retry_wait = 0.0
        while True:
            try:
                if not self._wait_until_due():
                    return
                self._target.tell(_TICK)
                retry_wait = 0.0
            except pykka.ActorDeadError:
                logger.debug("scheduler gone; timer exits")
                return
            except Exception:
                # Never die silently: a dead timer would leave every timed task waiting for ever.
                retry_wait = min(max(retry_wait * 2, RETRY_WAIT[0]), RETRY_WAIT[1])
                logger.exception("timer thread failed; retrying in %.2f s", retry_wait)
                with self._condition:
                    if not self._stopped:
                        self._condition.wait(retry_wait)
            except BaseException:
                logger.critical("timer thread died; timed tasks will not run", exc_info=True)
                raise

    def _wait_until_due(self) -> bool:
        """Block until due or the wall clock jumped (disarm, return True), or until stopped (False)."""
        with self._condition:
            while not self._stopped:
                remaining = math.inf if self._deadline is None else self._clock.sleep_time(self._deadline)
                if remaining <= 0.0 or self._wall_jumped():
                    self._deadline = self._watched = None
                    return True
                if self._watched is not None:
                    remaining = min(remaining, WALL_CHECK_INTERVAL)
                # threading refuses waits above TIMEOUT_MAX: sleep a day at a time at most.
                self._condition.wait(None if math.isinf(remaining) else min(remaining, LONGEST_WAIT))
                self._wakeups += 1
            return False
