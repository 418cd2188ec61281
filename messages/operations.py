"""Commands that operate a live task: pause, resume, run now, reschedule (issue 24).

Each is what ``Scheduler.pause``, ``resume``, ``run_now`` and ``reschedule`` send, and a pykka
application may send them to ``Scheduler.ref`` itself: an ``ask`` is answered with the same
``bool`` the facade returns (``False`` for an unknown or ended task, as ``Cancel``). Every field is
checked when the message is built: a wrong type is a ``TypeError`` there, and nothing changes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from messages.commands import require_task_id
from messages.events import TaskId
from messages.triggers import TRIGGER_TYPES, Trigger

__all__ = ["Pause", "Reschedule", "Resume", "RunNow", "require_trigger"]


def require_trigger(trigger: object) -> None:
    """Check that ``trigger`` is a ``Once``, ``FixedRate``, ``FixedDelay`` or ``Cron`` (``TypeError``)."""
    if type(trigger) not in TRIGGER_TYPES:
        raise TypeError(
            f"trigger must be one of {sorted(t.__name__ for t in TRIGGER_TYPES)}, got {trigger!r}"
        )


@final
@dataclass(frozen=True, slots=True)
class Pause:
    """Pause a task: no new run starts until ``Resume``; a run in progress finishes.

    Reply (when asked): ``True`` if it paused a live task; ``False`` if the task is unknown,
    ended or already paused.
    """

    task_id: TaskId

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class Resume:
    """Resume a paused task. Reply (when asked): ``True`` if it was paused."""

    task_id: TaskId

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class RunNow:
    """Run a task once now, outside its schedule (its grid does not move).

    Reply (when asked): ``True`` if a run was started; ``False`` if the task is unknown, ended,
    waiting for its dependencies, or has a run in progress (or about to start).
    """

    task_id: TaskId

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class Reschedule:
    """Give a live task a new trigger, keeping its function, arguments, options and counters.

    Reply (when asked): ``True`` if the task was live and now has the trigger; ``False`` if it is
    unknown or ended (or, for a hand-sent message, a ``Cron`` that does not parse: the facade
    checks that at the call instead).
    """

    task_id: TaskId
    trigger: Trigger

    def __post_init__(self) -> None:
        require_task_id(self.task_id)
        require_trigger(self.trigger)
