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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from actors.api.handles import TaskHandle
from actors.core.task_record import TaskRecord
from actors.errors import SchedulerShutdownError, UnknownTaskError, WouldDeadlockError
from actors.runtime.run_context import running_task
from actors.sync.waiting import Deadline, check_timeout
from messages import TaskId, TaskInfo

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort
    from actors.shared.outcome_board import OutcomeBoard

__all__ = ["SharedTaskHandle", "StoredTaskRef", "StoredTasks"]


@dataclass(frozen=True, slots=True)
class StoredTaskRef:
    """Which durable task a ``SharedTaskHandle`` speaks of: its id, its name, its row's incarnation."""

    task_id: TaskId
    name: str
    seq: int


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

    def row_info(self, task_id: TaskId, *, seq: int | None = None) -> TaskInfo | None:
        """The snapshot of durable task ``task_id`` (of incarnation ``seq``, if given), or ``None``."""
        ...

    def cancel_row(self, task_id: TaskId, name: str | None = None, *, interrupt: bool = False) -> bool:
        """Cancel a durable task in the store (committed when this returns ``True``); tell this node."""
        ...

    def outcome(self, task_id: TaskId, seq: int) -> tuple[bool, object]:
        """``(False, None)`` while the task is live; once it ended, ``(True, value)`` or raise."""
        ...


class SharedTaskHandle(TaskHandle):
    """A ``TaskHandle`` of a durable task on a shared store. Every method may be called from any thread.

    It holds no record (the task lives in the database, and may run on any node), only which
    task it is (``StoredTaskRef``): every question goes to the store.
    """

    __slots__ = ("_cancelled", "_shared", "_stored")

    def __init__(self, stored: StoredTaskRef, scheduler: SchedulerPort, shared: StoredTasks) -> None:
        """Create a handle of the durable task ``stored`` (done by ``SharedTasks``, not by users)."""
        self._scheduler = scheduler
        self._stored = stored
        self._shared = shared
        self._cancelled = False  # this handle's cancel won: done, and cancelled, without asking

    @property
    def task_id(self) -> TaskId:
        """The task's id."""
        return self._stored.task_id

    @property
    def _seq(self) -> int:
        return self._stored.seq

    def _record(self) -> TaskRecord | None:
        return None  # no record: the task lives in the store

    def cancel(self, interrupt: bool = False) -> bool:
        """Cancel the task in the store, whichever node holds it (see ``Scheduler.cancel``)."""
        if not self._shared.cancel_row(self.task_id, self._stored.name, interrupt=interrupt):
            return False
        self._cancelled = True
        return True

    def done(self) -> bool:
        """Whether the task has ended, on any node (reads its row; ``True`` once this handle cancelled it)."""
        return self._cancelled or self._shared.ended(self.task_id, self._seq)

    def info(self) -> TaskInfo:
        """Return a snapshot of the task, from its row in the store.

        Raises:
            UnknownTaskError: its row is gone (pruned after it ended, or its id scheduled afresh).
            SchedulerShutdownError: the scheduler has stopped.
        """
        info = self._shared.row_info(self.task_id, seq=self._seq)
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
        current = running_task()
        if current is not None and getattr(current, "task_id", None) == self.task_id:
            raise WouldDeadlockError(f"task {self.task_id!r} waits for its own result from inside its run")
        shared = self._shared
        while True:
            seen = shared.board.version()
            if self._cancelled:
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
            and other._stored.seq == self._stored.seq
        )

    def __hash__(self) -> int:
        return hash((self.task_id, self._stored.seq))

    def __repr__(self) -> str:
        return f"<SharedTaskHandle {self.task_id!r} seq={self._stored.seq}>"
