"""What the ``status`` command and the live view show of each task, as plain data and text.

A ``JobRow`` is one line of either: id, trigger, status, next run, runs, failures, the last
run's outcome and the last error. Builders take what the scheduler or the store knows
(``TaskInfo``, ``StoredTask``) and the job file's ``JobSpec`` where there is one; formatters
turn rows into text. Nothing here reads a clock: ``now`` is an argument.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Final, final

from actors.cli.jobfile import JobSpec
from actors.store.protocol import StoredTask

__all__ = [
    "COLUMNS",
    "JobRow",
    "describe_spec",
    "describe_stored_trigger",
    "format_duration",
    "format_next_run",
    "row_from_stored",
    "shown_path",
    "table_text",
    "until",
]

COLUMNS: Final = ("id", "trigger", "status", "next run", "runs", "failures", "last outcome", "last error")
_ERROR_WIDTH: Final = 60
_UNITS: Final = (("d", 86_400), ("h", 3_600), ("m", 60))


@final
@dataclass(frozen=True, slots=True)
class JobRow:
    """One task as shown by ``status`` and the live view.

    Attributes:
        task_id: The task's (job's) id.
        trigger: When it runs, in words (``"every 10s"``, ``"cron 0 9 * * * (UTC)"``).
        status: ``scheduled``, ``running``, ``completed``, ``failed`` or ``cancelled``.
        next_run: When it runs next (aware); ``None`` while running or once ended.
        runs: Runs finished so far.
        failures: Runs that failed so far.
        last_outcome: How the last run ended (``completed``, ``failed``, ``missed``), if any.
        last_error: The last failed run's error, one line, if any.
    """

    task_id: str
    trigger: str
    status: str
    next_run: datetime | None
    runs: int
    failures: int
    last_outcome: str | None
    last_error: str | None


def format_duration(seconds: float) -> str:
    """Write seconds as the job file does: ``500ms``, ``10s``, ``1m30s``, ``1h30m``, ``2d``."""
    if 0 < seconds < 1:
        return f"{seconds * 1000:g}ms"
    whole = int(seconds)
    fraction = seconds - whole
    parts = []
    for unit, size in _UNITS:
        amount, whole = divmod(whole, size)
        if amount:
            parts.append(f"{amount}{unit}")
    rest = whole + fraction
    if rest or not parts:
        parts.append(f"{rest:g}s")
    return "".join(parts)


def describe_spec(spec: JobSpec) -> str:
    """Say when a job of the file runs: ``every 10s``, ``delay 30s``, ``cron 0 9 * * * (UTC)``, ``at ...``."""
    if spec.every is not None:
        return f"every {format_duration(spec.every)}"
    if spec.delay is not None:
        return f"delay {format_duration(spec.delay)}"
    if spec.cron is not None:
        return f"cron {spec.cron} ({spec.tz or 'UTC'})"
    assert spec.at is not None
    return f"at {spec.at.isoformat(sep=' ')}"


def describe_stored_trigger(trigger_json: str) -> str:  # noqa: PLR0911 - one return per format
    """Say when a stored task runs, from the trigger the store keeps (any format it may hold)."""
    try:
        trigger = json.loads(trigger_json)
    except ValueError:
        return trigger_json
    if not isinstance(trigger, dict):
        return trigger_json
    if isinstance(trigger.get("rate"), int | float):
        return f"every {format_duration(trigger['rate'])}"
    if isinstance(trigger.get("delay"), int | float):
        return f"delay {format_duration(trigger['delay'])}"
    expr = trigger.get("cron", trigger.get("expr"))
    if isinstance(expr, str):
        return f"cron {expr} ({trigger.get('tz', 'UTC')})"
    if trigger.get("once") is True:
        return "once"
    return trigger_json


def row_from_stored(task: StoredTask, spec: JobSpec | None = None) -> JobRow:
    """Build the row of a task as its store keeps it (its job's ``spec`` describes the trigger)."""
    next_run = None if task.next_due is None else _utc(task.next_due)
    return JobRow(
        task_id=task.task_id,
        trigger=describe_spec(spec) if spec is not None else describe_stored_trigger(task.trigger_json),
        status=task.status,
        next_run=next_run,
        runs=task.run_count,
        failures=task.failure_count,
        last_outcome=task.last_outcome,
        last_error=one_line(task.last_error),
    )


def one_line(error: str | None) -> str | None:
    """Return the last non-empty line of an error text (a traceback's ends with the error)."""
    if not error:
        return None
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None


def until(instant: datetime, now: datetime) -> str:
    """Say how long until ``instant``, coarsely: ``in 12s``, ``in 4m``, ``in 3h 5m``, ``due now``."""
    seconds = (instant - now).total_seconds()
    if seconds < 0.5:
        return "due now"
    if seconds < 60:
        return f"in {round(seconds)}s"
    if seconds < 3_600:
        return f"in {int(seconds // 60)}m"
    if seconds < 86_400:
        hours, minutes = divmod(int(seconds // 60), 60)
        return f"in {hours}h {minutes}m" if minutes else f"in {hours}h"
    days, hours = divmod(int(seconds // 3_600), 24)
    return f"in {days}d {hours}h" if hours else f"in {days}d"


def format_next_run(instant: datetime | None, now: datetime) -> str:
    """Show a next run in ``now``'s zone (the time of day if today, else the date too) and how soon."""
    if instant is None:
        return "-"
    local = (instant + timedelta(milliseconds=500)).astimezone(now.tzinfo)  # rounded, as ``until`` is
    shown = local.strftime("%H:%M:%S") if local.date() == now.date() else local.strftime("%Y-%m-%d %H:%M")
    return f"{shown} ({until(instant, now)})"


def cells(row: JobRow, now: datetime) -> tuple[str, ...]:
    """Return a row's cells as text, in ``COLUMNS`` order."""
    error = row.last_error or "-"
    if len(error) > _ERROR_WIDTH:
        error = error[: _ERROR_WIDTH - 1] + "…"
    return (
        row.task_id,
        row.trigger,
        row.status,
        format_next_run(row.next_run, now),
        str(row.runs),
        str(row.failures),
        row.last_outcome or "-",
        error,
    )


def table_text(rows: Sequence[JobRow], now: datetime) -> str:
    """Return rows as a plain text table with a header line, columns padded to fit."""
    lines = [COLUMNS, *(cells(row, now) for row in rows)]
    widths = [max(len(line[column]) for line in lines) for column in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def shown_path(path: Path) -> str:
    """Write a path as a user would: relative to the current folder when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)
