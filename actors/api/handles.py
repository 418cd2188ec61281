"""What ``Scheduler`` hands back to callers: ``TaskHandle`` and ``Subscription``."""

from __future__ import annotations

from concurrent.futures import CancelledError
from typing import TYPE_CHECKING

from actors.core.task_record import TaskRecord
from actors.errors import SchedulerShutdownError, UnknownTaskError, WouldDeadlockError
from actors.runtime.run_context import running_task
from actors.sync.token import DETACHED, FINISHED, REVOKED, TAKEN
from messages import TaskId, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from actors.api.port import SchedulerPort


class TaskHandle:
    """A caller's grip on one scheduled task. Every method may be called from any thread.

    A handle is a view of the task's record (``actors/core/task_record.py``), which holds the
    task's token (``actors/sync/token.py``): so ``cancel`` is decided on the caller's thread without
    waiting for the scheduler, every handle of a task agrees, and a handle answers
    ``done``/``info``/``result`` after the task has left the scheduler's history too. The
    scheduler keeps no handle alive: drop it if you do not need it.
    """

    __slots__ = ("_scheduler", "_task")

    def __init__(self, task: TaskRecord, scheduler: SchedulerPort) -> None:
        """Create a handle of ``task`` (done by ``Scheduler``, not by users)."""
        self._task = task
        self._scheduler = scheduler

    @property
    def task_id(self) -> TaskId:
        """The task's id."""
        return self._task.task_id

    def cancel(self, interrupt: bool = False) -> bool:
        """Cancel the task; return whether a run was prevented, or (``interrupt``) a running one signalled.

        See ``Scheduler.cancel``. Decided on the calling thread, without waiting for the
        scheduler: from the moment it returns ``True`` no further run of the task starts. The
        ``CANCELLED`` event and the final state follow shortly, from the scheduler.
        """
        return self._scheduler._revoke(self._task, interrupt)

    def done(self) -> bool:
        """Whether the task has ended (completed, failed for good, or cancelled)."""
        state = self._task.token_state
        return state is REVOKED or state is FINISHED

    def info(self) -> TaskInfo:
        """Return a snapshot of the task (its final state once it has ended).

        Raises:
            SchedulerShutdownError: the scheduler is gone and the task never ended.
        """
        task = self._task
        if task.token_state is FINISHED:
            return task.snapshot()
        try:
            info = self._scheduler.info(task.task_id)
        except UnknownTaskError:
            if task.token_state is not FINISHED:
                raise
            info = None
        if task.token_state is FINISHED:  # it ended while we asked (its id may be another task's now)
            return task.snapshot()
        assert info is not None
        return info

    def result(self, timeout: float | None = None) -> object:
        """Wait for the task to end and return what its run returned.

        For a recurring task this waits until it is cancelled or stopped by failures.

        Raises:
            concurrent.futures.CancelledError: the task was cancelled.
            TimeoutError: it did not end within ``timeout`` seconds.
            WouldDeadlockError: called from inside a run of this very task, which cannot
                end while it waits.
            SchedulerShutdownError: the scheduler stopped with this durable task still
                scheduled: it lives on in the store (at once, instead of waiting).
            BaseException: whatever the task's (last) run raised, if it failed.
        """
        task = self._task
        if running_task() is task and task.token_state is not FINISHED:
            raise WouldDeadlockError(f"task {task.task_id!r} waits for its own result from inside its run")
        if not task.wait_ended(timeout):
            raise TimeoutError(f"task {task.task_id!r} did not end within {timeout} s")
        state = task.token_state
        if state is DETACHED:
            raise SchedulerShutdownError(
                f"task {task.task_id!r} did not end before the scheduler stopped; it stays in the store"
            )
        if state is not FINISHED:
            raise CancelledError(f"task {task.task_id!r} was cancelled")
        info = task.snapshot()
        if info.status is TaskStatus.CANCELLED:
            if isinstance(info.last_error, CancelledError):  # why it was (DependencyFailedError)
                raise info.last_error
            raise CancelledError(f"task {task.task_id!r} was cancelled")
        if info.status is TaskStatus.FAILED and info.last_error is not None:
            raise info.last_error
        return task.outcome

    def _record(self) -> TaskRecord | None:
        """The record this handle is a view of (``None``: a handle of a task in a shared store)."""
        return self._task

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TaskHandle) and other._record() is self._task

    def __hash__(self) -> int:
        return id(self._task)

    def __repr__(self) -> str:
        state = self._task.token_state
        if state is FINISHED:
            shown = self._task.snapshot().status.value
        elif state is REVOKED:
            shown = "cancelled"
        elif state is TAKEN:
            shown = "running"
        elif state is DETACHED:
            shown = "left in the store"
        else:
            shown = "pending"
        return f"<TaskHandle {self.task_id!r} {shown}>"


def record_of(handle: TaskHandle, scheduler: SchedulerPort) -> TaskRecord | None:
    """The record ``handle`` is a view of, if it is a handle of ``scheduler`` with one; else ``None``.

    A ``SharedTaskHandle`` has none: its task lives in the store.

    Only used by the facade (``schedule_after`` waits for the records its handles name) and in
    tests: users see a task through its handle. Any thread; a read of two fields set at creation.
    """
    return handle._record() if handle._scheduler is scheduler else None


class Subscription:
    """A listener's registration with a scheduler's event bus."""

    __slots__ = ("_scheduler", "subscription_id")

    def __init__(self, subscription_id: int, scheduler: SchedulerPort) -> None:
        """Create the record of subscription ``subscription_id`` (done by ``Scheduler.subscribe``)."""
        self.subscription_id = subscription_id
        self._scheduler = scheduler

    def cancel(self) -> None:
        """Stop delivering events to the listener (idempotent; events already queued may still arrive)."""
        self._scheduler._unsubscribe(self.subscription_id)

    def __enter__(self) -> Subscription:
        """Return the subscription; it is cancelled when the block ends."""
        return self

    def __exit__(self, *_: object) -> None:
        """Cancel the subscription."""
        self.cancel()
