"""How the pure core stops: a graceful shutdown, or abandoning every task at once.

Part of the ``Timetable`` (a mixin: the state is the timetable's, ``actors/core/timetable.py``):
``shut_down`` refuses new tasks and cancels what has not started, letting runs in progress end;
``abandon`` ends every live task now. Either way a durable task is left to its store (it ends
``DETACHED``), and parked tasks get a record only if their end must be seen. The rules of
``actors/core/timetable.py``'s docstring hold here too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.core.dealer import Dealer
from actors.core.queries import Queries
from actors.core.run_endings import RunEndings
from actors.core.task_record import RunInstance, TaskRecord
from actors.core.task_state import (
    CANCELLED,
    CANCELLING,
    DETACHED,
    FINAL_STATES,
    HANDED,
    PENDING,
    State,
    move_to,
)
from actors.sync.token import FREE, RAN, REVOKED, RUNNING, TAKEN
from messages import TaskId

if TYPE_CHECKING:
    from actors.core.due_heap import DueHeap
    from actors.core.parked import ParkedTasks
    from actors.core.wall_tasks import WallTasks

__all__ = ["Stopping"]


class Stopping(RunEndings, Queries):
    """The part of the ``Timetable`` that stops it (a mixin: the state is the timetable's).

    It builds on the run endings (a run still going fails, ``_fail_run``) and the queries
    (``live_count``), so it inherits them instead of restating their signatures.
    """

    if TYPE_CHECKING:  # the timetable's state and methods this part uses
        _tasks: dict[TaskId, TaskRecord]
        _parked: ParkedTasks
        _heap: DueHeap
        _dealer: Dealer
        _wall_tasks: WallTasks
        _deferred: bool
        _want_cancelled: bool
        _history_limit: int
        activity: int
        closed: bool

        def _unpark(self, task_id: TaskId, *, waiting: bool) -> TaskRecord | None: ...
        def _finish(self, task: TaskRecord, state: State, at: float, outcome: object) -> None: ...
        def _end_cancelled(self, task: TaskRecord, now: float, *, mid_run: bool) -> None: ...
        def _runs_going(self, task: TaskRecord) -> bool: ...

    def shut_down(self, *, now: float) -> None:
        """Refuse new tasks and cancel every task that has not started its run.

        Running one-time tasks finish as usual; running recurring ones finish their run and
        then end ``CANCELLED``. Durable tasks are not cancelled: they stay scheduled in their
        store, and here they end ``DETACHED`` (a running one once its run has reported, its
        outcome saved first).
        """
        self.closed = True
        deferred, self._deferred = self._deferred, True  # hand the workers nothing more
        self._unpark_to_end()
        for task in self._tasks.values():
            task.heap_seq = None  # the heap is emptied at once below, not entry by entry
        self._heap.clear()
        for task in self._dealer.take_back_all():
            if self._instances and isinstance(task, RunInstance):
                self._instance_skipped(task, now)  # a run of an overlap="allow" task: its task ends below
            elif not (task.store_seq is not None and self._detach(task)):
                task.revoke()
                self._finish(task, CANCELLED, now, None)
        if self._instances:  # runs of overlap="allow" tasks whose Retry's next attempt waited: none comes
            waiting = [run for runs in self._instances.values() for run in runs.going if run.state is PENDING]
            for run in waiting:
                self._instance_skipped(run, now)
        for task in list(self._tasks.values()):
            if task.state is CANCELLING or task.state in FINAL_STATES:
                continue  # ends when its worker reports; or ended meanwhile (it waited for one that did)
            if task.store_seq is not None:
                if self._instances and self._runs_going(task):
                    continue  # overlap="allow": detached once its last run going ends, saved
                if task.state is not HANDED and not self._detach(task):
                    self._end_cancelled(task, now, mid_run=False)  # a caller cancelled it (token revoked)
                continue  # a worker holds its run: it ends (or detaches) when the run reports
            if task.revoke() in (FREE, RUNNING, RAN, REVOKED):
                # A caller may have revoked it mid-run (its report will not come): wait for the worker.
                self._end_cancelled(task, now, mid_run=True)
            # else: a worker has started its one-time run (it holds the token): it finishes as usual
        self._deferred = deferred

    def abandon(self, error: BaseException, *, now: float) -> int:
        """End every task still live, at once: the scheduler is being stopped by force.

        A durable task ends ``DETACHED``: it stays in its store (a run in progress counts as
        not run there: it runs again after a restart). Otherwise a one-time run in progress
        (its token taken) ends ``FAILED`` with ``error``: its outcome will never be known.
        Every other live task ends ``CANCELLED``. Returns how many tasks were still live.
        """
        live = self.live_count
        self.closed = True
        deferred, self._deferred = self._deferred, True
        self._unpark_to_end()
        for task in self._tasks.values():
            task.heap_seq = None
        self._heap.clear()
        for task in list(self._tasks.values()):
            if task.state in FINAL_STATES:
                continue  # it waited for one that ended just now, and ended too
            if task.store_seq is not None and self._detach(task):
                continue  # its run, if one was going, counts as not run: the store still has it
            if task.revoke() is TAKEN and task.state is HANDED:
                self._fail_run(task, error, "", now)
            else:
                self._finish(task, CANCELLED, now, None)
        self._dealer = Dealer(0)  # nothing is held by anyone any more
        self._deferred = deferred
        return live

    def _unpark_to_end(self) -> None:
        """The scheduler is stopping: give the parked tasks that must end visibly their records.

        Each parked task ends ``CANCELLED``, or, from a store, stays there (it would end
        ``DETACHED``, which publishes nothing and leaves no history). Nobody holds its record (a
        handle would have unparked it) and nothing waits for it, so one needs a record only to
        be published (someone listens for ``CANCELLED``) or kept in the history; the rest are
        just dropped, which for a million tasks takes a moment instead of seconds.
        """
        ids = self._parked.memory_ids()
        self.activity += len(self._parked) - len(ids)  # the stored ones, left to their store
        if not self._want_cancelled:
            kept = ids[max(0, len(ids) - self._history_limit) :] if self._history_limit else []
            self.activity += len(ids) - len(kept)
            ids = kept
        for task_id in ids:
            self._unpark(task_id, waiting=True)
        self._parked.clear()

    def _detach(self, task: TaskRecord) -> bool:
        """Leave a durable task to its store, as this scheduler stops (its heap entry is gone already).

        Returns ``False``, changing nothing, if its token says it has ended (a caller's cancel won).
        """
        if not task.detach():
            return False
        move_to(task, DETACHED)
        del self._tasks[task.task_id]
        self._wall_tasks.forget(task)
        self.activity += 1
        task.claim = None
        return True
