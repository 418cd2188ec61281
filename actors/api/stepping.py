"""Settling and stepping a scheduler: how a test waits for it, and walks a ``FakeClock`` through time.

Both run on the caller's thread and only send messages and wait.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from actors.api.mailboxes import ActorMailbox, probe_all
from actors.sync.clock import FakeClock
from actors.sync.waiting import Deadline, check_timeout
from messages.triggers import require_finite

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort


def settle(
    scheduler: SchedulerPort,
    deadline: Deadline,
    timeout: float,
    also: Sequence[ActorMailbox] = (),
    until: float | None = None,
) -> None:
    """Wait until the scheduler is quiet, and the actors ``also`` names have handled their mail.

    One settle step runs what is due, waits for it, then for the bus to deliver every event
    published so far, and answers with the scheduler's activity count. A listener may
    schedule or cancel something while its events are delivered, so one step is not enough:
    steps repeat until one finds the count unchanged, that is, until a whole step passed
    without anything happening.

    With actors: then, in rounds, each of them is probed (``actors/api/mailboxes.py``) and the
    scheduler settled again, as the actors may have scheduled, cancelled or sent messages
    meanwhile; it ends with a round in which the actors received nothing new and the
    scheduler's count did not move.

    ``until``: the end of an ``advance`` window; nothing due after it runs (``Settle``).

    Raises:
        TimeoutError: not quiet by ``deadline`` (the message names ``timeout``, and the actor
            that did not answer, if one did not).
    """
    count = _settle_scheduler(scheduler, deadline, timeout, until)
    if not also:
        return
    while True:
        quiet = probe_all(also, deadline, timeout)
        again = _settle_scheduler(scheduler, deadline, timeout, until)
        if quiet and again == count:
            return
        count = again


def _settle_scheduler(
    scheduler: SchedulerPort, deadline: Deadline, timeout: float, until: float | None
) -> int | None:
    """Settle the scheduler; return its activity count then (``None``: it has stopped)."""
    try:
        count = scheduler._settle_step(deadline, until)
        while count is not None:
            again = scheduler._settle_step(deadline, until)
            if again == count:
                return count
            count = again
    except TimeoutError as error:
        raise TimeoutError(f"scheduler did not settle within {timeout} s") from error
    return None


def advance(
    scheduler: SchedulerPort, seconds: float, timeout: float, also: Sequence[ActorMailbox] = ()
) -> None:
    """Move the scheduler's ``FakeClock`` forward ``seconds``, settling at every due time on the way.

    Each settle waits for the actors ``also`` names too, so what they schedule as they handle
    a message (a fixed-delay timer's next message, a retry) is known before the next step.

    It stops at the end of its window. A run may move the clock itself (to model how long it
    takes), past the window's end even: what is due by the clock reading then runs once, and
    what those runs bring due after it waits, held back, for the next ``advance`` or
    ``settle`` (else an hourly task whose run takes an hour would make each next slot due at
    once, for ever).

    Raises:
        TypeError: the clock is not a ``FakeClock``.
        ValueError: ``seconds`` is negative, not finite, or beyond what the fake wall clock can show.
        TimeoutError: a step did not settle within ``timeout``.
    """
    clock = scheduler.clock
    if not isinstance(clock, FakeClock):
        raise TypeError(f"advance() needs a FakeClock, the scheduler has {clock!r}")
    step = require_finite("seconds", seconds)
    if step < 0:
        raise ValueError(f"time can't go backwards: advance({seconds!r})")
    check_timeout(timeout)
    target = clock.now() + step
    clock.check_reachable(target)
    settle(scheduler, Deadline(timeout), timeout, also, until=target)
    while True:
        due = scheduler._next_due()
        if due is None or due > target:
            break
        if due > clock.now():  # a run may have moved the clock past it already
            clock.advance_to(due)
        settle(scheduler, Deadline(timeout), timeout, also, until=target)
    reached = clock.now()
    if target > reached:  # ... or past the end of the window
        clock.advance_to(target)
        reached = target
    # What a run's overrun brought due runs once; whatever those runs bring due after the
    # clock reading they started at waits (held). With no overrun, time is free again.
    settle(scheduler, Deadline(timeout), timeout, also, until=reached if reached > target else None)
