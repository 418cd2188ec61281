"""A task's run history: ``RunRecord`` (one run, as ``Scheduler.history`` shows it) and its query.

Plain data: frozen and slotted, built on the scheduler's thread (memory) or a caller's (a
store's run ledger), read on any thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal, final, get_args

from messages.commands import require_task_id
from messages.events import TaskId
from messages.frozen import fast_init

__all__ = ["RUN_OUTCOMES", "QueryHistory", "RunOutcomeName", "RunRecord", "require_history_limit"]

RunOutcomeName = Literal["completed", "failed", "cancelled", "timed_out", "missed"]
"""How a run ended: returned; raised; stopped by ``cancel(interrupt=True)``; stopped by its
``timeout`` (or abandoned after it); never started (``reason`` says why)."""

RUN_OUTCOMES: Final[frozenset[str]] = frozenset(get_args(RunOutcomeName))


def require_history_limit(limit: object) -> int:
    """Return ``limit`` if it is an int >= 1.

    Raises:
        TypeError: not an int (a bool is not one).
        ValueError: less than 1.
    """
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"limit must be an int, got {limit!r}")
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit!r}")
    return limit


@fast_init  # a history read builds up to ``limit`` of these at once
@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunRecord:
    """How one run of a task ended (or that it never started): one line of ``Scheduler.history``.

    Attributes:
        run: The run's number within the task, from 1 (as ``TaskEvent.run``).
        due_at: When it was due, in clock seconds (the scheduler's clock, as ``TaskInfo.next_due``).
        due_wall: When it was due, as an aware UTC datetime.
        started_at: When it started (aware UTC datetime); ``None`` if it never did.
        ended_at: When its outcome was decided (aware UTC datetime); ``None`` if not known.
        outcome: ``"completed"``, ``"failed"``, ``"cancelled"``, ``"timed_out"`` or ``"missed"``.
        reason: Why a ``"missed"`` run was missed (``"misfire"``, ``"overlap"``, ``"catch_up"``);
            else ``None``.
        error: The error text (``"TypeName: message"``) of a run that did not complete, else ``None``.
        attempt: Which attempt of the run ended it (``Retry``), from 1.
        node: The node that ran it on a shared store; ``None`` in memory and on SQLite.
        manual: Whether it was an extra run outside the schedule (``run_now``).
        value: What it returned, for a task scheduled with ``keep_result=True`` whose value is
            JSON data of at most 64 KiB, as JSON gives it back (a tuple is a list); else ``None``.
    """

    run: int
    due_at: float
    due_wall: datetime
    started_at: datetime | None
    ended_at: datetime | None
    outcome: RunOutcomeName
    reason: str | None = None
    error: str | None = None
    attempt: int = 1
    node: str | None = None
    manual: bool = False
    value: object = None


@final
@dataclass(frozen=True, slots=True)
class QueryHistory:
    """Reply: the task's last runs in memory, newest first (``list[RunRecord]``), at most ``limit``.

    ``None`` if the scheduler has no record of the task in memory, or the task is durable: then
    its store's run ledger holds its history (``Scheduler.history`` reads it there).
    """

    task_id: TaskId
    limit: int = 100

    def __post_init__(self) -> None:
        require_task_id(self.task_id)
        require_history_limit(self.limit)
