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


_FIRST_LATENESS: Final = LATENESS_BUCKETS[0]
_FIRST_DURATION: Final = DURATION_BUCKETS[0]


class _LabelRuns:
    """One task label's counts: runs by outcome, the last outcome, its latest latenesses."""

    __slots__ = ("by_outcome", "last", "samples")

    def __init__(self, samples: deque[float] | None) -> None:
        self.by_outcome: dict[str, int] = {}
        self.last: str | None = None
        self.samples = samples  # None for OTHER: its tasks are many, their percentiles meaningless


class RunCounts:
    """Counts and histograms of ended runs (see the module). The scheduler's thread only.

    Each labelled task id maps to its own ``_LabelRuns``, so a run costs one dict lookup for
    everything its label keeps (not one per count) and no key tuple is made per run.
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
    )

    def __init__(self, max_tasks: int = 1000) -> None:
        self.max_tasks = max_tasks
        self._labels: dict[str, _LabelRuns] = {}
        self._other = _LabelRuns(None)
        # What an id without a label counts under: None while labels are left, then OTHER's.
        self._beyond: _LabelRuns | None = None
        self._lateness = [0] * (len(LATENESS_BUCKETS) + 1)
        self._duration = [0] * (len(DURATION_BUCKETS) + 1)
        self.lateness_sum = 0.0
        self.duration_sum = 0.0

    def ended(self, task_id: str, due_at: float, report: Completed | Failed, outcome: str) -> None:
        """Count a run of ``task_id`` due at ``due_at`` (clock seconds) whose ``report`` says it ended so."""
        label = self._labels.get(task_id, self._beyond)
        if label is None:
            label = self._label(task_id)
        by_outcome = label.by_outcome
        by_outcome[outcome] = by_outcome.get(outcome, 0) + 1
        label.last = outcome
        started_at = report.started_at
        if started_at is None:
            return
        # Most runs start within the first bucket (and short ones end in it): no bisect for them.
        late = started_at - due_at
        if late <= _FIRST_LATENESS:
            self._lateness[0] += 1
            late = late if late > 0.0 else 0.0  # (not max(): a call)
        else:
            self._lateness[bisect_left(LATENESS_BUCKETS, late)] += 1
        self.lateness_sum += late
        took = report.finished_at - started_at
        if took <= _FIRST_DURATION:
            self._duration[0] += 1
            took = took if took > 0.0 else 0.0
        else:
            self._duration[bisect_left(DURATION_BUCKETS, took)] += 1
        self.duration_sum += took
        if label.samples is not None:
            label.samples.append(late)

    def _label(self, task_id: str) -> _LabelRuns:
        """A task id not labelled yet: its own label while fewer than ``max_tasks`` are, else OTHER's."""
        if len(self._labels) >= self.max_tasks:
            self._beyond = self._other  # from now on an unlabelled id finds OTHER's without a call
            return self._other
        label = self._labels[task_id] = _LabelRuns(deque(maxlen=SAMPLES))
        return label

    def snapshot(self, samples: bool = False, store: StoreTotals | None = None) -> RunTotals:
        """A copy of the counts (``samples``: with each labelled task's latest latenesses).

        ``store``: what the scheduler's home counted of its store, passed on as it is.
        """
        labels = self._labels
        runs = [
            (name, outcome, count)
            for name, label in labels.items()
            for outcome, count in label.by_outcome.items()
        ]
        runs.extend((OTHER, outcome, count) for outcome, count in self._other.by_outcome.items())
        return RunTotals(
            runs=tuple(runs),
            lateness=tuple(self._lateness),
            lateness_sum=self.lateness_sum,
            duration=tuple(self._duration),
            duration_sum=self.duration_sum,
            last=tuple((name, label.last) for name, label in labels.items() if label.last is not None),
            samples=tuple((name, tuple(label.samples)) for name, label in labels.items() if label.samples)
            if samples
            else (),
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
