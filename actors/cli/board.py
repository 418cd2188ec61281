"""The runner's memory of each task's last run, fed by the scheduler's events.

``TaskInfo`` says how many runs a task had, not how the last one ended nor how long it took;
the ``Board`` keeps that, from the events. It is written on the event bus thread (``observe``)
and read on the runner's main thread (``last``), so one lock guards it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import final

from messages import EventKind, TaskEvent

__all__ = ["Board", "LastRun"]

_OUTCOMES = frozenset({EventKind.COMPLETED, EventKind.FAILED, EventKind.MISSED})


@final
@dataclass(frozen=True, slots=True)
class LastRun:
    """How a task's last run ended.

    Attributes:
        outcome: ``completed``, ``failed`` or ``missed``.
        error: The error of a failed run, one line (``"ValueError: no data"``), else ``None``.
        duration: Seconds the run took, if it started in this process.
    """

    outcome: str
    error: str | None
    duration: float | None


class Board:
    """Each task's last run (thread-safe: ``observe`` on the bus thread, the rest anywhere)."""

    def __init__(self) -> None:
        # Guards both dicts: events arrive on the bus thread, the view reads on the main thread.
        self._lock = threading.Lock()
        self._started: dict[tuple[str, int], float] = {}
        self._last: dict[str, LastRun] = {}

    def seed(self, task_id: str, outcome: str | None, error: str | None) -> None:
        """Record what the store says of a task's last run, before any event of this process."""
        if outcome is not None:
            with self._lock:
                self._last.setdefault(task_id, LastRun(outcome, error, None))

    def observe(self, event: TaskEvent) -> float | None:
        """Take one event (bus thread); return the run's duration for a finished run, else ``None``."""
        key = (event.task_id, event.run or 0)
        with self._lock:
            if event.kind is EventKind.STARTED:
                self._started[key] = event.at
                return None
            if event.kind not in _OUTCOMES:
                return None
            started = self._started.pop(key, None)
            duration = None if started is None else max(0.0, event.at - started)
            error = None if event.error is None else f"{type(event.error).__name__}: {event.error}"
            self._last[event.task_id] = LastRun(event.kind.value, error, duration)
            return duration

    def last(self, task_id: str) -> LastRun | None:
        """Return how ``task_id``'s last run ended, if the board knows."""
        with self._lock:
            return self._last.get(task_id)
