"""``SharedTasks``: the ``TaskDirectory`` of a shared store, where durable tasks live in the database.

On a shared store, a ``Scheduler`` commits a durable task to the store and is done with it: the
task enters a node's core only while that node holds the claim of one of its runs
(``actors/shared/node.py``). So the facade's calls about durable tasks go to the store:
scheduling (``submit``), cancelling (the store decides, whichever node holds the task),
``handle``, ``info`` and ``tasks``, and what a ``SharedTaskHandle`` waits for. Memory-only
tasks (``durable=False``, ids ``task-m<n>``) stay with this node's scheduler, as always: those
calls go on to its ``LocalTasks`` (``directory.py`` draws the two).

Every method runs on the caller's thread and makes one or two short store calls.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING

from actors.api.directory import DurableRow, TaskDirectory
from actors.api.handles import TaskHandle
from actors.api.shared_handles import SharedTaskHandle, StoredTaskRef
from actors.api.validation import check_task_id
from actors.core.task_record import TaskRecord
from actors.core.task_state import State
from actors.errors import RemoteRunError, ResultNotKeptError, SchedulerShutdownError, UnknownTaskError
from actors.runtime.durable import definition, kept_result
from actors.runtime.minting import is_memory_id
from actors.shared.node import SharedNode
from actors.shared.outcome_board import OutcomeBoard
from actors.shared.view import dependency_failed, info_of, name_of
from actors.store.protocol import KeepsDependencies, RunInFlight, StoredTask
from actors.store.trigger_json import decode_trigger
from messages import CancelledInStore, TaskId, TaskInfo
from messages.commands import EMPTY_KWARGS

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort

__all__ = ["SharedTasks"]


_STATE_OF: dict[str, State] = {
    "scheduled": State.PENDING,
    "completed": State.COMPLETED,
    "failed": State.FAILED,
    "cancelled": State.CANCELLED,
}


def _never_called() -> None:  # the function of a dependency's stand-in record: never run here
    raise AssertionError("a stand-in record of a stored task is never run")


class SharedTasks:
    """The ``TaskDirectory`` of a shared store: its durable tasks, and this node's ``LocalTasks``.

    Every method: any thread, no lock of the facade held; one or two short store calls.
    """

    runs_stored_tasks = False  # whichever node claims a run runs it

    def __init__(
        self,
        node: SharedNode,
        local: TaskDirectory,
        scheduler: SchedulerPort,
        live: Mapping[TaskId, TaskRecord],
    ) -> None:
        """Serve ``scheduler`` (``node``'s facade); ``local``: its memory-only tasks; ``live``: its held."""
        self._node = node
        self._store = node.store
        self._local = local
        self._scheduler = scheduler
        self._live = live
        self.board: OutcomeBoard = node.board
        self.poll = node.store.poll

    def submit(
        self,
        task: TaskRecord,
        task_id: TaskId | None,
        row: DurableRow | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Commit a new durable task to the store (``if_exists``: as ``schedule_once``); return its handle.

        The task is not handed to this node: whichever node claims its first run runs it. A
        memory-only task (no ``row``) is this node's, as on any store.

        Raises:
            DuplicateTaskError: ``task_id`` is live (and ``if_exists="error"``).
            StoreError: the store could not commit it.
            SchedulerShutdownError: after ``shutdown``.
        """
        if row is None:
            return self._local.submit(task, task_id, None, if_exists)
        scheduler = self._scheduler
        with scheduler._while_open():  # across the commit, so that nothing is committed after shutdown
            task.task_id = scheduler._mint_id() if task_id is None else check_task_id(task_id)
            plan = definition(task, *row, wall_offset=scheduler._wall_offset())
            stored, _ = self._store.add(plan, "error" if task_id is None else if_exists)  # type: ignore[arg-type]
        return SharedTaskHandle(StoredTaskRef(task.task_id, task.name, stored.seq), scheduler, self)

    def cancel(self, task_id: TaskId, interrupt: bool = False) -> bool:
        """Cancel a task this node does not hold: in the store if it is durable there, else as ``LocalTasks``.

        A durable task's cancel is decided by the store, whichever node holds the task (one
        statement, committed when this returns ``True``).
        """
        stored = not is_memory_id(task_id) and self._scheduler._is_open()
        if stored and self.cancel_row(task_id, None, interrupt=interrupt):
            return True
        return self._local.cancel(task_id, interrupt)

    def cancel_row(self, task_id: TaskId, name: str | None = None, *, interrupt: bool = False) -> bool:
        """Cancel a durable task in the store (committed when this returns ``True``); tell this node.

        ``False`` if the store has no live task ``task_id``, or its one-time run has started
        on some node (the run decides how it ends, as in memory) and ``interrupt`` is false.
        With ``interrupt`` a run in progress on any node is asked to stop (its node learns it
        from the store within moments: a hint brings its next lease renewal forward).
        """
        if not self._store.cancel(task_id, interrupt=interrupt):
            return False
        with contextlib.suppress(SchedulerShutdownError):  # stopping: nothing here to stop or tell
            self._scheduler._send(CancelledInStore(task_id, name, interrupt))
        return True

    def revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel a task this node holds: a durable one in the store (it decides), else as ``LocalTasks``."""
        if task.store_seq is None:
            return self._local.revoke(task, interrupt)
        if not self.cancel_row(task.task_id, task.name, interrupt=interrupt):
            return False
        if not self._node.holds(task):  # a record this node does not run: done() from now on
            task.revoke()
        return True

    def handle(self, task_id: TaskId) -> TaskHandle:
        """A handle of the task ``task_id``: its row's if it is a live durable task, else ``LocalTasks``'s."""
        task = self._live.get(task_id)
        if not is_memory_id(task_id) and (task is None or task.durable):  # memory ids: never in the store
            self._check_open()
            row = self._store.get(task_id)
            if row is not None and row.live:
                return SharedTaskHandle(
                    StoredTaskRef(row.task_id, name_of(row), row.seq), self._scheduler, self
                )
        return self._local.handle(task_id)

    def dependency(self, task_id: TaskId) -> TaskRecord | None:
        """A record standing for durable task ``task_id`` for ``schedule_after`` to wait for, or ``None``.

        Its state is its row's status now (the store judges it again as the waiting task is added).

        Raises:
            ValueError: it is recurring (it never completes).
        """
        if is_memory_id(task_id):
            return None
        self._check_open()
        row = self._store.get(task_id)
        if row is None:
            return None
        if decode_trigger(row.trigger_json).kind != "once":
            raise ValueError(f"task {task_id!r} is recurring: it never completes, so nothing can wait for it")
        record = TaskRecord(row.task_id, _never_called, (), EMPTY_KWARGS, 0.0, name_of(row))
        record.store_seq = row.seq
        record.state = _STATE_OF[row.status]
        return record

    def info(self, task_id: TaskId) -> TaskInfo:
        """The snapshot of the task ``task_id``: its row's if it is durable, else as ``LocalTasks``."""
        info = None if is_memory_id(task_id) else self.row_info(task_id)
        return self._local.info(task_id) if info is None else info

    def infos(self, *, offset: int = 0, limit: int | None = None) -> list[TaskInfo]:
        """This node's snapshots, then every live durable task of the store (whichever node runs it).

        ``offset`` and ``limit`` cut the merged list (the store's rows are read whole).
        """
        infos = self._local.infos()
        stored = self.row_infos()
        ids = {info.task_id for info in stored}
        merged = [info for info in infos if info.task_id not in ids] + stored
        return merged[offset : None if limit is None else offset + limit]

    def row_info(self, task_id: TaskId, *, seq: int | None = None) -> TaskInfo | None:
        """The snapshot of durable task ``task_id`` (of incarnation ``seq``, if given), or ``None``."""
        self._check_open()
        row = self._store.get(task_id)
        if row is None or (seq is not None and row.seq != seq):
            return None
        allows = '"allow"' in row.options_json  # (the text test first: nearly every row has not)
        flight = self._flights().get(row.seq) if row.live or allows else None
        waits = self._waits() if row.live and row.next_due is None else {}
        paused = row.live and self._store.is_paused(task_id)
        info = info_of(
            row,
            flight,
            wall_offset=self._node.clock.offset,
            waiting_for=waits.get(row.seq, ()),
            paused=paused,
        )
        if flight is not None and flight.owner == self._store.node and allows:
            # An overlap="allow" task held here: its runs go on in this node's core, which counts
            # them as they end (their saves may be on their way) and has its status (SCHEDULED
            # while it waits for its next slot beside them; RUNNING while a cancelled one's last
            # runs go), as in memory.
            with contextlib.suppress(UnknownTaskError):
                held = self._local.info(task_id)
                info = dataclasses.replace(
                    info,
                    status=info.status if paused else held.status,
                    active_runs=held.active_runs,
                    run_count=held.run_count,
                    failure_count=held.failure_count,
                    consecutive_failures=held.consecutive_failures,
                )
        return info

    def row_infos(self) -> list[TaskInfo]:
        """Snapshots of every live durable task in the store, in ``seq`` order."""
        self._check_open()
        rows: list[StoredTask] = self._store.tasks(include_terminal=False)
        flights = self._flights()
        paused = self._store.paused_ids()
        offset = self._node.clock.offset
        waits = self._waits() if any(row.next_due is None for row in rows) else {}
        return [
            info_of(
                row,
                flights.get(row.seq),
                wall_offset=offset,
                waiting_for=waits.get(row.seq, ()),
                paused=row.task_id in paused,
            )
            for row in rows
        ]

    def _waits(self) -> dict[int, tuple[str, ...]]:
        """The ids each waiting row (``schedule_after``) still waits for, by its ``seq``."""
        store: object = self._store
        waits: dict[int, tuple[str, ...]] = {}
        if isinstance(store, KeepsDependencies):
            for edge in store.waiting():
                waits[edge.waiter] = (*waits.get(edge.waiter, ()), edge.dependency.task_id)
        return waits

    def _check_open(self) -> None:
        if self.board.closed:
            raise SchedulerShutdownError("scheduler is shut down")

    def _flights(self) -> dict[int, RunInFlight]:
        return {flight.seq: flight for flight in self._store.runs_in_flight()}

    def ended(self, task_id: TaskId, seq: int) -> bool:
        """Whether that incarnation of the task has ended (its row is terminal, or gone)."""
        self._check_open()
        row = self._store.get(task_id)
        return row is None or row.seq != seq or not row.live

    def outcome(self, task_id: TaskId, seq: int) -> tuple[bool, object]:
        """``(False, None)`` while the task is live; once it ended, ``(True, value)`` or raise.

        Raises:
            concurrent.futures.CancelledError: it was cancelled.
            RemoteRunError: its last run failed on another node.
            ResultNotKeptError: a ``keep_result`` task completed on another node, its value not kept.
            UnknownTaskError: its row is gone and it did not end here.
            BaseException: what its last run raised, if that run failed on this node.
        """
        row = self._store.get(task_id)
        if row is not None and row.seq == seq and row.live:
            return False, None
        kept = self.board.outcome(task_id, seq)
        if row is None or row.seq != seq:
            if kept is None:
                raise UnknownTaskError(f"task {task_id!r} ended and is no longer in the store")
            row = None
        elif row.status == "cancelled":
            raise dependency_failed(row.last_error) or CancelledError(f"task {task_id!r} was cancelled")
        if kept is not None:
            value, error = kept
            if error is not None:
                raise error
            if row is None or row.status == "completed":
                return True, value
        if row is not None and row.status == "failed":
            raise RemoteRunError(row.last_error or "(no error text)")
        if row is not None and row.status == "completed" and kept_result(row):
            return True, self._kept_value(row)
        return True, None

    def _kept_value(self, row: StoredTask) -> object:
        """The value a ``keep_result`` task's last run left in the ledger (it ran on another node).

        Raises:
            ResultNotKeptError: the value was not kept (the ledger row says why), or its row is gone.
        """
        for run in self._store.runs(row.task_id, limit=1):
            if run.task_seq == row.seq and run.outcome == "completed":
                if run.value_json is not None:
                    return json.loads(run.value_json)
                raise ResultNotKeptError(row.task_id, run.value_note or "no value was stored")
        raise ResultNotKeptError(row.task_id, "its run record is no longer in the store's run ledger")
