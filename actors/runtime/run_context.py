"""The run in progress, as a task sees it: ``current_run()``.

A worker sets a context variable around each run; ``current_run()`` reads it (on the task's
own thread, or in a coroutine it runs) and wraps it in a ``RunContext``. Nothing is built for a
run that never asks.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from datetime import UTC, datetime

from actors.core.effects import PlainRun, as_run_task
from actors.errors import RunCancelled
from actors.sync.clock import Clock
from messages import RunTask, TaskId
from messages.commands import RunClaim

__all__ = ["CURRENT_RUN", "RunContext", "current_run", "running_task"]

CURRENT_RUN: contextvars.ContextVar[tuple[RunTask | PlainRun, float, Clock] | None] = contextvars.ContextVar(
    "current_run", default=None
)
"""``(run, started_at, clock)`` of the run the current thread is running (set by its worker).

``run`` is a ``RunTask`` or, for a plain task, a ``PlainRun`` (``actors/core/effects.py``):
read it through ``current_run()`` or ``running_task()``, which take either."""


def running_task() -> object | None:
    """The record of the task whose run this thread is running (``None`` outside a run)."""
    current = CURRENT_RUN.get()
    if current is None:
        return None
    run = current[0]
    return run[0] if type(run) is tuple else run.task  # type: ignore[union-attr]


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run of a task, seen from inside it.

    Attributes:
        task_id: The task's id.
        run: The run's number, from 1 (a retried run keeps its number).
        due_at: When the run was due (clock seconds; a retry's attempts share it).
        started_at: When this attempt started (clock seconds).
        key: A stable name for this run: ``"<task_id>@<due time, UTC, ISO 8601>"``. The same
            run gets the same key in each attempt, and after a restart with a store (a run
            whose outcome was not saved before a crash runs again: make its effects
            idempotent on this key).
        attempt: Which attempt this is, from 1 (see ``Retry``).
        deadline: When the run's ``timeout`` runs out (clock seconds), or ``None``.
        manual: Whether this is an extra run of ``Scheduler.run_now`` (``False`` for every
            scheduled run).
    """

    task_id: TaskId
    run: int
    due_at: float
    started_at: float
    key: str
    attempt: int = 1
    deadline: float | None = None
    manual: bool = False
    _claim: RunClaim | None = field(default=None, repr=False, compare=False)

    @property
    def cancel_requested(self) -> bool:
        """Whether this run was asked to stop (``cancel(interrupt=True)``, or its timeout ran out).

        Cheap enough to poll in a loop (one attribute read). A run asked to stop should
        return soon, or raise ``RunCancelled`` (``check()`` does).
        """
        return self._claim is not None and self._claim.stop != 0

    def check(self) -> None:
        """Raise ``RunCancelled`` if this run was asked to stop; otherwise do nothing.

        Raises:
            RunCancelled: a stop was requested.
        """
        if self._claim is not None and self._claim.stop != 0:
            raise RunCancelled(f"run {self.run} of task {self.task_id!r} was asked to stop")


def current_run() -> RunContext:
    """Return the run in progress on this thread (call it from inside a task, or its coroutine).

    Raises:
        RuntimeError: no run is in progress here (called outside a task).
    """
    current = CURRENT_RUN.get()
    if current is None:
        raise RuntimeError("current_run() is only valid inside a running task")
    dealt, started_at, clock = current
    run = as_run_task(dealt)
    task = run.task
    due_at, due_wall = run.due_at, getattr(task, "due_wall", None)
    failures = getattr(task, "failures", None)
    if run.attempt > 1 and failures is not None:  # a retry: the run's own slot, not the retry's
        due_at, due_wall = failures.slot_due_at, failures.slot_due_wall
    # A durable task keeps its due time as a wall-clock instant (the store's): the key is then
    # the same after a restart. The core changes it only after this run has reported.
    if due_wall is None:
        due_wall = due_at + (clock.wall().timestamp() - clock.now())
    deadline = None if run.timeout is None else started_at + run.timeout
    key = f"{run.task_id}@{_iso(due_wall)}"
    return RunContext(
        run.task_id, run.run, due_at, started_at, key, run.attempt, deadline, run.manual, run.claim
    )


def _iso(stamp: float) -> str:
    try:
        return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):
        return repr(stamp)
