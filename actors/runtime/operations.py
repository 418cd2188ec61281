"""The scheduler actor's side of operating a live task: ``Pause``, ``Resume``, ``RunNow``, ``Reschedule``.

The core decides (``actors/core/operations.py``); this carries the message to it with the clock's
``now``. Runs on the scheduler actor's thread only, inside its ``on_receive``: the actor carries
out the effects (a durable task's save among them) before its reply goes back, so a pause,
resume or reschedule is committed when the caller's ``ask`` returns.

Where the task's token decides (``token_decides``: a memory task), ``operate_by_token`` makes the
move the facade's callers make, report put in the outbox under the token's lock, so that it
takes its place among theirs; the actor drains the outbox before it replies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, assert_never

from actors.core.operations import PAUSE, RESUME, RUN_NOW, core_refuses, token_decides
from actors.core.timetable import Timetable
from actors.sync.token import DONE
from messages import Pause, Paused, Reschedule, Resume, Resumed, RunNow, RunNowClaimed

__all__ = ["OPERATIONS", "Operation", "operate", "operate_by_token"]

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


def operate_by_token(core: Timetable, message: Operation, put: Callable[[Any], bool]) -> bool | None:
    """Decide ``message`` on its task's token, as the facade does (scheduler thread); ``None`` if it does not.

    ``None`` for a ``Reschedule``, an unknown id and a task ``token_decides`` leaves to the
    core (``operate``). Else the reply: the move's result, after the refusals only the core
    knows (an ending task; ``run_now`` of one waiting for its dependencies). A move that won
    ``put`` its report in the outbox; the caller drains it before replying.
    """
    if isinstance(message, Reschedule):
        return None
    task = core.tasks.get(message.task_id)
    operation = _OPERATION_OF[type(message)]
    if task is None or not token_decides(task, operation):
        return None
    if core_refuses(task, operation):
        return False
    if isinstance(message, Pause):
        verdict, _ = task.hold(Paused(task), put, taken_live=True)
    elif isinstance(message, Resume):
        verdict, _ = task.release_hold(Resumed(task), put, taken_live=True)
    else:
        verdict, _ = task.claim_manual(RunNowClaimed(task), put)
    return verdict == DONE


_OPERATION_OF: dict[type, str] = {Pause: PAUSE, Resume: RESUME, RunNow: RUN_NOW}
