"""What ``Scheduler`` hands back to callers: ``TaskHandle`` and ``Subscription``."""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError
from typing import TYPE_CHECKING, Final

from actors.errors import UnknownTaskError
from messages import FinalState, TaskId, TaskInfo, TaskStatus

if TYPE_CHECKING:
    from actors.facade import Scheduler

# _LOCK guards _WAITERS and every handle's _link (whose token moves only under it). Handles
# share one lock, and an Event is made only for a handle someone actually waits on, so that a
# million pending handles stay small.
_LOCK = threading.Lock()
_WAITERS: dict[TaskHandle, threading.Event] = {}


class _Taken:
    """``_link`` once the token is taken for good: a one-time run started, or the task is ending."""

    __slots__ = ("scheduler",)

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler


class _Revoked:
    """``_link`` once the task was cancelled through its token, until its final state arrives."""

    __slots__ = ("scheduler",)

    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler


_NOT_FREE: Final = (_Taken, _Revoked, tuple)


class TokenMarks:
    """One scheduler's ``_Taken`` and ``_Revoked`` marks, shared by its handles (no allocation per move)."""

    __slots__ = ("revoked", "taken")

    def __init__(self, scheduler: Scheduler) -> None:
        """Make the marks of ``scheduler`` (done once, by ``Scheduler``)."""
        self.taken = _Taken(scheduler)
        self.revoked = _Revoked(scheduler)


class TaskHandle:
    """A caller's grip on one scheduled task. Every method may be called from any thread.

    The handle holds the task's token (see ``messages.TaskSink``), so ``cancel`` is decided
    on the caller's thread without waiting for the scheduler. The scheduler hands the handle
    its task's final state (on the scheduler's thread) as soon as the task ends, so a handle
    answers ``done``/``info``/``result`` after the task has left the scheduler's history too.

    Callers use ``cancel``, ``done``, ``info`` and ``result``. ``take_token``, ``revoke_token``,
    ``token_revoked`` and ``task_finished`` are the ``TaskSink`` side, for the scheduler and its
    workers.
    """

    # Two slots, not three: a million pending handles must stay small. ``_link`` is the
    # scheduler while the token is free, ``_Taken``/``_Revoked`` (which keep the scheduler)
    # once it is taken or revoked, and ``(final state, value)`` once the task has ended.
    __slots__ = ("_link", "task_id")

    def __init__(self, task_id: TaskId, scheduler: Scheduler) -> None:
        """Create the handle of task ``task_id`` (done by ``Scheduler``, not by users)."""
        self.task_id = task_id
        self._link: Scheduler | _Taken | _Revoked | tuple[FinalState, object] = scheduler

    # -- TaskSink: the token (scheduler and worker threads) and the final state (scheduler) -----

    def take_token(self) -> bool:
        """Take the token for good (a worker starting a one-time run, or the scheduler ending the task)."""
        with _LOCK:
            link = self._link
            if isinstance(link, _NOT_FREE):
                return False
            self._link = link._marks.taken
            return True

    def revoke_token(self) -> bool:
        """Cancel through the token (the scheduler, for a ``Cancel`` message or shutdown)."""
        return self._revoke() is not None

    def token_revoked(self) -> bool:
        """Whether the task was cancelled through its token."""
        return isinstance(self._link, _Revoked)

    def _revoke(self) -> Scheduler | None:
        with _LOCK:
            link = self._link
            if isinstance(link, _NOT_FREE):
                return None
            self._link = link._marks.revoked
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()  # result() raises CancelledError from now on
        return link

    def task_finished(self, final: FinalState, value: object) -> None:
        """Take the task's final state (called once, on the scheduler's thread)."""
        with _LOCK:
            self._link = (final, value)
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()

    # -- the caller's API (any thread) ------------------------------------------------------

    def cancel(self) -> bool:
        """Cancel the task; return whether a run was prevented (see ``Scheduler.cancel``).

        Decided on the calling thread, without waiting for the scheduler: from the moment it
        returns ``True`` no run of the task starts, ``done()`` is true and ``result()`` raises
        ``CancelledError``. The ``CANCELLED`` event and the final state follow shortly, from
        the scheduler.
        """
        scheduler = self._revoke()
        if scheduler is None:
            return False  # running (one-time), ended, or cancelled already
        scheduler._report_cancelled(self)
        return True

    def done(self) -> bool:
        """Whether the task has ended (completed, failed for good, or cancelled)."""
        return isinstance(self._link, tuple | _Revoked)

    def info(self) -> TaskInfo:
        """Return a snapshot of the task (its final state once it has ended).

        Raises:
            SchedulerShutdownError: the scheduler is gone and the task never ended.
        """
        link = self._link
        if isinstance(link, tuple):
            return link[0].snapshot()
        scheduler = link.scheduler if isinstance(link, _Taken | _Revoked) else link
        try:
            return scheduler.info(self.task_id)
        except UnknownTaskError:
            final = self._link  # it ended (and left the history) while we asked
            if not isinstance(final, tuple):
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
        with _LOCK:
            link = self._link
            ended = isinstance(link, tuple | _Revoked)
            event = None if ended else _WAITERS.setdefault(self, threading.Event())
        if event is not None and not event.wait(timeout):
            raise TimeoutError(f"task {self.task_id!r} did not end within {timeout} s")
        link = self._link
        if isinstance(link, tuple):
            return link
        raise CancelledError(f"task {self.task_id!r} was cancelled")

    def __repr__(self) -> str:
        state = "done" if self.done() else "pending"
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
