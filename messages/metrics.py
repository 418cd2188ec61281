"""What the metrics and the status page ask the scheduler thread, one question per read.

``QueryRunTotals`` -> ``RunTotals`` (a scrape: the run totals the scheduler keeps once asked,
and its stats); ``QueryTaskTable`` -> ``TaskTable`` (a page of the status page's table);
``QueryRecentRuns`` -> a tuple of ``RecentRuns`` (some tasks' last runs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from messages.events import SchedulerStats, TaskId, TaskInfo

__all__ = [
    "QueryRecentRuns",
    "QueryRunTotals",
    "QueryTaskTable",
    "RecentRuns",
    "RunTotals",
    "StoreTotals",
    "TaskTable",
]


@final
@dataclass(frozen=True, slots=True)
class QueryRunTotals:
    """Query: the totals of the runs that ended, and the stats (``RunTotals``); the first starts the counting.

    ``max_tasks``: how many task ids get a label of their own (the rest count as ``"other"``);
    it applies when the counting starts.
    """

    max_tasks: int = 1000


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StoreTotals:
    """Part of ``RunTotals``: what a scheduler with a store counted of its store, since it started.

    Attributes:
        commits: How long each commit of outcomes took, counts per bucket (not cumulative; the
            last is ``+Inf``) of ``actors.core.run_totals.COMMIT_BUCKETS``.
        commit_sum: Their sum, seconds.
        claims: Runs this node claimed from a shared store; ``None`` for a store not shared.
    """

    commits: tuple[int, ...]
    commit_sum: float
    claims: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class RunTotals:
    """Reply: counts of ended runs since the counting started, read on the scheduler's thread.

    Attributes:
        runs: ``(task label, outcome, count)``; outcome ``completed``, ``failed`` (an attempt
            that raised, retried or not) or ``cancelled`` (ended by its interrupt).
        lateness: Start lateness (due -> start) of every run, counts per bucket (not
            cumulative; the last is ``+Inf``) of ``actors.core.run_totals.LATENESS_BUCKETS``.
        lateness_sum: Their sum, seconds.
        duration: Start -> end of every run, per bucket of ``DURATION_BUCKETS``.
        duration_sum: Their sum, seconds.
        store: The store's counts (``StoreTotals``); ``None`` for a scheduler without a store.
        stats: The scheduler's ``stats()`` at the same moment (``None`` only where built by hand).
    """

    runs: tuple[tuple[str, str, int], ...]
    lateness: tuple[int, ...]
    lateness_sum: float
    duration: tuple[int, ...]
    duration_sum: float
    store: StoreTotals | None = None
    stats: SchedulerStats | None = None


@final
@dataclass(frozen=True, slots=True)
class RecentRuns:
    """How one task's last runs went, from what its record keeps of them (its last 100 or so).

    Attributes:
        task_id: The task.
        last_outcome: How its last run ended (a ``RunRecord.outcome``: ``completed``,
            ``failed``, ``cancelled``, ``timed_out``, ``missed``); ``None`` before the first.
        lateness: The start lateness (due -> start, seconds, at least 0) of each of those runs
            that started, oldest first.
    """

    task_id: TaskId
    last_outcome: str | None
    lateness: tuple[float, ...]


@final
@dataclass(frozen=True, slots=True)
class QueryRecentRuns:
    """Query: a ``RecentRuns`` for each of ``task_ids`` the scheduler knows (live or in its history)."""

    task_ids: tuple[TaskId, ...]


@final
@dataclass(frozen=True, slots=True)
class QueryTaskTable:
    """Query: the status page's table, ``TaskTable``: the live tasks from ``offset``, at most ``limit``.

    One question for what the page shows (its tasks, how many there are, their recent runs),
    costing the scheduler thread the snapshots of that page's tasks only.
    """

    offset: int = 0
    limit: int | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskTable:
    """Reply to ``QueryTaskTable``.

    Attributes:
        infos: The tasks' snapshots, in scheduling order (as ``QueryTasks`` gives them).
        total: How many live tasks there are in all (``SchedulerStats.live_tasks``).
        recent: A ``RecentRuns`` for each of ``infos`` that has run, in their order.
    """

    infos: tuple[TaskInfo, ...]
    total: int
    recent: tuple[RecentRuns, ...]
