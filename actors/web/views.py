"""What the web API says about tasks and runs: plain JSON data made from ``TaskInfo`` and ``RunRecord``.

No web framework here: these are the JSON objects of ``/api/tasks``, ``/api/tasks/{id}`` and
``/api/tasks/{id}/history`` (``docs/web.md`` lists the fields). Threads: whichever thread
answers the request.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from json.encoder import encode_basestring_ascii
from typing import Any, Final

from actors.cli.rows import format_duration, last_error
from actors.metrics.tally import TaskRuns
from messages import Cron, FixedDelay, FixedRate, Once, RunRecord, TaskInfo, Trigger

__all__ = ["Arguments", "record_json", "task_json", "tasks_body", "trigger_words"]

Arguments = Callable[[str], Mapping[str, Any] | None]
"""Given a task id, its arguments as JSON data (``{"args": [...], "kwargs": {...}}``), or ``None``."""


def trigger_words(trigger: Trigger) -> str:
    """Say when a task runs: ``every 10s``, ``10s after each run``, ``cron 0 9 * * * (UTC)``, ``once``."""
    if isinstance(trigger, FixedRate):
        return f"every {_duration(trigger.interval)}"
    if isinstance(trigger, FixedDelay):
        return f"{_duration(trigger.delay)} after each run"
    if isinstance(trigger, Cron):
        return f"cron {trigger.expr} ({trigger.tz})"
    assert isinstance(trigger, Once)
    return "once"


_DURATIONS: dict[float, str] = {}
"""``format_duration`` of the intervals seen (a schedule has few distinct ones; a list of 10,000
tasks would otherwise write the same words 10,000 times)."""

_MAX_DURATIONS: Final = 1024
"""The most durations ``_DURATIONS`` keeps (beyond: written each time, never a growing dict)."""


def _duration(seconds: float) -> str:
    words = _DURATIONS.get(seconds)
    if words is None:
        words = format_duration(seconds)
        if len(_DURATIONS) < _MAX_DURATIONS:
            _DURATIONS[seconds] = words  # a race of two threads writes the same words twice
    return words


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


def tasks_body(
    infos: Iterable[TaskInfo], runs: Mapping[str, TaskRuns], arguments: Arguments | None = None
) -> bytes:
    """The JSON text of a list of ``task_json`` objects, as ``json.dumps`` of them would say it.

    Written field by field (each string escaped by ``json``'s C escaper, numbers by ``repr``)
    rather than built as dicts and then dumped: a list of 10,000 tasks costs half as much.
    ``tests/web/test_api.py`` holds the two equal.
    """
    parts: list[str] = []
    add = parts.append
    for info in infos:
        seen = runs.get(info.task_id)
        failures = info.failure_count
        outcome = None if seen is None else seen.last_outcome
        if outcome is None and info.run_count:  # as task_json
            outcome = "failed" if info.consecutive_failures else "completed"
        error = info.last_error
        moment = info.next_run_wall
        waits = info.waiting_for
        add(
            f'{{"id":{_text(info.task_id)},"name":{_text(info.name)},'
            f'"trigger":{_text(trigger_words(info.trigger))},"status":"{info.status.value}",'
            f'"next_run":{"null" if moment is None else _quoted_iso(moment)},"runs":{info.run_count},'
            f'"failures":{failures},"consecutive_failures":{info.consecutive_failures},'
            f'"missed":{info.missed_count},"last_outcome":{_maybe(outcome)},'
            f'"last_error":{"null" if error is None else _maybe(last_error(error))},'
            f'"lateness_p50":{"null" if seen is None else _number(seen.lateness_p50)},'
            f'"lateness_p99":{"null" if seen is None else _number(seen.lateness_p99)},'
            f'"waiting_for":[{",".join(map(_text, waits)) if waits else ""}],'
            f'"end_reason":{_maybe(info.end_reason)},"node":{_maybe(info.node)}'
        )
        if arguments is not None:
            add(f',"arguments":{json.dumps(arguments(info.task_id), separators=(",", ":"))}}}')
        else:
            add("}")
        add(",")
    if parts:
        parts.pop()  # the last comma
    return f"[{''.join(parts)}]".encode()


_text: Final[Callable[[str], str]] = encode_basestring_ascii
"""A JSON string of a str (``json``'s C escaper; ASCII out, as ``json.dumps`` writes)."""


def _maybe(text: str | None) -> str:
    return "null" if text is None else encode_basestring_ascii(text)


def _quoted_iso(moment: datetime) -> str:
    return f'"{moment.isoformat()}"'  # digits, signs, colons, a T and a dot: nothing to escape


def _number(value: float | None) -> str:
    return "null" if value is None else float.__repr__(value)


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
