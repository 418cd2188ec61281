"""``RunCounts``: the totals of ended runs that metrics read, kept by the core once asked for.

Off until the first ``QueryRunTotals`` (``Timetable.run_counts`` is ``None``: the plain path
pays one ``is None`` test per report). Then a run that completed costs four list appends on
the scheduler's thread (``RunCounts.pending``: its task id, due, start and end times, never
its value); when the message that brought it has been handled (``Timetable._release``), and
before each snapshot, ``fold`` counts the runs pending all at once with C loops (slices,
``map``, ``sorted``, ``bisect``, ``isdisjoint``: no Python loop and no call per run, no int
made per run). Under cachegrind that is ~2.3 k instructions a run, where counting each run
in a call (``ended``) costs ~5.3 k. Other endings (failed, cancelled, an ``overlap="allow"``
run) are rarer and count at once (``ended``). Building and delivering two events per run,
the other way to count, would cost several times more. Bounded: ``max_tasks`` labels (the
first task ids counted; later ones count as ``"other"``). Pure data: no I/O, no clock.

A task's last outcome and its latest latenesses are not kept here: its record keeps its
last runs anyway (``TaskRecord.runs``), and ``Queries.recent`` reads them when asked.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from itertools import compress, filterfalse
from operator import sub
from typing import Final

from messages.events import SchedulerStats
from messages.metrics import RunTotals, StoreTotals
from messages.reports import Completed, Failed

__all__ = [
    "COMMIT_BUCKETS",
    "DURATION_BUCKETS",
    "LATENESS_BUCKETS",
    "OTHER",
    "CommitTimes",
    "RunCounts",
]

OTHER: Final = "other"
"""The task label of every task beyond the first ``max_tasks``."""

LATENESS_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
"""Upper bounds (seconds) of the start-lateness histogram's buckets (``+Inf`` follows)."""

DURATION_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0,
)  # fmt: skip
"""Upper bounds (seconds) of the run-duration histogram's buckets (``+Inf`` follows)."""

COMMIT_BUCKETS: Final = (
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
)  # fmt: skip
"""Upper bounds (seconds) of the store-commit histogram's buckets (``+Inf`` follows)."""

COMPLETED: Final = "completed"


