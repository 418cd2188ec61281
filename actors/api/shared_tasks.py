"""``SharedTasks``: the facade's side of a shared store, where durable tasks live in the database.

On a shared store, a ``Scheduler`` commits a durable task to the store and is done with it: the
task enters a node's core only while that node holds the claim of one of its runs
(``actors/shared/node.py``). So the facade's calls about durable tasks go to the store:
scheduling (``submit``), cancelling (the store decides, whichever node holds the task),
``handle``, ``info`` and ``tasks``, and what a ``SharedTaskHandle`` waits for. Memory-only
tasks (``durable=False``) stay with this node's scheduler, as always.

Every method runs on the caller's thread and makes one or two short store calls.
"""

from __future__ import annotations

import contextlib
import json
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING

from actors.api.handles import TaskHandle
from actors.api.shared_handles import SharedTaskHandle
from actors.api.validation import check_task_id
from actors.core.task_record import TaskRecord
from actors.errors import RemoteRunError, ResultNotKeptError, SchedulerShutdownError, UnknownTaskError
from actors.runtime.durable import definition, kept_result
from actors.shared.node import LeasedTask, SharedNode
from actors.shared.outcome_board import OutcomeBoard
from actors.shared.view import info_of, name_of
from actors.store.protocol import RunInFlight, StoredTask
from messages import CancelledInStore, TaskId, TaskInfo
from messages.commands import EMPTY_KWARGS

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort

__all__ = ["SharedTasks"]


def _never_called() -> None:  # the function of a handle's stand-in record: handles never run
    raise AssertionError("a handle's record is never run")


class SharedTasks:
    """Durable tasks of a shared store, as the facade sees them. Every method: any thread."""

    def __init__(self, node: SharedNode) -> None:
        """Serve the facade of ``node``'s scheduler."""
        self._node = node
        self._store = node.store
        self.board: OutcomeBoard = node.board
        self.poll = node.store.poll

    def submit(
        self,
        scheduler: SchedulerPort,
        task: TaskRecord,
        task_id: TaskId | None,
        row: tuple[str, str, str],
        if_exists: str,
    ) -> TaskHandle:
        """Commit a new durable task to the store (``if_exists``: as ``schedule_once``); return its handle.

        The task is not handed to this node: whichever node claims its first run runs it.

        Raises:
            DuplicateTaskError: ``task_id`` is live (and ``if_exists="error"``).
            StoreError: the store could not commit it.
            SchedulerShutdownError: after ``shutdown``.
        """
        with scheduler._while_open():  # across the commit, so that nothing is committed after shutdown
            task.task_id = scheduler._mint_id() if task_id is None else check_task_id(task_id)
            plan = definition(task, *row, wall_offset=scheduler._wall_offset())
            stored, _ = self._store.add(plan, "error" if task_id is None else if_exists)  # type: ignore[arg-type]
        task.store_seq = stored.seq
        return SharedTaskHandle(task, scheduler, self)

    def cancel(
        self, scheduler: SchedulerPort, task_id: TaskId, name: str | None = None, *, interrupt: bool = False
    ) -> bool:
        """Cancel a durable task in the store (committed when this returns ``True``); tell this node.

        ``False`` if the store has no live task ``task_id``, or its one-time run has started
        on some node (the run decides how it ends, as in memory) and ``interrupt`` is false.
        With ``interrupt`` a run in progress on any node is asked to stop (its node learns it
        from the store within moments: a hint brings its next lease renewal forward).
        """
        if not self._store.cancel(task_id, interrupt=interrupt):
            return False
        with contextlib.suppress(SchedulerShutdownError):  # stopping: nothing here to stop or tell
            scheduler._send(CancelledInStore(task_id, name, interrupt))
        return True

    def revoke(self, scheduler: SchedulerPort, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel the durable task of a handle (or one this node holds a claim of)."""
        if not self.cancel(scheduler, task.task_id, task.name, interrupt=interrupt):
            return False
        if not isinstance(task, LeasedTask):  # a handle's record: done() is true from now on
            task.revoke()
        return True

    def handle(self, scheduler: SchedulerPort, task_id: TaskId) -> TaskHandle | None:
        """A handle of the live durable task ``task_id``, or ``None`` if the store has none."""
        self._check_open()
        row = self._store.get(task_id)
        if row is None or not row.live:
            return None
        record = TaskRecord(row.task_id, _never_called, (), EMPTY_KWARGS, 0.0, name_of(row))
        record.store_seq = row.seq
        return SharedTaskHandle(record, scheduler, self)

    def info(self, task_id: TaskId, *, seq: int | None = None) -> TaskInfo | None:
        """The snapshot of durable task ``task_id`` (of incarnation ``seq``, if given), or ``None``."""
        self._check_open()
        row = self._store.get(task_id)
        if row is None or (seq is not None and row.seq != seq):
            return None
        flight = self._flights().get(row.seq) if row.live else None
        return info_of(row, flight, wall_offset=self._node.clock.offset)

    def infos(self) -> list[TaskInfo]:
        """Snapshots of every live durable task in the store, in ``seq`` order."""
        self._check_open()
        rows: list[StoredTask] = self._store.tasks(include_terminal=False)
        flights = self._flights()
        offset = self._node.clock.offset
        return [info_of(row, flights.get(row.seq), wall_offset=offset) for row in rows]

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
            raise CancelledError(f"task {task_id!r} was cancelled")
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
