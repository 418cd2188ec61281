"""``RunTally``: what the metrics and the web page know of runs, gathered from the scheduler's events.

The scheduler keeps counters per task (``TaskInfo``) but no per-run times, and a finished task
leaves ``tasks()``, so its counts would drop out of a counter. The tally is a listener of the
event bus: it counts runs by task and outcome, missed due times by task and reason, and puts each
run's start lateness (due -> start) and duration (start -> end) into fixed buckets (one
histogram each, for all tasks). It exists only
while someone registered it (``actors.metrics.register``, ``actors.web.app``): a scheduler
without it builds none of these events, so its plain path is unchanged.

State is bounded: at most ``max_tasks`` task labels (the first seen; later tasks count under
``"other"``), at most ``MAX_IN_FLIGHT`` started runs waiting for their end, and per labelled
task the lateness of its last ``SAMPLES`` runs (for the page's p50/p99).

Threads: ``on_event`` runs on the scheduler's event bus thread; ``snapshot``/``lateness`` on
any thread (a scrape's, a web request's).
"""

from __future__ import annotations

import bisect
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from messages import EventKind, TaskEvent

__all__ = [
    "DURATION_BUCKETS",
    "LATENESS_BUCKETS",
    "MAX_IN_FLIGHT",
    "OTHER",
    "SAMPLES",
    "Histogram",
    "RunTally",
    "TallySnapshot",
]

OTHER: Final = "other"
"""The ``task`` label of every task beyond the first ``max_tasks``."""

LATENESS_BUCKETS: Final = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
)  # fmt: skip
"""Upper bounds (seconds) of the start-lateness histogram's buckets (``+Inf`` follows)."""

DURATION_BUCKETS: Final = (
    0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0,
)  # fmt: skip
"""Upper bounds (seconds) of the run-duration histogram's buckets (``+Inf`` follows)."""

MAX_IN_FLIGHT: Final = 100_000
"""Started runs whose end the tally waits for, at most (the oldest is forgotten beyond)."""

SAMPLES: Final = 100
"""Latenesses kept per labelled task for its percentiles."""

WATCHED: Final = frozenset(
    {EventKind.STARTED, EventKind.COMPLETED, EventKind.FAILED, EventKind.CANCELLED, EventKind.MISSED}
)
"""The kinds the tally subscribes to."""


@dataclass(slots=True)
class Histogram:
    """Counts per bucket (not cumulative; the last is ``+Inf``), their sum and count."""

    bounds: Sequence[float]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        """Count ``value`` in its bucket."""
        self.counts[bisect.bisect_left(self.bounds, value)] += 1
        self.total += value

    def copy(self) -> Histogram:
        """A copy that later observations leave as it is."""
        return Histogram(self.bounds, list(self.counts), self.total)


@dataclass(frozen=True, slots=True)
class TallySnapshot:
    """A copy of the tally's counts at one moment (keys: the ``task`` label)."""

    runs: dict[tuple[str, str], int]
    """(task, outcome) -> runs that ended so: ``completed``, ``failed``, ``retried``, ``cancelled``."""
    missed: dict[tuple[str, str], int]
    """(task, reason) -> due times missed."""
    lateness: Histogram
    """Start lateness of every run (one histogram: a ``task`` label would make a scrape of a
    thousand tasks tens of thousands of lines; per task, ``RunTally.lateness`` has percentiles)."""
    duration: Histogram
    """Duration of every run that ended after it started."""


