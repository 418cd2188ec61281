"""What the web API says about tasks and runs: plain JSON data made from ``TaskInfo`` and ``RunRecord``.

No web framework here: these are the JSON objects of ``/api/tasks``, ``/api/tasks/{id}`` and
``/api/tasks/{id}/history`` (``docs/web.md`` lists the fields). Threads: whichever thread
answers the request.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from actors.cli.rows import format_duration, last_error
from actors.metrics.tally import TaskRuns
from messages import Cron, FixedDelay, FixedRate, Once, RunRecord, TaskInfo, Trigger

__all__ = ["Arguments", "record_json", "task_json", "trigger_words"]

Arguments = Callable[[str], Mapping[str, Any] | None]
"""Given a task id, its arguments as JSON data (``{"args": [...], "kwargs": {...}}``), or ``None``."""


def trigger_words(trigger: Trigger) -> str:
    """Say when a task runs: ``every 10s``, ``10s after each run``, ``cron 0 9 * * * (UTC)``, ``once``."""
    if isinstance(trigger, FixedRate):
        return f"every {format_duration(trigger.interval)}"
    if isinstance(trigger, FixedDelay):
        return f"{format_duration(trigger.delay)} after each run"
    if isinstance(trigger, Cron):
        return f"cron {trigger.expr} ({trigger.tz})"
    assert isinstance(trigger, Once)
    return "once"


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat()


def task_json(
    info: TaskInfo, runs: Mapping[str, TaskRuns], arguments: Arguments | None = None
) -> dict[str, Any]:
    """The JSON object of one task (``runs``: ``RunTally.per_task``; ``arguments``: if shown)."""
    seen = runs.get(info.task_id)
    error = last_error(info.last_error)
    outcome = None if seen is None else seen.last_outcome
    if outcome is None and info.run_count:  # ran before the tally was there: its counters say
        outcome = "failed" if info.consecutive_failures else "completed"
    data: dict[str, Any] = {
        "id": info.task_id,
        "name": info.name,
        "trigger": trigger_words(info.trigger),
        "status": info.status.value,
        "next_run": _iso(info.next_run_wall),
        "runs": info.run_count,
        "failures": info.failure_count,
        "consecutive_failures": info.consecutive_failures,
        "missed": info.missed_count,
        "last_outcome": outcome,
        "last_error": error,
        "lateness_p50": None if seen is None else seen.lateness_p50,
        "lateness_p99": None if seen is None else seen.lateness_p99,
        "waiting_for": list(info.waiting_for),
        "end_reason": info.end_reason,
        "node": info.node,
    }
    if arguments is not None:
        data["arguments"] = arguments(info.task_id)
    return data


def record_json(record: RunRecord, show_value: bool = False) -> dict[str, Any]:
    """The JSON object of one run: the fields of ``RunRecord`` (times in ISO 8601, UTC).

    ``value`` (what a ``keep_result`` task returned) is left out unless ``show_value``, as
    arguments are: it may hold what they held.
    """
    started, ended = record.started_at, record.ended_at
    return {
        "run": record.run,
        "due_at": record.due_at,
        "due_wall": record.due_wall.isoformat(),
        "started_at": _iso(started),
        "ended_at": _iso(ended),
        "outcome": record.outcome,
        "reason": record.reason,
        "error": record.error,
        "attempt": record.attempt,
        "node": record.node,
        "manual": record.manual,
        "value": record.value if show_value else None,
        "lateness": None if started is None else max(0.0, (started - record.due_wall).total_seconds()),
        "duration": None if started is None or ended is None else (ended - started).total_seconds(),
    }
