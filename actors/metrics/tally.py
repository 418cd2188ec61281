"""``RunTally``: what the metrics and the web page know of runs.

Two sources, both bounded, both free for a scheduler nobody watches:

- **ended runs**, counted by the core where it handles each report (``actors/core/run_totals.py``):
  per task label and outcome, start lateness (due -> start) and duration (start -> end) in
  fixed buckets. The counting starts at the tally's first question (``QueryRunTotals``, one
  message to the scheduler thread per read, which brings the scheduler's stats too); the
  scheduler builds no events for it, so a completed run costs it four list appends, counted in
  bulk later;
- **missed due times**, from ``MISSED`` events (rare: one per skipped slot), counted here on the
  event bus thread by task label and reason.

Labels: the first ``max_tasks`` task ids counted keep their own; later ones count as ``"other"``.
A task's last outcome and lateness percentiles (the page's) come from its record's last runs
(``QueryTaskTable``, ``QueryRecentRuns``: only the tasks asked about), not from these counts.
Threads: ``on_event`` runs on the event bus thread; everything else on any thread (a scrape's,
a web request's).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import pykka

from actors.core.run_totals import COMMIT_BUCKETS, DURATION_BUCKETS, LATENESS_BUCKETS, OTHER
from actors.errors import SchedulerInternalError, SchedulerShutdownError
from messages import (
    EventKind,
    QueryRecentRuns,
    QueryRunTotals,
    QueryTaskTable,
    RecentRuns,
    RunTotals,
    SchedulerStats,
    TaskEvent,
    TaskId,
    TaskTable,
)

if TYPE_CHECKING:
    from actors.api.facade import Scheduler

__all__ = [
    "ASK_TIMEOUT",
    "OTHER",
    "Histogram",
    "RunTally",
    "TallySnapshot",
    "TaskRuns",
    "percentile",
    "shown_runs",
]

ASK_TIMEOUT: Final = 10.0
"""Seconds a read waits for the scheduler thread's answer."""


@dataclass(frozen=True, slots=True)
class Histogram:
    """Counts per bucket (not cumulative; the last is ``+Inf``) and their sum."""

    bounds: Sequence[float]
    counts: Sequence[int]
    total: float


@dataclass(frozen=True, slots=True)
class TallySnapshot:
    """The counts at one moment (keys: the ``task`` label)."""

    runs: dict[tuple[str, str], int]
    """(task, outcome) -> runs that ended so: ``completed``, ``failed``, ``cancelled``."""
    missed: dict[tuple[str, str], int]
    """(task, reason) -> due times missed."""
    lateness: Histogram
    """Start lateness of every run (one histogram for all tasks: a ``task`` label would make a
    scrape of a thousand tasks tens of thousands of lines)."""
    duration: Histogram
    """Duration of every run."""
    commits: Histogram | None = None
    """How long each commit of outcomes to the store took; ``None`` without a store."""
    claims: int | None = None
    """Runs this node claimed from a shared store; ``None`` unless the store is shared."""
    stats: SchedulerStats | None = None
    """The scheduler's stats, read in the same question as the counts."""


@dataclass(frozen=True, slots=True)
class TaskRuns:
    """What the page shows of one task's last runs: the last one's outcome, p50 and p99 start lateness."""

    last_outcome: str | None
    lateness_p50: float | None
    lateness_p99: float | None


class RunTally:
    """The run counts of one scheduler (``actors.metrics.tally_of`` makes it; see the module)."""

    def __init__(self, scheduler: Scheduler, max_tasks: int = 1000) -> None:
        if isinstance(max_tasks, bool) or not isinstance(max_tasks, int):
            raise TypeError(f"max_tasks must be an int, got {max_tasks!r}")
        if max_tasks < 0:
            raise ValueError(f"max_tasks must be >= 0, got {max_tasks}")
        self.max_tasks = max_tasks
        self._ref = scheduler.ref
        # Guards _labels and _missed: the bus thread writes them, a scrape copies them.
        self._lock = threading.Lock()
        self._labels: set[str] = set()
        self._missed: dict[tuple[str, str], int] = {}

    def on_event(self, event: TaskEvent) -> None:
        """Count a ``MISSED`` event (the event bus thread)."""
        if event.kind is not EventKind.MISSED:
            return
        with self._lock:
            label = event.task_id
            if label not in self._labels:
                if len(self._labels) < self.max_tasks:
                    self._labels.add(label)
                else:
                    label = OTHER
            key = (label, event.reason or "unknown")
            self._missed[key] = self._missed.get(key, 0) + 1

    def totals(self) -> RunTotals:
        """The core's counts of ended runs, and the scheduler's stats (one question to its thread).

        Raises:
            SchedulerShutdownError: the scheduler has stopped.
            TimeoutError: it did not answer within ``ASK_TIMEOUT``.
        """
        answer = self._ask(QueryRunTotals(self.max_tasks))
        assert isinstance(answer, RunTotals)
        return answer

    def table(self, offset: int = 0, limit: int | None = None) -> TaskTable:
        """The status page's table: live tasks from ``offset`` (at most ``limit``), their total, recent runs.

        One question to the scheduler thread (``QueryTaskTable``); raises as ``totals``.
        """
        answer = self._ask(QueryTaskTable(offset, limit))
        assert isinstance(answer, TaskTable)
        return answer

    def recent(self, task_ids: Iterable[TaskId]) -> tuple[RecentRuns, ...]:
        """How each of ``task_ids`` the scheduler knows did in its last runs (``QueryRecentRuns``).

        Raises as ``totals``.
        """
        answer = self._ask(QueryRecentRuns(tuple(task_ids)))
        assert isinstance(answer, tuple)
        return answer

    def _ask(self, question: object) -> object:
        try:
            answer = self._ref.ask(question, timeout=ASK_TIMEOUT)
        except pykka.ActorDeadError as error:
            raise SchedulerShutdownError("scheduler is shut down") from error
        except pykka.Timeout as error:
            raise TimeoutError(f"scheduler did not answer within {ASK_TIMEOUT} s") from error
        if isinstance(answer, SchedulerInternalError):
            raise answer
        return answer

    def snapshot(self) -> TallySnapshot:
        """Every count now (any thread): the core's and its stats (one question), and the missed ones."""
        totals = self.totals()
        with self._lock:
            missed = dict(self._missed)
        runs: dict[tuple[str, str], int] = {}
        for label, outcome, count in totals.runs:  # a task named "other" adds to OTHER's
            runs[label, outcome] = runs.get((label, outcome), 0) + count
        store = totals.store
        return TallySnapshot(
            runs=runs,
            missed=missed,
            lateness=Histogram(LATENESS_BUCKETS, totals.lateness, totals.lateness_sum),
            duration=Histogram(DURATION_BUCKETS, totals.duration, totals.duration_sum),
            commits=None if store is None else Histogram(COMMIT_BUCKETS, store.commits, store.commit_sum),
            claims=None if store is None else store.claims,
            stats=totals.stats,
        )


def shown_runs(recent: Iterable[RecentRuns]) -> dict[str, TaskRuns]:
    """What the page shows of each task's recent runs: its last outcome, p50 and p99 lateness (any thread)."""
    shown: dict[str, TaskRuns] = {}
    for row in recent:
        ordered = sorted(row.lateness)
        if ordered:
            p50, p99 = percentile(ordered, 0.5), percentile(ordered, 0.99)
            shown[row.task_id] = TaskRuns(row.last_outcome, p50, p99)
        else:
            shown[row.task_id] = TaskRuns(row.last_outcome, None, None)
    return shown


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values (nearest rank)."""
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[rank]