class RunTally:
    """Counts and histograms of runs, per task label, fed by ``on_event`` (see the module)."""

    def __init__(self, max_tasks: int = 1000) -> None:
        if isinstance(max_tasks, bool) or not isinstance(max_tasks, int):
            raise TypeError(f"max_tasks must be an int, got {max_tasks!r}")
        if max_tasks < 0:
            raise ValueError(f"max_tasks must be >= 0, got {max_tasks}")
        self.max_tasks = max_tasks
        # Guards every dict below: the bus thread writes them, a scrape or a request copies them.
        self._lock = threading.Lock()
        self._labels: dict[str, str] = {}
        self._runs: dict[tuple[str, str], int] = {}
        self._missed: dict[tuple[str, str], int] = {}
        self._lateness = Histogram(LATENESS_BUCKETS)
        self._duration = Histogram(DURATION_BUCKETS)
        self._started: dict[tuple[str, int, int], float] = {}
        self._samples: dict[str, deque[float]] = {}
        self._last: dict[str, str] = {}  # labelled task -> how its last run ended (or "missed")

    def label(self, task_id: str) -> str:
        """The ``task`` label of ``task_id``: itself for the first ``max_tasks`` ids, else ``"other"``."""
        with self._lock:
            return self._label(task_id)

    def _label(self, task_id: str) -> str:
        label = self._labels.get(task_id)
        if label is None:
            label = task_id if len(self._labels) < self.max_tasks else OTHER
            if label != OTHER:
                self._labels[task_id] = label
        return label

    def on_event(self, event: TaskEvent) -> None:
        """Count one event (the event bus thread)."""
        kind = event.kind
        with self._lock:
            label = self._label(event.task_id)
            if kind is EventKind.STARTED:
                self._started_run(event, label)
            elif kind is EventKind.MISSED:
                reason = (label, event.reason or "unknown")
                self._missed[reason] = self._missed.get(reason, 0) + 1
                if label != OTHER:
                    self._last[label] = "missed"
            elif event.run is not None:  # not a CANCELLED that ended no run
                self._ended_run(event, label)

    def _started_run(self, event: TaskEvent, label: str) -> None:
        self._started[(event.task_id, event.run or 0, event.attempt)] = event.at
        if len(self._started) > MAX_IN_FLIGHT:  # a lost end: forget the oldest start
            del self._started[next(iter(self._started))]
        if event.due_at is None:
            return
        late = max(0.0, event.at - event.due_at)
        self._lateness.observe(late)
        if label != OTHER:
            samples = self._samples.get(label)
            if samples is None:
                samples = self._samples[label] = deque(maxlen=SAMPLES)
            samples.append(late)

    def _ended_run(self, event: TaskEvent, label: str) -> None:
        kind = event.kind
        started = self._started.pop((event.task_id, event.run or 0, event.attempt), None)
        if started is None and kind is EventKind.CANCELLED:
            return  # cancelled before it started: no run ended
        if kind is EventKind.COMPLETED:
            outcome = "completed"
        elif kind is EventKind.FAILED:
            outcome = "retried" if event.retrying else "failed"
        else:
            outcome = "cancelled"
        key = (label, outcome)
        self._runs[key] = self._runs.get(key, 0) + 1
        if label != OTHER:
            self._last[label] = outcome
        if started is not None:
            self._duration.observe(max(0.0, event.at - started))

    def snapshot(self) -> TallySnapshot:
        """Copy the counts (any thread; holds the lock for the copy only)."""
        with self._lock:
            return TallySnapshot(
                runs=dict(self._runs),
                missed=dict(self._missed),
                lateness=self._lateness.copy(),
                duration=self._duration.copy(),
            )

    def last_outcome(self, task_id: str) -> str | None:
        """How the task's last run seen ended: ``completed``, ``failed``, ``missed``...

        ``None`` if none was seen, or the task is counted under ``"other"``.
        """
        with self._lock:
            return self._last.get(task_id)

    def lateness(self, task_id: str) -> tuple[float, float] | None:
        """The p50 and p99 start lateness (seconds) of the task's last ``SAMPLES`` runs; ``None`` if none."""
        with self._lock:
            samples = self._samples.get(task_id)
            ordered = sorted(samples) if samples else None
        if not ordered:
            return None
        return percentile(ordered, 0.5), percentile(ordered, 0.99)


def percentile(ordered: Sequence[float], q: float) -> float:
    """The ``q`` quantile of sorted values (nearest rank)."""
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[rank]
