"""What ``Scheduler`` hands back to callers: ``TaskHandle`` and ``Subscription``."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING

from actors.errors import UnknownTaskError
from messages import FinalState, TaskId, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from actors.facade import Scheduler

# _WAIT_LOCK guards _WAITERS and every handle's _link. Waiting is rare, so all handles share
# one lock and an Event is made only for a handle someone actually waits on.
_WAIT_LOCK = threading.Lock()
_WAITERS: dict[TaskHandle, threading.Event] = {}


class TaskHandle:
    """A caller's grip on one scheduled task. Every method may be called from any thread.

    The scheduler hands the handle its task's final state (on the scheduler's thread) as
    soon as the task ends, so a handle answers ``done``/``info``/``result`` after the task
    has left the scheduler's history too.
    """

    # Two slots, not three: a million pending handles must stay small. ``_link`` is the
    # scheduler while the task lives and ``(final state, value)`` once it has ended.
    __slots__ = ("_link", "task_id")

    def __init__(self, task_id: TaskId, scheduler: Scheduler) -> None:
        """Create the handle of task ``task_id`` (done by ``Scheduler``, not by users)."""
        self.task_id = task_id
        self._link: Scheduler | tuple[FinalState, object] = scheduler

    def task_finished(self, final: FinalState, value: object) -> None:
        """Take the task's final state (called once, on the scheduler's thread)."""
        with _WAIT_LOCK:
            self._link = (final, value)
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()

    @property
    def _final(self) -> tuple[FinalState, object] | None:
        link = self._link
        return link if isinstance(link, tuple) else None

    def cancel(self) -> bool:
        """Cancel the task; return whether a run was prevented (see ``Scheduler.cancel``)."""
        link = self._link
        if isinstance(link, tuple):
            return False  # ended; its id may already belong to a newer task
        return link.cancel(self.task_id)

    def done(self) -> bool:
        """Whether the task has ended (completed, failed for good, or cancelled)."""
        return self._final is not None

    def info(self) -> TaskInfo:
        """Return a snapshot of the task (its final state once it has ended).

        Raises:
            SchedulerShutdownError: the scheduler is gone and the task never ended.
        """
        link = self._link
        if isinstance(link, tuple):
            return link[0].snapshot()
        try:
            return link.info(self.task_id)
        except UnknownTaskError:
            final = self._final  # it ended (and left the history) while we asked
            if final is None:
                raise
            return final[0].snapshot()

    def result(self, timeout: float | None = None) -> object:
        """Wait for the task to end and return what its run returned.

        For a recurring task this waits until it is cancelled or stopped by failures. Blocks
        the calling thread (never call it from a task or a listener of the same scheduler
        with ``timeout=None``: that can wait for ever).

        Raises:
            concurrent.futures.CancelledError: the task was cancelled.
            TimeoutError: it did not end within ``timeout`` seconds.
            BaseException: whatever the task's (last) run raised, if it failed.
        """
        final, value = self._wait(timeout)
        info = final.snapshot()
        if info.status is TaskStatus.CANCELLED:
            raise CancelledError(f"task {self.task_id!r} was cancelled")
        if info.status is TaskStatus.FAILED and info.last_error is not None:
            raise info.last_error
        return value

    def _wait(self, timeout: float | None) -> tuple[FinalState, object]:
        final = self._final
        if final is not None:
            return final
        with _WAIT_LOCK:
            final = self._final
            if final is not None:
                return final
            event = _WAITERS.setdefault(self, threading.Event())
        if not event.wait(timeout):
            raise TimeoutError(f"task {self.task_id!r} did not end within {timeout} s")
        final = self._final
        assert final is not None
        return final

    def __repr__(self) -> str:
        state = "done" if self._final is not None else "pending"
        return f"<TaskHandle {self.task_id!r} {state}>"


class Subscription:
    """A listener's registration with a scheduler's event bus."""

    __slots__ = ("_scheduler", "subscription_id")

    def __init__(self, subscription_id: int, scheduler: Scheduler) -> None:
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
