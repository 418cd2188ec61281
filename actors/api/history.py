"""``Scheduler.history``: how a task's last runs ended, from memory or from its store's run ledger.

The facade's side of the history (``Scheduler`` inherits ``HistoryMixin``). Where the runs
come from:

- A task in memory (a memory-only task, or any task of a scheduler without a store): the
  ``SchedulerActor`` answers ``QueryHistory`` from the task's record, which keeps its last
  ``RUNS_PER_TASK`` runs (``actors/core/run_log.py``); a finished task keeps them while the
  scheduler's ``history`` (finished tasks) keeps it.
- A durable task, or an id the scheduler does not know in memory: the store's run ledger,
  read on the caller's thread (``StoreReader.runs``, one indexed query), so a busy scheduler
  thread never holds it up. It has the runs of finished tasks and of earlier incarnations of
  the id, and on a shared store the runs of every node (``RunRecord.node``), for as long as
  the store keeps them (``run_history``, the newest 10,000 ledger rows by default:
  ``docs/persistence.md``).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from actors.core.run_log import wall_time
from messages import QueryHistory, RunRecord, TaskId
from messages.commands import require_task_id
from messages.history import require_history_limit

if TYPE_CHECKING:
    from actors.store.protocol import LedgerRow, Store

__all__ = ["HistoryMixin", "from_ledger"]


class HistoryMixin:
    """``Scheduler.history`` (a mixin: the state is the facade's)."""

    if TYPE_CHECKING:  # the facade's members this part uses
        _store: Store | None

        def _query(self, message: object) -> Any: ...
        def _wall_offset(self) -> float: ...

    def history(self, task_id: TaskId, limit: int = 100) -> list[RunRecord]:
        """Return how the task's last ``limit`` runs ended, newest first.

        Every run that ended (completed, failed, cancelled mid-run, timed out) and every due
        time that got no run (``"missed"``, with its ``reason``), each a ``RunRecord``. A task
        in memory keeps its last 100 runs (a finished one as long as ``history=`` keeps it); a
        durable task's come from the store's run ledger (also after it ended, after a restart,
        and on a shared store from every node), as long as the store keeps them.

        Any thread (also a task's or a listener's): a memory task's runs are one question to
        the scheduler thread; a durable task's one read of the store on the caller's thread.

        Returns:
            The runs, newest first; ``[]`` for an id never seen (or whose runs are gone).

        Raises:
            TypeError: ``task_id`` is not a str, or ``limit`` not an int.
            ValueError: ``limit`` < 1.
            SchedulerShutdownError: the scheduler has stopped (a task in memory).
            StoreError: the store could not be read.
        """
        require_task_id(task_id)
        require_history_limit(limit)
        in_memory: list[RunRecord] | None = self._query(QueryHistory(task_id, limit))
        if in_memory is not None:
            return in_memory
        if self._store is None:
            return []
        offset = self._wall_offset()
        return [from_ledger(row, offset) for row in self._store.runs(task_id, limit=limit)]


def from_ledger(row: LedgerRow, wall_offset: float) -> RunRecord:
    """The public ``RunRecord`` of a store's ledger row (``wall_offset``: wall-clock minus clock time)."""
    try:  # the common case: every time in range (a stored due time is before LATEST_DUE)
        due_wall = _at(row.due, UTC)
        started_at = None if row.started is None else _at(row.started, UTC)
        ended_at: datetime | None = _at(row.finished, UTC)
    except (OverflowError, ValueError, OSError):
        due_wall = wall_time(row.due) or datetime.max.replace(tzinfo=UTC)
        started_at, ended_at = wall_time(row.started), wall_time(row.finished)
    return RunRecord(
        run=row.run,
        due_at=row.due - wall_offset,
        due_wall=due_wall,
        started_at=started_at,
        ended_at=ended_at,
        outcome=row.outcome,  # type: ignore[arg-type]  # the store keeps the names we wrote
        reason=row.reason,
        error=row.error,
        attempt=row.attempt,
        node=row.node,
        manual=row.manual,
        value=None if row.value_json is None else json.loads(row.value_json),
    )


_at = datetime.fromtimestamp
