"""``LocalTasks``: the ``TaskDirectory`` of tasks that live in this node's scheduler actor.

Every task in memory, every task of an SQLite store (committed to it first, then handed over
as any other) and, beside a shared store, its memory-only tasks. A part of the facade, composed
rather than inherited (a shared store puts ``SharedTasks`` in front of it): it uses the
facade's plumbing (``plumbing.py``) as the facade's other parts do, and nothing else does.

Every method runs on the caller's thread. A minted id needs no reply: the task goes into the
outbox under the facade's ``_lock`` (so nothing is put or committed after ``Shutdown``); a
chosen id asks the scheduler (``AddTask``), which may refuse it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping

from actors.api.directory import DurableRow
from actors.api.handles import TaskHandle
from actors.api.plumbing import OUTBOX_BACKLOG, Plumbing
from actors.api.validation import check_task_id
from actors.core.task_record import TaskRecord
from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError
from actors.runtime.durable import definition
from actors.runtime.minting import IdMint
from actors.store import Store
from actors.sync.token import FREE, RAN, RUNNING
from messages import AddTask, Cancel, Cancelled, FindTask, QueryTask, QueryTasks, TaskId, TaskInfo

__all__ = ["LocalTasks"]


class LocalTasks:
    """The tasks this node's scheduler actor holds (a ``TaskDirectory``). Every method: any thread."""

    runs_stored_tasks = True  # its store is this scheduler's own

    __slots__ = ("_facade", "_live", "_lock", "_memory_ids", "_mint", "_outbox", "_store")

    def __init__(
        self, facade: Plumbing, live: Mapping[TaskId, TaskRecord], mint: IdMint, store: Store | None
    ) -> None:
        """Serve ``facade``, whose scheduler keeps its live tasks in ``live``; ``store``: its durable ones.

        The facade's ``_lock`` and ``_outbox`` must be set already: they are read once, here
        (the hot paths below use them a million times).
        """
        self._facade = facade
        self._live = live
        self._mint = mint
        self._store = store
        self._lock = facade._lock  # the facade's: guards its _closed, held while putting
        self._outbox = facade._outbox
        self._memory_ids = mint.memory_ids

    def add_memory(self, task: TaskRecord) -> TaskHandle:
        """Hand over a memory-only task to be given a minted id: ``submit(task, None)``, the plain path.

        The same steps as there, with nothing to decide: no reply to wait for, no store.
        """
        facade = self._facade
        outbox = self._outbox
        with self._lock:
            if facade._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            task.task_id = next(self._memory_ids)
            if outbox.put(task):
                facade._tell_drain()
        if outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
            facade._make_room(OUTBOX_BACKLOG)
        return TaskHandle(task, facade)

    def submit(
        self,
        task: TaskRecord,
        task_id: TaskId | None,
        row: DurableRow | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Hand a new task to the scheduler (a durable one committed to the store first)."""
        facade = self._facade
        if task_id is None:  # a minted id cannot clash: no need to wait for a reply
            with facade._lock:  # held across the commit, so that nothing is committed after shutdown
                if facade._closed:
                    raise SchedulerShutdownError("scheduler is shut down")
                task.task_id = self._mint() if row is not None else next(self._memory_ids)  # memory: no store
                if row is not None:
                    assert self._store is not None
                    stored, _ = self._store.add(definition(task, *row, wall_offset=facade._wall_offset()))
                    task.store_seq = stored.seq
                facade._put(task)
            if facade._outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
                facade._make_room(OUTBOX_BACKLOG)
            return TaskHandle(task, facade)
        task.task_id = check_task_id(task_id)
        plan = None if row is None else definition(task, *row, wall_offset=facade._wall_offset())
        with facade._lock:
            if facade._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            reply = facade._ask(AddTask(task, if_exists, plan))
        live = facade._get(reply)
        if isinstance(live, BaseException):
            raise live
        if live is None:
            if facade._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            raise DuplicateTaskError(f"a live task already has id {task_id!r}")
        return TaskHandle(live, facade)

    def revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel ``task`` through its token (caller's thread); if that won, tell the scheduler.

        ``interrupt``: also ask its run in progress, if any, to stop. A durable task's cancel
        is committed to the store before this returns ``True``.
        """
        signalled = interrupt and task.interrupt()
        before = task.revoke()
        if before is not FREE and before is not RUNNING and before is not RAN:
            return signalled  # a one-time run started, the task is ending or has ended, or was cancelled
        facade = self._facade
        outbox = self._outbox
        try:
            if task.store_seq is not None and self._store is not None:
                self._store.cancel(task.task_id)  # a StoreError: cancelled in this process only
        finally:  # the token is revoked either way: the scheduler must end the task here
            with self._lock:
                # Once closed, the shutdown ends it anyway: it finds the token revoked. RUNNING
                # or RAN before: a run may be in flight.
                if not facade._closed and outbox.put(Cancelled(task, before is not FREE)):
                    with contextlib.suppress(SchedulerShutdownError):  # stopped by force: all ended
                        facade._tell_drain()
        if outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
            facade._make_room(OUTBOX_BACKLOG)
        return True

    def cancel(self, task_id: TaskId, interrupt: bool = False) -> bool:
        """Ask the scheduler to cancel ``task_id`` (one on its way to it, or unknown) and wait."""
        facade = self._facade
        with facade._lock:
            if facade._closed:
                return False
            reply = facade._ask(Cancel(task_id, interrupt))
        answer = facade._get(reply)
        if isinstance(answer, BaseException):  # the store could not commit it: cancelled here only
            raise answer
        return bool(answer)

    def handle(self, task_id: TaskId) -> TaskHandle:
        """A handle of the live or finished task ``task_id`` (``UnknownTaskError`` if none)."""
        task = self._live.get(task_id)
        if task is None:  # one still on its way to the scheduler, say, or one that has finished
            task = self._facade._query(FindTask(task_id, finished=True))
        if not isinstance(task, TaskRecord):
            raise UnknownTaskError(f"no task with id {task_id!r} (neither live nor in the history)")
        return TaskHandle(task, self._facade)

    def dependency(self, task_id: TaskId) -> TaskRecord | None:
        """None: every task this scheduler has is in its actor (``schedule_after`` asks it there)."""
        return None

    def info(self, task_id: TaskId) -> TaskInfo:
        """The scheduler's snapshot of the task ``task_id`` (``UnknownTaskError`` if none)."""
        info = self._facade._query(QueryTask(task_id))
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        assert isinstance(info, TaskInfo)
        return info

    def infos(self, *, offset: int = 0, limit: int | None = None) -> list[TaskInfo]:
        """The scheduler's snapshots of every live task, in scheduling order (a page: only its own)."""
        infos: list[TaskInfo] = self._facade._query(QueryTasks(offset, limit))
        return infos
