"""``SharedTaskHandle``: a caller's grip on a durable task of a shared store.

Such a task lives in the database and may run on any node, so its handle asks the store:

- ``done()``: whether the task has ended, on any node (one read of its row);
- ``info()``: its row as a ``TaskInfo`` (``RUNNING`` while a node runs it, ``node`` says which);
- ``result(timeout)``: waits until it ends anywhere (woken by the store's hints, checking at
  least every ``poll`` seconds), then returns what the last run returned if it ran on *this*
  node. If it ran on another: with ``keep_result=True`` the value its run record keeps in the
  store's ledger (``ResultNotKeptError`` if it was not JSON data of at most 64 KiB, or its
  record has been pruned), else ``None`` (the store keeps outcomes, not values; a large
  result belongs in your own tables, keyed by ``current_run().key``).
  A failure raises the exception if the run failed here, else ``RemoteRunError`` with the
  stored error text; a cancel raises ``CancelledError``; a scheduler that stopped first raises
  ``SchedulerShutdownError`` (the task lives on in the store), as on SQLite.
- ``cancel()``: commits the cancel to the store (see ``Scheduler.cancel``).

A handle is one incarnation of the task (its row's ``seq``): if the id is later scheduled
afresh, the old handle still speaks of the old task.
"""

from __future__ import annotations

from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Protocol

from actors.api.handles import TaskHandle
from actors.core.task_record import TaskRecord
from actors.errors import SchedulerShutdownError, UnknownTaskError, WouldDeadlockError
from actors.runtime.run_context import CURRENT_RUN
from actors.sync.token import FINISHED, REVOKED
from actors.sync.waiting import Deadline, check_timeout
from messages import TaskId, TaskInfo

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort
    from actors.shared.outcome_board import OutcomeBoard

__all__ = ["SharedTaskHandle", "StoredTasks"]


class StoredTasks(Protocol):
    """What a ``SharedTaskHandle`` asks of the durable tasks of its store (``SharedTasks`` is it).

    Named here, not imported, so the handle and ``SharedTasks``, which makes handles, import
    each other in no circle. Every member: the caller's thread, one or two short store calls.
    """

    board: OutcomeBoard
    """The outcomes of the runs that ended on this node, and the wake-ups of waiting handles."""
    poll: float
    """How often (seconds) a waiting handle reads the store at least (the hints only make it prompt)."""

    def ended(self, task_id: TaskId, seq: int) -> bool:
        """Whether that incarnation of the task has ended (its row is terminal, or gone)."""
        ...

    def info(self, task_id: TaskId, *, seq: int | None = None) -> TaskInfo | None:
        """The snapshot of durable task ``task_id`` (of incarnation ``seq``, if given), or ``None``."""
        ...

    def outcome(self, task_id: TaskId, seq: int) -> tuple[bool, object]:
        """``(False, None)`` while the task is live; once it ended, ``(True, value)`` or raise."""
        ...


class SharedTaskHandle(TaskHandle):
    """A ``TaskHandle`` of a durable task on a shared store. Every method may be called from any thread."""

    __slots__ = ("_shared",)

    def __init__(self, task: TaskRecord, scheduler: SchedulerPort, shared: StoredTasks) -> None:
        """Create a handle of durable ``task`` (done by ``SharedTasks``, not by users)."""
        super().__init__(task, scheduler)
        self._shared = shared

    @property
    def _seq(self) -> int:
        seq = self._task.store_seq
        assert seq is not None
        return seq

    def done(self) -> bool:
        """Whether the task has ended, on any node (reads its row; ``True`` once this handle cancelled it)."""
        state = self._task.token_state
        if state is REVOKED or state is FINISHED:
            return True
        return self._shared.ended(self.task_id, self._seq)

    def info(self) -> TaskInfo:
        """Return a snapshot of the task, from its row in the store.

        Raises:
            UnknownTaskError: its row is gone (pruned after it ended, or its id scheduled afresh).
            SchedulerShutdownError: the scheduler has stopped.
        """
        info = self._shared.info(self.task_id, seq=self._seq)
        if info is None:
            raise UnknownTaskError(f"task {self.task_id!r} is no longer in the store")
        return info

    def result(self, timeout: float | None = None) -> object:
        """Wait for the task to end on any node; return its last run's value (see the module's docstring).

        Raises:
            concurrent.futures.CancelledError: the task was cancelled.
            TimeoutError: it did not end within ``timeout`` seconds.
            WouldDeadlockError: called from inside a run of this very task.
            SchedulerShutdownError: this scheduler stopped first (the task lives on in the store).
            RemoteRunError: its last run failed on another node (the stored error text).
            ResultNotKeptError: a ``keep_result`` task completed on another node, its value not kept.
            UnknownTaskError: its row is gone, with an outcome this node never saw.
            BaseException: whatever its last run raised, if that run failed on this node.
        """
        deadline = Deadline(check_timeout(timeout))
        current = CURRENT_RUN.get()
        if current is not None and current[0].task_id == self.task_id:
            raise WouldDeadlockError(f"task {self.task_id!r} waits for its own result from inside its run")
        shared = self._shared
        while True:
            seen = shared.board.version()
            if self._task.token_state is REVOKED:
                raise CancelledError(f"task {self.task_id!r} was cancelled")
            if shared.board.closed:
                raise SchedulerShutdownError(
                    f"task {self.task_id!r} did not end before the scheduler stopped; it stays in the store"
                )
            ended, value = shared.outcome(self.task_id, self._seq)
            if ended:
                return value
            if deadline.passed():
                raise TimeoutError(f"task {self.task_id!r} did not end within {timeout} s")
            shared.board.wait(seen, deadline, shared.poll)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, SharedTaskHandle)
            and other.task_id == self.task_id
            and other._task.store_seq == self._task.store_seq
        )

    def __hash__(self) -> int:
        return hash((self.task_id, self._task.store_seq))

    def __repr__(self) -> str:
        return f"<SharedTaskHandle {self.task_id!r} seq={self._task.store_seq}>"
