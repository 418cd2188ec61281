"""Backpressure: a thread filling a big schedule waits for the scheduler instead of outrunning it.

The facade puts tasks with minted ids in the scheduler's outbox and returns at once; a caller
that finds more than ``OUTBOX_BACKLOG`` items the scheduler has not taken yet waits until it
takes them. These tests read the outbox's backlog (white-box): its bound is the promise, and
the lateness it buys is measured by the ``million`` benchmark, not here.
"""

from __future__ import annotations

import threading

from actors import FakeClock, Scheduler
from actors.api.plumbing import OUTBOX_BACKLOG
from messages import EventKind, TaskEvent, TaskStatus

WAIT = 10.0


def noop() -> None:
    return None


def test_a_caller_filling_the_schedule_never_leaves_more_than_the_backlog_behind() -> None:
    s = Scheduler(workers=2)
    try:
        most = 0
        for _ in range(10 * OUTBOX_BACKLOG):
            s.schedule_once(noop, delay=3600.0)
            most = max(most, s._outbox.backlog)
        assert most <= OUTBOX_BACKLOG
        s.settle(timeout=WAIT)
        assert s.stats().live_tasks == 10 * OUTBOX_BACKLOG
    finally:
        s.shutdown(timeout=WAIT)


def test_tasks_and_listeners_that_schedule_many_tasks_wait_without_deadlock() -> None:
    """A worker's thread and the event bus's may wait for room too: the scheduler drains meanwhile."""
    s = Scheduler(workers=2, clock=FakeClock())
    try:
        many = 3 * OUTBOX_BACKLOG
        from_listener = threading.Event()
        ran: list[int] = []

        def fan_out() -> int:
            for _ in range(many):
                s.schedule_once(ran.append, delay=0.0, args=(1,))
            return many

        def listener(event: TaskEvent) -> None:  # on the bus thread, after the first run
            if not from_listener.is_set():
                from_listener.set()
                fan_out()

        s.subscribe(listener, kinds=[EventKind.COMPLETED])
        handle = s.schedule_once(fan_out, delay=0.0)  # on a worker's thread
        assert handle.result(timeout=WAIT) == many
        s.settle(timeout=WAIT)
        assert from_listener.is_set()
        assert (s.stats().live_tasks, len(ran)) == (0, 2 * many)
        assert handle.info().status is TaskStatus.COMPLETED
    finally:
        s.shutdown(timeout=WAIT)
