"""The run in progress, as a task sees it: ``current_run()``.

A worker sets a context variable around each run; ``current_run()`` reads it (on the task's
own thread, or in a coroutine it runs) and wraps it in a ``RunContext``. Nothing is built for a
run that never asks.
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from datetime import UTC, datetime

from actors.clock import Clock
from messages import RunTask, TaskId

__all__ = ["CURRENT_RUN", "RunContext", "current_run"]

CURRENT_RUN: contextvars.ContextVar[tuple[RunTask, float, Clock] | None] = contextvars.ContextVar(
    "current_run", default=None
)
"""``(run, started_at, clock)`` of the run the current thread is running (set by its worker)."""


@dataclass(frozen=True, slots=True)
class RunContext:
    """One run of a task, seen from inside it.

    Attributes:
        task_id: The task's id.
        run: The run's number, from 1.
        due_at: When the run was due (clock seconds).
        started_at: When it started (clock seconds).
        key: A stable name for this run: ``"<task_id>@<due time, UTC, ISO 8601>"``. The same
            run gets the same key after a restart with a store (a run whose outcome was not
            saved before a crash runs again: make its effects idempotent on this key).
    """

    task_id: TaskId
    run: int
    due_at: float
    started_at: float
    key: str


def current_run() -> RunContext:
    """Return the run in progress on this thread (call it from inside a task).

    Raises:
        RuntimeError: no run is in progress here (called outside a task).
    """
    current = CURRENT_RUN.get()
    if current is None:
        raise RuntimeError("current_run() is only valid inside a running task")
    run, started_at, clock = current
    # A durable task keeps its due time as a wall-clock instant (the store's): the key is then
    # the same after a restart. The core changes it only after this run has reported.
    due_wall = getattr(run.task, "due_wall", None)
    if due_wall is None:
        due_wall = run.due_at + (clock.wall().timestamp() - clock.now())
    return RunContext(run.task_id, run.run, run.due_at, started_at, f"{run.task_id}@{_iso(due_wall)}")


def _iso(stamp: float) -> str:
    try:
        return datetime.fromtimestamp(stamp, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    except (OverflowError, ValueError, OSError):
        return repr(stamp)
