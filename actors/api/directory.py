"""``TaskDirectory``: where the facade finds a scheduler's tasks, whatever holds them.

The facade has one code path for memory, SQLite and PostgreSQL: it builds a task and hands it
to its directory, and asks the directory to cancel it, to find it, to describe it. What differs
between the modes is the directory:

- ``LocalTasks`` (``local_tasks.py``): the tasks live in this node's scheduler actor, in memory,
  and the durable ones on SQLite too (committed first): a minted id goes through the outbox, a
  chosen one is an ``AddTask``; a cancel moves the task's token;
- ``SharedTasks`` (``shared_tasks.py``): the durable tasks of a shared PostgreSQL store live in
  the database (whichever node claims a run runs it), so they are committed, cancelled and read
  there; memory-only tasks (``durable=False``, ids ``task-m<n>``) are its ``LocalTasks``'s.

Every member runs on the caller's thread; none is called with the facade's ``_lock`` held.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from actors.core.task_record import TaskRecord
from messages import TaskId, TaskInfo

if TYPE_CHECKING:
    from actors.api.handles import TaskHandle

__all__ = ["DurableRow", "TaskDirectory"]

DurableRow = tuple[str, str, str]
"""A durable task's stored definition: its function's reference, its arguments and keyword
arguments as JSON (``None`` for a memory-only task)."""


class TaskDirectory(Protocol):
    """The facade's tasks, wherever they live. Every member: the caller's thread, ``_lock`` not held."""

    runs_stored_tasks: bool
    """Whether tasks committed to the store are this node's to run (a plain store's: handed to
    its scheduler) or wait there for whichever node claims them (a shared store's)."""

    def submit(
        self,
        task: TaskRecord,
        task_id: TaskId | None,
        row: DurableRow | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Hand a new task over (``row``: its durable definition, committed first); return its handle.

        ``task_id``: ``None`` mints one; else a chosen id, ``if_exists`` as ``schedule_once``.

        Raises:
            DuplicateTaskError: ``task_id`` is live (and ``if_exists="error"``).
            StoreError: the store could not commit it.
            SchedulerShutdownError: after ``shutdown``.
        """
        ...

    def revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel a task this node holds (a live record, or a handle's): as ``Scheduler.cancel`` says."""
        ...

    def cancel(self, task_id: TaskId, interrupt: bool = False) -> bool:
        """Cancel the task ``task_id``, which this node's scheduler does not hold yet (or at all).

        One on its way to the scheduler, an unknown id, or (shared store) a durable task that
        any node may hold. ``False`` after shutdown.
        """
        ...

    def handle(self, task_id: TaskId) -> TaskHandle:
        """A handle of the task ``task_id``, live or finished (``UnknownTaskError`` if none)."""
        ...

    def dependency(self, task_id: TaskId) -> TaskRecord | None:
        """A record of a task ``schedule_after`` may wait for that the scheduler does not hold, or ``None``.

        A shared store's durable task (read from its row); none otherwise.
        """
        ...

    def info(self, task_id: TaskId) -> TaskInfo:
        """A snapshot of the task ``task_id`` (``UnknownTaskError`` if none)."""
        ...

    def infos(self, *, offset: int = 0, limit: int | None = None) -> list[TaskInfo]:
        """Snapshots of every live task, in scheduling order (``offset``, ``limit``: ``Scheduler.tasks``')."""
        ...