class RunCounts:
    """Counts and histograms of ended runs (see the module). The scheduler's thread only.

    ``pending``: completed runs not counted yet, four items each: the task id, the run's due,
    start and end times (clock seconds; a report's start may be ``None``). The timetable
    appends them, and calls ``fold`` when it has handled the message they came in.
    """

    __slots__ = (
        "_beyond",
        "_duration",
        "_labels",
        "_lateness",
        "_other",
        "duration_sum",
        "lateness_sum",
        "max_tasks",
        "pending",
    )

    def __init__(self, max_tasks: int = 1000) -> None:
        self.max_tasks = max_tasks
        self.pending: list[str | float | None] = []
        # Each labelled task id's runs by outcome; OTHER's apart (its key may be a task id too).
        self._labels: dict[str, dict[str, int]] = {}
        self._other: dict[str, int] = {}
        # What an id without a label counts under: None while labels are left, then OTHER's.
        self._beyond: dict[str, int] | None = None
        self._lateness = [0] * (len(LATENESS_BUCKETS) + 1)
        self._duration = [0] * (len(DURATION_BUCKETS) + 1)
        self.lateness_sum = 0.0
        self.duration_sum = 0.0

    def ended(self, task_id: str, due_at: float, report: Completed | Failed, outcome: str) -> None:
        """Count a run of ``task_id`` due at ``due_at`` (clock seconds) whose ``report`` says it ended so.

        While labels are left, the runs pending are counted first: labels go in the order runs ended.
        """
        if self._beyond is None and self.pending:
            self.fold()
        by_outcome = self._labels.get(task_id, self._beyond)
        if by_outcome is None:
            by_outcome = self._label(task_id)
        by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
        started_at = report.started_at
        if started_at is None:
            return
        late = started_at - due_at
        self._lateness[bisect_left(LATENESS_BUCKETS, late)] += 1
        self.lateness_sum += late if late > 0.0 else 0.0
        took = report.finished_at - started_at
        self._duration[bisect_left(DURATION_BUCKETS, took)] += 1
        self.duration_sum += took if took > 0.0 else 0.0

    def fold(self) -> None:
        """Count the completed runs waiting in ``pending`` (see the class), and empty it."""
        pending = self.pending
        if not pending:
            return
        ids: list[str] = pending[0::4]  # type: ignore[assignment]
        dues: list[float] = pending[1::4]  # type: ignore[assignment]
        starts: list[float | None] = pending[2::4]  # type: ignore[assignment]
        ends: list[float] = pending[3::4]  # type: ignore[assignment]
        pending.clear()
        if None in starts:  # a report without a start (not a worker's): counted, not timed
            timed = [start is not None for start in starts]
            dues, starts, ends = (list(compress(times, timed)) for times in (dues, starts, ends))  # type: ignore[assignment]
        if starts:
            lateness = sorted(map(sub, starts, dues))
            self.lateness_sum += _add_sorted(self._lateness, LATENESS_BUCKETS, lateness)
            duration = sorted(map(sub, ends, starts))
            self.duration_sum += _add_sorted(self._duration, DURATION_BUCKETS, duration)
        self._count(ids)

    def _count(self, ids: list[str]) -> None:
        """Count a completed run of each of ``ids`` under its label."""
        labels = self._labels
        if self._beyond is None:  # labels left: the ids not labelled yet take them, in order
            for task_id in filterfalse(labels.__contains__, dict.fromkeys(ids)):
                if self._label(task_id) is self._other:
                    break
        elif labels.keys().isdisjoint(ids):  # only tasks beyond the labels ran (C: no call per id)
            other = self._other
            other[COMPLETED] = other.get(COMPLETED, 0) + len(ids)
            return
        known = list(filter(labels.__contains__, ids))
        if len(known) < len(ids):
            other = self._other
            other[COMPLETED] = other.get(COMPLETED, 0) + len(ids) - len(known)
        for task_id, count in Counter(known).items():
            by_outcome = labels[task_id]
            by_outcome[COMPLETED] = by_outcome.get(COMPLETED, 0) + count

    def _label(self, task_id: str) -> dict[str, int]:
        """A task id not labelled yet: its own label while fewer than ``max_tasks`` are, else OTHER's."""
        if len(self._labels) >= self.max_tasks:
            self._beyond = self._other  # from now on an unlabelled id finds OTHER's without a call
            return self._other
        by_outcome: dict[str, int] = {}
        self._labels[task_id] = by_outcome
        return by_outcome

    def snapshot(self, store: StoreTotals | None = None, stats: SchedulerStats | None = None) -> RunTotals:
        """A copy of the counts (the pending runs counted first).

        ``store``: what the scheduler's home counted of its store; ``stats``: the scheduler's
        stats now; both passed on as they are.
        """
        self.fold()
        runs = [
            (name, outcome, count)
            for name, by_outcome in self._labels.items()
            for outcome, count in by_outcome.items()
        ]
        runs.extend((OTHER, outcome, count) for outcome, count in self._other.items())
        return RunTotals(
            runs=tuple(runs),
            lateness=tuple(self._lateness),
            lateness_sum=self.lateness_sum,
            duration=tuple(self._duration),
            duration_sum=self.duration_sum,
            store=store,
            stats=stats,
        )


def _add_sorted(counts: list[int], bounds: tuple[float, ...], ordered: list[float]) -> float:
    """Add each of the ``ordered`` (sorted) values to its bucket of ``counts``; return their sum.

    A value falls in the first bucket whose bound is at least the value (``bisect_left``'s,
    Prometheus' ``le``), or in the last (``+Inf``). Only the buckets between the first value's
    and the last one's are looked at (often one: the runs of a message start alike). The sum
    counts a value below 0 as 0 (a run started a hair before its due time is on time).
    """
    size = len(ordered)
    low, high = bisect_left(bounds, ordered[0]), bisect_left(bounds, ordered[-1])
    if low == high:
        counts[low] += size
    else:
        below = 0
        for index in range(low, high):
            upto = bisect_right(ordered, bounds[index], below)
            counts[index] += upto - below
            below = upto
        counts[high] += size - below
    total = sum(ordered)
    if ordered[0] < 0.0:
        total -= sum(ordered[: bisect_left(ordered, 0.0)])
    return total


class CommitTimes:
    """How long a home's commits of outcomes took, in ``COMMIT_BUCKETS`` (the scheduler's thread only).

    Kept by a home with a store from its start (one bisect and two adds per commit batch, beside
    a commit that costs a disk write or a round trip); the time comes in, measured by the shell.
    """

    __slots__ = ("_counts", "total")

    def __init__(self) -> None:
        self._counts = [0] * (len(COMMIT_BUCKETS) + 1)
        self.total = 0.0

    def observe(self, seconds: float) -> None:
        """Count one commit that took ``seconds``."""
        took = seconds if seconds > 0.0 else 0.0
        self._counts[bisect_left(COMMIT_BUCKETS, took)] += 1
        self.total += took

    def snapshot(self, claims: int | None = None) -> StoreTotals:
        """A copy of the counts, with ``claims`` (a shared node's runs claimed; ``None``: not shared)."""
        return StoreTotals(commits=tuple(self._counts), commit_sum=self.total, claims=claims)
