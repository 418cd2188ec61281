"""When a task runs next: the fixed-rate, fixed-delay and cron arithmetic (pure functions of time).

Like the timetable, this reads no clock: every time comes in as an argument.
"""

from __future__ import annotations

import math

from actors.core.cron import CronSchedule
from messages import Cron, Once, Trigger

__all__ = ["first_due_at", "next_cron", "next_fixed_delay", "next_fixed_rate"]


def first_due_at(trigger: Trigger, now: float) -> float:
    """Return the due time of a trigger's first run, ``now`` being when the scheduler received it.

    Raises:
        TypeError: a ``Cron`` trigger, whose times are wall-clock times (``next_cron``), not
            the scheduler's clock.
    """
    if isinstance(trigger, Cron):
        raise TypeError(f"{trigger!r} has no due time on the scheduler's clock")
    if isinstance(trigger, Once):
        return trigger.at if trigger.at is not None else now + (trigger.delay or 0.0)
    if trigger.first_at is not None:
        return trigger.first_at
    return now + (trigger.initial_delay or 0.0)


def next_fixed_rate(first_at: float, interval: float, ran_at: float, finished_at: float) -> float:
    """Return the next fixed-rate slot after the slot ``ran_at``, given the run finished at ``finished_at``.

    Slot k is due at ``first_at + k * interval``, computed rather than accumulated so it never
    drifts. The next run is the first slot after the one that ran which is not already past
    when the run finished (a slot exactly at ``finished_at`` counts); missed slots are skipped.
    Where floats cannot resolve that grid any more (an interval below their spacing, or a
    first slot astronomically far back), the grid restarts at the slot that ran.
    """
    try:
        ran_slot = round((ran_at - first_at) / interval)
        slot = max(ran_slot + 1, math.ceil((finished_at - first_at) / interval))
    except (OverflowError, ValueError):  # the quotient is not finite: no grid to speak of
        return _restarted_grid(interval, ran_at, finished_at)
    # The division may round either way by a slot; settle it against the product used for due times.
    for _ in range(3):
        if first_at + slot * interval < finished_at:
            slot += 1
        elif slot - 1 > ran_slot and first_at + (slot - 1) * interval >= finished_at:
            slot -= 1
        else:
            break
    due_at = first_at + slot * interval
    if due_at > ran_at and due_at >= finished_at:
        return due_at
    return _restarted_grid(interval, ran_at, finished_at)


def _restarted_grid(interval: float, ran_at: float, finished_at: float) -> float:
    """Return the first slot after ``ran_at`` of a grid anchored there that is not past at ``finished_at``."""
    due_at = ran_at + interval
    if due_at < finished_at:
        try:
            due_at = ran_at + math.ceil((finished_at - ran_at) / interval) * interval
        except (OverflowError, ValueError):
            due_at = finished_at
    return max(due_at, finished_at, math.nextafter(ran_at, math.inf))


def next_fixed_delay(delay: float, finished_at: float) -> float:
    """Return when a fixed-delay task runs next: ``delay`` seconds after its run finished.

    Always strictly later than ``finished_at``, even for a delay below the float spacing there.
    """
    return max(finished_at + delay, math.nextafter(finished_at, math.inf))


def next_cron(calendar: CronSchedule, ran_wall: float, finished_wall: float) -> float | None:
    """Return when a cron task runs next (wall-clock instants, UTC epoch), or ``None`` if never.

    The next run is the first firing time after the slot that ran (``ran_wall``) that is not
    already past when the run finished: slots missed while it ran late (or while nothing
    ran) are skipped, so they coalesce into the one run that happened. Counting from the
    later of the two also means a wall clock set back never brings a slot that ran back.
    """
    try:
        return calendar.next_fire(max(ran_wall, finished_wall))
    except ValueError:  # it fires no more (or not before the year 10000)
        return None
