"""The runner's log: stdlib ``logging``, one line per message, stamped with the local ISO time.

``configure`` sets up the root logger for a command; ``event_line`` is the line for one
scheduler event: ``task=<id> event=<kind> run=<n> duration=<s> error="..."``.
"""

from __future__ import annotations

import logging
import sys
from datetime import datetime
from typing import Final

from messages import EventKind, TaskEvent

__all__ = ["LEVELS", "IsoFormatter", "configure", "event_level", "event_line"]

LEVELS: Final = ("debug", "info", "warning", "error")
_FORMAT: Final = "%(asctime)s %(levelname)s %(message)s"
# One line per run: its outcome. DUE and STARTED only for those who ask for everything.
_QUIET_KINDS: Final = frozenset({EventKind.DUE, EventKind.STARTED})
_WARNING_KINDS: Final = frozenset({EventKind.FAILED, EventKind.MISSED, EventKind.CLOCK_JUMPED})


class IsoFormatter(logging.Formatter):
    """Stamps records with the local time in ISO 8601, milliseconds and offset included."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """Return the record's time as ``2026-05-01T12:00:00.123+02:00``."""
        return datetime.fromtimestamp(record.created).astimezone().isoformat(timespec="milliseconds")


def configure(level: str, handler: logging.Handler | None = None) -> None:
    """Send every log record at ``level`` or above through ``handler`` (stderr by default)."""
    handler = handler or logging.StreamHandler(sys.stderr)
    handler.setFormatter(IsoFormatter(_FORMAT))
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())


def event_level(event: TaskEvent) -> int:
    """Return the level an event is logged at (WARNING for failed, missed, a clock jump).

    DEBUG for due and started (a run's outcome is its one line), INFO for the rest.
    """
    if event.kind in _QUIET_KINDS:
        return logging.DEBUG
    if event.kind in _WARNING_KINDS:
        return logging.WARNING
    return logging.INFO


def event_line(event: TaskEvent, duration: float | None) -> str:
    """Return the log line of one event (task id, event, run, duration, error where there are any)."""
    if event.kind is EventKind.CLOCK_JUMPED:  # about no task: the wall-clock tasks were re-planned
        return f"event={event.kind.value} jump={event.jump or 0.0:+.3f}s"
    parts = [f"task={event.task_id}", f"event={event.kind.value}"]
    if event.run is not None:
        parts.append(f"run={event.run}")
    if duration is not None:
        parts.append(f"duration={duration:.3f}s")
    if event.error is not None:
        text = f"{type(event.error).__name__}: {event.error}".replace('"', "'").replace("\n", " ")
        parts.append(f'error="{text}"')
    if event.final:
        parts.append("final")
    return " ".join(parts)
