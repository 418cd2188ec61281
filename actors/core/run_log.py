"""Each task's run history in memory, and the values ``keep_result`` keeps: pure data, no I/O.

A task's record keeps how its last ``RUNS_PER_TASK`` runs ended (``TaskRecord.runs``, oldest
first), whatever the store: ``Scheduler.history`` reads them for a task in memory. A finished
task keeps its runs for as long as the timetable's history keeps its record (``history=``
finished tasks), so memory holds at most ``RUNS_PER_TASK`` runs per live task and per kept
finished task. A durable task's runs also go to the store's run ledger (``Effects.ledger``),
which is what ``history`` reads on a store.

``keep_value`` decides whether a ``keep_result`` run's value is kept: JSON data (the JSON
module's types: dict with str keys, list, tuple, str, int, float, bool, None; no NaN or
infinity) of at most ``KEPT_VALUE_BYTES`` as UTF-8 JSON text. It is kept as that text, so the
value reads the same from memory, SQLite and PostgreSQL (a tuple comes back a list).

Threads: the scheduler's, as the rest of the core.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, cast

from messages.history import RunOutcomeName, RunRecord

if TYPE_CHECKING:
    from actors.core.effects import RunOutcome
    from actors.core.task_record import TaskRecord

__all__ = [
    "KEPT_VALUE_BYTES",
    "RUNS_PER_TASK",
    "as_record",
    "keep_run",
    "keep_value",
    "last_runs",
    "wall_time",
]

RUNS_PER_TASK: Final = 100
"""How many of its latest runs a task's record keeps in memory (the default ``history`` limit)."""

KEPT_VALUE_BYTES: Final = 64 * 1024
"""The largest value ``keep_result`` keeps: JSON text of at most this many bytes (UTF-8)."""


def keep_run(task: TaskRecord, outcome: RunOutcome) -> None:
    """Add ``outcome`` to ``task``'s runs, dropping the oldest beyond ``RUNS_PER_TASK``."""
    runs = task.runs
    if runs is None:
        task.runs = [outcome]
        return
    runs.append(outcome)
    if len(runs) > 2 * RUNS_PER_TASK:  # trimmed in steps, so a run costs O(1) amortised
        del runs[:-RUNS_PER_TASK]


def last_runs(task: TaskRecord, limit: int) -> list[RunOutcome]:
    """Return up to ``limit`` of ``task``'s kept runs (at most ``RUNS_PER_TASK``), newest first."""
    runs = task.runs
    if not runs:
        return []
    return runs[: -min(limit, RUNS_PER_TASK) - 1 : -1]


def keep_value(value: object) -> tuple[str | None, str | None]:
    """Return ``(value_json, None)`` if ``value`` can be kept, else ``(None, why_not)``."""
    try:
        text = json.dumps(value, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as error:
        return None, f"its value is not JSON data ({type(error).__name__}: {error})"
    size = len(text.encode())
    if size > KEPT_VALUE_BYTES:
        return None, f"its value is {size} bytes as JSON, more than the {KEPT_VALUE_BYTES} keep_result keeps"
    return text, None


def wall_time(epoch: float | None) -> datetime | None:
    """``epoch`` (UTC epoch seconds) as an aware UTC datetime; ``None`` for ``None`` or out of range."""
    if epoch is None:
        return None
    try:
        return datetime.fromtimestamp(epoch, UTC)
    except (OverflowError, ValueError, OSError):
        return None


def as_record(outcome: RunOutcome, wall_offset: float) -> RunRecord:
    """The public ``RunRecord`` of a run kept in memory (``wall_offset``: wall-clock minus clock time)."""
    started = None if outcome.started_at is None else outcome.started_at + wall_offset
    return RunRecord(
        run=outcome.run,
        due_at=outcome.due_at,
        due_wall=wall_time(outcome.due_wall) or datetime.max.replace(tzinfo=UTC),
        started_at=wall_time(started),
        ended_at=wall_time(outcome.finished_at + wall_offset),
        outcome=cast("RunOutcomeName", outcome.outcome),
        reason=outcome.reason,
        error=outcome.error,
        attempt=outcome.attempt,
        manual=outcome.manual,
        value=None if outcome.value_json is None else json.loads(outcome.value_json),
    )
