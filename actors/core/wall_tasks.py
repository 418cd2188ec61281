"""Wall-clock tasks, and how to tell that the wall clock jumped (part of the pure core).

A wall-clock task (a cron task, or a one-time task given an aware ``datetime``) is due at a
wall-clock instant, its record's ``due_wall``. The heap orders tasks by clock time, so such a
task's ``due_at`` is derived from ``due_wall`` with the *planned offset* (wall-clock time minus
clock time when it was planned). When the wall clock is stepped (NTP, a manual reset, a resume
from suspend) the offset moves: by more than ``JUMP_THRESHOLD`` and every wall-clock task is
planned again; less is drift, which the next plan takes in.

The owner (the timetable) calls ``observe`` with the offset it is given as the scheduler starts
(so the first task is planned against a known offset) and before each message.
Like the rest of the core this reads no clock.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from actors.core.task_record import TaskRecord

__all__ = ["JUMP_THRESHOLD", "WallTasks"]

JUMP_THRESHOLD: Final = 1.0
"""Seconds the wall clock must move against the clock to count as a jump."""


class WallTasks:
    """The live wall-clock tasks by id, and the offset their clock times were planned with."""

    __slots__ = ("_planned", "_tasks")

    def __init__(self) -> None:
        self._tasks: dict[str, TaskRecord] = {}
        self._planned: float | None = None  # unknown until the first observation

    def __iter__(self) -> Iterator[TaskRecord]:
        return iter(self._tasks.values())

    def __len__(self) -> int:
        return len(self._tasks)

    def track(self, task: TaskRecord) -> None:
        """Start (a wall-clock task) or stop (any other) tracking ``task``, by its spec."""
        if task.spec.on_wall:
            self._tasks[task.task_id] = task
        else:
            self._tasks.pop(task.task_id, None)

    def forget(self, task: TaskRecord) -> None:
        """Stop tracking ``task`` (it ended or left)."""
        self._tasks.pop(task.task_id, None)

    def clear(self) -> None:
        """Forget every task."""
        self._tasks.clear()

    def observe(self, offset: float) -> float | None:
        """Take the current offset; return the jump (seconds, > 0 forward) if it is one, else ``None``.

        A jump becomes the new planned offset: the caller must re-plan every task.
        """
        planned = self._planned
        if planned is None:
            self._planned = offset
            return None
        jump = offset - planned
        if -JUMP_THRESHOLD <= jump <= JUMP_THRESHOLD:
            return None
        self._planned = offset
        return jump

    @property
    def watched_offset(self) -> float | None:
        """The planned offset while a wall-clock task is live (the timer watches it); else ``None``."""
        return self._planned if self._tasks else None
