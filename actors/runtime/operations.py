"""The scheduler actor's side of operating a live task: ``Pause``, ``Resume``, ``RunNow``, ``Reschedule``.

The core decides (``actors/core/operations.py``); this carries the message to it with the clock's
``now``. Runs on the scheduler actor's thread only, inside its ``on_receive``: the actor carries
out the effects (a durable task's save among them) before its reply goes back, so a pause,
resume or reschedule is committed when the caller's ``ask`` returns.
"""

from __future__ import annotations

import logging
from typing import assert_never

from actors.core.timetable import Timetable
from messages import Pause, Reschedule, Resume, RunNow

__all__ = ["OPERATIONS", "Operation", "operate"]

logger = logging.getLogger(__name__)

Operation = Pause | Resume | RunNow | Reschedule
"""The messages that operate a live task."""

OPERATIONS = (Pause, Resume, RunNow, Reschedule)
"""Their types (for ``isinstance``)."""


def operate(core: Timetable, message: Operation, now: float) -> bool | ValueError:
    """Apply one operation to ``core`` at ``now`` (scheduler thread); the reply to an ``ask``.

    Replies the ``bool`` the core returns, or, for a ``Reschedule`` whose ``Cron`` does not parse
    or never fires, the ``ValueError`` (nothing changed; the facade raises it at the call).
    """
    match message:
        case Pause(task_id):
            return core.pause(task_id, now=now)
        case Resume(task_id):
            return core.resume(task_id, now=now)
        case RunNow(task_id):
            return core.run_now(task_id, now=now)
        case Reschedule(task_id, trigger):
            try:
                return core.reschedule(task_id, trigger, now=now)
            except ValueError as error:
                logger.warning("task %r not rescheduled: %s", task_id, error)
                return error
    assert_never(message)
