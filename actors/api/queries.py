"""Cancelling and looking up tasks: ``cancel``, ``handle``, ``info``, ``tasks``, ``stats``."""

from __future__ import annotations

from actors.api.handles import TaskHandle
from actors.api.plumbing import Plumbing
from actors.core.task_record import TaskRecord
from actors.errors import UnknownTaskError
from messages import QueryStats, SchedulerStats, TaskId, TaskInfo


class Queries(Plumbing):
    """What a caller asks of the tasks by id, and a handle's cancel (the caller's thread)."""

    def cancel(self, task_id: TaskId, interrupt: bool = False) -> bool:
        """Cancel a task; return whether that prevented a run (or, ``interrupt``, signalled one).

        ``True`` for a task that had not started its run (it never runs; one ``CANCELLED``
        event) and for a recurring task cancelled mid-run (the run finishes, then
        ``CANCELLED``, and no further run). ``False`` for a running one-time task (it just
        finishes), and for unknown, finished or already-cancelled ids, and after shutdown.

        ``interrupt=True`` also asks a run in progress to stop: ``current_run().cancel_requested``
        becomes true there (and ``check()`` raises ``RunCancelled``; an ``async def`` task's
        coroutine is cancelled). Then ``True`` also for a running one-time task. A run that
        stops by raising ``RunCancelled`` ends the task ``CANCELLED``, not failed; one that
        returns anyway counts as a completed run, and the task still ends ``CANCELLED``.

        Decided on the calling thread when the scheduler already holds the task (a dict
        lookup, then the task's token, as ``TaskHandle.cancel``); otherwise (a task just
        scheduled, still on its way, or an unknown id) this asks the scheduler and waits.
        On a shared store the store decides for a durable task, whichever node holds it (one
        statement, committed when this returns ``True``; ``docs/scale-out.md``).

        Raises:
            StoreError: a durable task's cancel could not be committed. It is cancelled in this
                process all the same, and the scheduler's save of its end records it (if that
                fails too, the task comes back after a restart).
        """
        if not isinstance(task_id, str):  # callers without type checking: no task has such an id
            return False  # type: ignore[unreachable]
        task = self._live.get(task_id)
        if task is not None:
            return self._directory.revoke(task, interrupt)
        return self._directory.cancel(task_id, interrupt)

    def _revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel ``task`` through its token (caller's thread); if that won, tell the scheduler.

        ``interrupt``: also ask its run in progress, if any, to stop. A durable task's cancel
        is committed to the store before this returns ``True`` (``TaskDirectory.revoke``).
        """
        return self._directory.revoke(task, interrupt)

    def handle(self, task_id: TaskId) -> TaskHandle:
        """Return a handle of the task ``task_id``, live or finished (as ``info`` knows it).

        A live task is one scheduled here or loaded from the store. A finished one is any the
        history still holds: its handle is ``done()``, and its ``result()`` is the final one at
        once (the value its run returned, the exception it failed with, or ``CancelledError``).

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        if not isinstance(task_id, str):  # callers without type checking: no task has such an id
            raise UnknownTaskError(f"no task with id {task_id!r} (neither live nor in the history)")
        return self._directory.handle(task_id)

    def info(self, task_id: TaskId) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a recently finished one.

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        if not isinstance(task_id, str):  # callers without type checking: no task has such an id
            raise UnknownTaskError(f"no task with id {task_id!r}")
        return self._directory.info(task_id)

    def tasks(self, *, offset: int = 0, limit: int | None = None) -> list[TaskInfo]:
        """Return a snapshot of every live (not yet finished) task, in scheduling order.

        Tasks of ``schedule_many`` (and one-time tasks loaded from a store) that are still parked
        come after the others, in their own order. ``offset`` and ``limit``: only the tasks
        from the ``offset``-th on (0: the first), at most ``limit`` of them (``None``: all); a
        page of a long list costs the scheduler thread only that page's snapshots.

        Raises:
            TypeError: ``offset`` or ``limit`` is not an int.
            ValueError: ``offset`` or ``limit`` is negative.
        """
        for name, value in (("offset", offset), ("limit", 0 if limit is None else limit)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int, got {value!r}")
            if value < 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        return self._directory.infos(offset=offset, limit=limit)

    def stats(self) -> SchedulerStats:
        """Return the scheduler's counters (live tasks, heap size, timer wake-ups, ...).

        ``heap_size`` counts the tasks waiting for their due time; the entries cancels left in
        the heap, not yet pruned, are ``stale_heap_entries`` (``SchedulerStats`` says what
        each field means).
        """
        stats: SchedulerStats = self._query(QueryStats())
        return stats
