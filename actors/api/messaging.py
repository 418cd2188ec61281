"""The ``tell_*`` methods of ``Scheduler``: tasks that tell an actor a message."""

from __future__ import annotations

from datetime import datetime, tzinfo
from typing import Any

import pykka

from actors.api.handles import TaskHandle
from actors.api.submitting import Submitting
from actors.api.validation import TaskOptions, once_due_at
from actors.core.cron import CronSchedule
from actors.core.task_record import INLINE
from messages import Cron, FixedRate, TaskId
from messages.triggers import require_finite


class Messaging(Submitting):
    """``tell_once``, ``tell_at_fixed_rate``, ``tell_cron`` (the caller's thread)."""

    def tell_once(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        delay: float | None = None,
        *,
        at: float | datetime | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` once, ``delay`` seconds from now or at ``at``.

        The message is sent with ``ref.tell`` on the scheduler's own thread, with no worker
        involved, so it goes out on time even while every worker is busy. The task is named
        ``"<message type> -> <actor class>"`` unless ``name`` is given, shows in ``tasks()`` and
        ``info()`` like any other, and publishes the usual events. An actor that is dead when
        the message is due ends the task ``FAILED`` with ``pykka.ActorDeadError``. Message
        tasks live in memory only (an actor ref cannot be stored), with a store too.

        Raises:
            TypeError: ``ref`` is not a ``pykka.ActorRef``; otherwise as ``schedule_once``.
            ValueError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        due_at = once_due_at(self._clock, delay, at)
        due_wall = at.timestamp() if isinstance(at, datetime) else None
        options = _message_options(ref, message, name, misfire_grace, if_exists)
        return self._schedule(ref.tell, (message,), None, due_at, None, task_id, options, due_wall)

    def tell_at_fixed_rate(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        interval: float,
        initial_delay: float = 0.0,
        *,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` at ``now + initial_delay + k * interval``, k = 0, 1, 2, ...

        As ``tell_once`` (sent on the scheduler's thread; a dead actor ends the task
        ``FAILED``), on the slots of ``schedule_at_fixed_rate``; ``catch_up``, ``max_catch_up``
        and ``jitter`` as there. A tell takes microseconds, so
        a slot is missed only when the whole process stalls.

        Raises:
            TypeError, ValueError, DuplicateTaskError, SchedulerShutdownError: as
                ``schedule_at_fixed_rate`` (and ``tell_once``).
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        trigger = FixedRate(interval, first_at)
        options = _message_options(
            ref, message, name, misfire_grace, if_exists, (catch_up, max_catch_up, jitter)
        )
        return self._schedule(ref.tell, (message,), None, first_at, trigger, task_id, options)

    def tell_cron(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        expr: str,
        tz: str | tzinfo = "UTC",
        *,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` at the wall-clock times the cron expression ``expr`` names.

        As ``tell_once`` (sent on the scheduler's thread; a dead actor ends the task
        ``FAILED``), on the times of ``schedule_cron``; ``catch_up``, ``max_catch_up`` and
        ``jitter`` as there.

        Raises:
            TypeError, ValueError, DuplicateTaskError, SchedulerShutdownError: as
                ``schedule_cron`` (and ``tell_once``).
        """
        calendar = CronSchedule.parse(expr, tz)
        offset = self._wall_offset()
        due_wall = calendar.next_fire(self._clock.now() + offset)
        trigger = Cron(expr, calendar.zone_name)
        options = _message_options(
            ref, message, name, misfire_grace, if_exists, (catch_up, max_catch_up, jitter)
        )
        return self._schedule(
            ref.tell, (message,), None, due_wall - offset, trigger, task_id, options, due_wall
        )


def _message_options(
    ref: object,
    message: object,
    name: str | None,
    misfire_grace: float | None,
    if_exists: str,
    catching: tuple[str, int, float] = ("latest", 100, 0.0),
) -> TaskOptions:
    """The options of a message task: run inline, in memory, ended by its first failed tell.

    Raises:
        TypeError: ``ref`` is not an actor ref.
    """
    if not isinstance(ref, pykka.ActorRef):
        raise TypeError(f"ref must be a pykka.ActorRef, got {ref!r}")
    if name is None:
        name = f"{type(message).__name__} -> {ref.actor_class.__name__}"
    # A tell fails only when the actor is dead: max_consecutive_failures=1 ends the task then.
    catch_up, max_catch_up, jitter = catching  # a recurring tell's catch_up and jitter
    return TaskOptions(
        name,
        1,
        INLINE,
        misfire_grace,
        if_exists,
        False,
        catch_up=catch_up,
        max_catch_up=max_catch_up,
        jitter=jitter,
    )
