"""``RunCounts``: the totals of ended runs that metrics read, kept by the core once asked for.

Off until the first ``QueryRunTotals`` (``Timetable.run_counts`` is ``None``: the plain path
pays one ``is None`` test per report). Then every report adds to a count per task label and
outcome and to two fixed-bucket histograms: a few dict and list operations on the scheduler's
thread, where building and delivering two events per run would cost several times more.
Bounded: ``max_tasks`` labels (the first task ids seen; later ones count as ``"other"``), and
``SAMPLES`` latenesses per labelled task. Pure data: no I/O, no clock (times come in).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import deque
from typing import Final

from messages.metrics import RunTotals, StoreTotals
from messages.reports import Completed, Failed

__all__ = [
    "COMMIT_BUCKETS",
    "DURATION_BUCKETS",
    "LATENESS_BUCKETS",
    "OTHER",
    "SAMPLES",
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

SAMPLES: Final = 100
"""Latenesses kept per labelled task, for its percentiles."""


class RunCounts:
    """Counts and histograms of ended runs (see the module). The scheduler's thread only."""

    __slots__ = (
        "_duration", "_labels", "_last", "_lateness", "_runs", "_samples", "duration_sum",
        "lateness_sum", "max_tasks",
    )  # fmt: skip

    def __init__(self, max_tasks: int = 1000) -> None:
        self.max_tasks = max_tasks
        self._labels: dict[str, str] = {}
        self._runs: dict[tuple[str, str], int] = {}
        self._last: dict[str, str] = {}
        self._samples: dict[str, deque[float]] = {}
        self._lateness = [0] * (len(LATENESS_BUCKETS) + 1)
        self._duration = [0] * (len(DURATION_BUCKETS) + 1)
        self.lateness_sum = 0.0
        self.duration_sum = 0.0

    def ended(self, task_id: str, due_at: float, report: Completed | Failed, outcome: str) -> None:
        """Count a run of ``task_id`` due at ``due_at`` (clock seconds) whose ``report`` says it ended so."""
        started_at, finished_at = report.started_at, report.finished_at
        label = self._labels.get(task_id)
        if label is None:
            label = task_id if len(self._labels) < self.max_tasks else OTHER
            if label != OTHER:
                self._labels[task_id] = label
        key = (label, outcome)
        runs = self._runs
        runs[key] = runs.get(key, 0) + 1
        if label != OTHER:
            self._last[label] = outcome
        if started_at is None:
            return
        late = started_at - due_at if started_at > due_at else 0.0
        self._lateness[bisect_left(LATENESS_BUCKETS, late)] += 1
        self.lateness_sum += late
        took = finished_at - started_at if finished_at > started_at else 0.0
        self._duration[bisect_left(DURATION_BUCKETS, took)] += 1
        self.duration_sum += took
        if label != OTHER:
            samples = self._samples.get(label)
            if samples is None:
                samples = self._samples[label] = deque(maxlen=SAMPLES)
            samples.append(late)

    def snapshot(self, samples: bool = False, store: StoreTotals | None = None) -> RunTotals:
        """A copy of the counts (``samples``: with each labelled task's latest latenesses).

        ``store``: what the scheduler's home counted of its store, passed on as it is.
        """
        return RunTotals(
            runs=tuple((label, outcome, count) for (label, outcome), count in self._runs.items()),
            lateness=tuple(self._lateness),
            lateness_sum=self.lateness_sum,
            duration=tuple(self._duration),
            duration_sum=self.duration_sum,
            last=tuple(self._last.items()),
            samples=tuple((label, tuple(kept)) for label, kept in self._samples.items()) if samples else (),
            store=store,
        )


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
