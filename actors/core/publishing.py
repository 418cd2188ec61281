"""``Publishing``: how the timetable's parts publish an event of a task (as an effect).

Part of the pure core (see ``actors/core/timetable.py``; a mixin whose state is the
timetable's): the root of its parts, so each of them publishes through one ``_emit``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from messages import EventKind, TaskEvent

if TYPE_CHECKING:
    from actors.core.effects import Effects
    from actors.core.task_record import TaskRecord

__all__ = ["Publishing"]


class Publishing:
    """The timetable's events, appended to its effects (a mixin: the state is the timetable's)."""

    if TYPE_CHECKING:  # the timetable's state this part uses
        _effects: Effects

    def _emit(
        self,
        kind: EventKind,
        task: TaskRecord,
        at: float,
        run: int | None,
        *,
        error: BaseException | None = None,
        traceback: str | None = None,
        value: object = None,
        final: bool = False,
        retrying: bool = False,
        attempt: int | None = None,
        reason: str | None = None,
    ) -> None:
        """Publish ``kind`` for ``task`` as an effect (the scheduler thread delivers it)."""
        if (
            attempt is None
        ):  # the attempt due (DUE) or running (STARTED, TIMED_OUT...), or that ran (retrying)
            failures = task.failures
            attempt = 1 if failures is None else failures.attempt - retrying
        self._effects.events.append(
            TaskEvent(
                kind=kind,
                task_id=task.task_id,
                name=task.label(),
                at=at,
                run=run,
                due_at=task.due_at if run is not None else None,
                error=error,
                traceback=traceback,
                value=value,
                final=final,
                attempt=attempt,
                retrying=retrying,
                reason=reason,
            )
        )
