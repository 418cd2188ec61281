"""Cancelling and looking up tasks: ``cancel``, ``handle``, ``info``, ``tasks``, ``stats``."""

from __future__ import annotations

import contextlib

from actors.api.handles import TaskHandle
from actors.api.plumbing import OUTBOX_BACKLOG, Plumbing
from actors.core.task_record import (
    TaskRecord,
)
from actors.errors import (
    SchedulerShutdownError,
    UnknownTaskError,
)
from actors.runtime.minting import is_memory_id
from actors.sync.token import FREE, RAN, RUNNING
from messages import (
    Cancel,
    Cancelled,
    FindTask,
    QueryStats,
    QueryTask,
    QueryTasks,
    SchedulerStats,
    TaskId,
    TaskInfo,
)


class Queries(Plumbing):
    """What a caller asks of the tasks by id, and a handle's cancel (the caller's thread)."""

    # -- control and queries ----------------------------------------------------------------

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
            return self._revoke(task, interrupt)
        shared = self._shared_tasks
        stored = shared is not None and not self._closed and not is_memory_id(task_id)
        if stored and shared is not None and shared.cancel(self, task_id, interrupt=interrupt):
            return True  # a durable task of the shared store (it decides, whichever node holds it)
        with self._lock:
            if self._closed:
                return False
            reply = self._ask(Cancel(task_id, interrupt))
        answer = self._get(reply)
        if isinstance(answer, BaseException):  # the store could not commit it: cancelled here only
            raise answer
        return bool(answer)

    def _revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel ``task`` through its token (caller's thread); if that won, tell the scheduler.

        ``interrupt``: also ask its run in progress, if any, to stop. A durable task's cancel
        is committed to the store before this returns ``True``.
        """
        if self._shared_tasks is not None and task.store_seq is not None:
            return self._shared_tasks.revoke(self, task, interrupt)  # the shared store decides
        signalled = interrupt and task.interrupt()
        before = task.revoke()
        if before is not FREE and before is not RUNNING and before is not RAN:
            return signalled  # a one-time run started, the task is ending or has ended, or was cancelled
        try:
            if task.store_seq is not None and self._store is not None:
                self._store.cancel(task.task_id)  # a StoreError: cancelled in this process only
        finally:  # the token is revoked either way: the scheduler must end the task here
            with self._lock:
                if not self._closed:  # else the shutdown ends it anyway: it finds the token revoked
                    with contextlib.suppress(SchedulerShutdownError):  # stopped by force: all ended
                        self._put(Cancelled(task, before is not FREE))  # RUNNING or RAN: a run in flight
        self._make_room(OUTBOX_BACKLOG)
        return True

    def handle(self, task_id: TaskId) -> TaskHandle:
        """Return a handle of the task ``task_id``, live or finished (as ``info`` knows it).

        A live task is one scheduled here or loaded from the store. A finished one is any the
        history still holds: its handle is ``done()``, and its ``result()`` is the final one at
        once (the value its run returned, the exception it failed with, or ``CancelledError``).

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        task = self._live.get(task_id) if isinstance(task_id, str) else None
        stored = isinstance(task_id, str) and not is_memory_id(task_id)  # memory ids: never in the store
        if self._shared_tasks is not None and stored and (task is None or task.durable):
            shared = self._shared_tasks.handle(self, task_id)  # a durable task: its row says
            if shared is not None:
                return shared
        if task is None and isinstance(task_id, str):
            # One still on its way to the scheduler, say, or one that has finished.
            task = self._query(FindTask(task_id, finished=True))
        if not isinstance(task, TaskRecord):
            raise UnknownTaskError(f"no task with id {task_id!r} (neither live nor in the history)")
        return TaskHandle(task, self)

    def info(self, task_id: TaskId) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a recently finished one.

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        info = None
        if self._shared_tasks is not None and isinstance(task_id, str) and not is_memory_id(task_id):
            info = self._shared_tasks.info(task_id)  # a durable task: its row says
        if info is None and isinstance(task_id, str):
            info = self._query(QueryTask(task_id))
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        assert isinstance(info, TaskInfo)
        return info

    def tasks(self) -> list[TaskInfo]:
        """Return a snapshot of every live (not yet finished) task, in scheduling order.

        Tasks of ``schedule_many`` (and one-time tasks loaded from a store) that are still parked
        come after the others, in their own order.
        """
        infos: list[TaskInfo] = self._query(QueryTasks())
        if self._shared_tasks is not None:  # durable tasks: the store's rows, whichever node runs them
            stored = self._shared_tasks.infos()
            ids = {info.task_id for info in stored}
            infos = [info for info in infos if info.task_id not in ids] + stored
        return infos

    def stats(self) -> SchedulerStats:
        """Return the scheduler's counters (live tasks, heap size, timer wake-ups, ...).

        ``heap_size`` counts the tasks waiting for their due time; the entries cancels left in
        the heap, not yet pruned, are ``stale_heap_entries`` (``SchedulerStats`` says what
        each field means).
        """
        stats: SchedulerStats = self._query(QueryStats())
        return stats
