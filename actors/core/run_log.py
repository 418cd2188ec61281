"""Each task's run history in memory, and the values ``keep_result`` keeps: pure data, no I/O.

A task's record keeps how its last ``RUNS_PER_TASK`` runs ended (``TaskRecord.runs``, oldest
first), whatever the store: ``Scheduler.history`` reads them for a task in memory. A plain
one-time task (no options) keeps its worker's ``Completed`` report instead, made already: the
plain path allocates nothing for its history, and ``entries`` turns it into a line when asked. A finished
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
from typing import Final, NamedTuple, cast

from messages.events import TaskId
from messages.history import RunOutcomeName, RunRecord
from messages.metrics import RecentRuns
from messages.reports import Completed

__all__ = [
    "KEPT_VALUE_BYTES",
    "RUNS_PER_TASK",
    "RunEntry",
    "as_record",
    "entries",
    "keep_run",
    "keep_value",
    "last_runs",
    "recent_runs",
    "wall_time",
]

RUNS_PER_TASK: Final = 100
"""How many of its latest runs a task's record keeps in memory (the default ``history`` limit)."""

KEPT_VALUE_BYTES: Final = 64 * 1024
"""The largest value ``keep_result`` keeps: JSON text of at most this many bytes (UTF-8)."""


class RunEntry(NamedTuple):
    """How one run ended, as the core keeps it: clock times, and ``due_wall`` in UTC epoch seconds.

    ``ending`` is the ``RunRecord.outcome`` to be; ``value_json`` and ``value_note`` are for
    ``keep_result``: the run's value as JSON text, or why it was not kept.
    """

    run: int
    due_at: float
    due_wall: float
    started_at: float | None
    finished_at: float
    ending: str  # "completed", "failed", "cancelled", "timed_out" or "missed"
    error: str | None
    attempt: int = 1
    reason: str | None = None
    manual: bool = False
    value_json: str | None = None
    value_note: str | None = None


def entries(
    runs: list[RunEntry] | Completed | tuple[float, float] | None, due_at: float, due_wall: float
) -> list[RunEntry] | None:
    """A task's kept runs as lines: a plain task's report becomes its one line (due at ``due_at``).

    The report is its worker's ``Completed``, or, from the plain path (``completed_plain``),
    just the run's ``(started_at, finished_at)``: its first and only run, completed.
    """
    if type(runs) is tuple:
        started_at, finished_at = runs
        return [RunEntry(1, due_at, due_wall, started_at, finished_at, "completed", None)]
    if not isinstance(runs, Completed):
        return runs  # type: ignore[return-value]
    return [RunEntry(runs.run, due_at, due_wall, runs.started_at, runs.finished_at, "completed", None)]


def keep_run(runs: list[RunEntry] | None, entry: RunEntry) -> list[RunEntry]:
    """Return ``runs`` (new for ``None``) with ``entry`` added; only the last ``RUNS_PER_TASK`` kept."""
    if runs is None:
        return [entry]
    runs.append(entry)
    if len(runs) > 2 * RUNS_PER_TASK:  # trimmed in steps, so a run costs O(1) amortised
        del runs[:-RUNS_PER_TASK]
    return runs


def last_runs(runs: list[RunEntry] | None, limit: int) -> list[RunEntry]:
    """Return up to ``limit`` of the kept ``runs`` (at most ``RUNS_PER_TASK``), newest first."""
    if not runs:
        return []
    return runs[: -min(limit, RUNS_PER_TASK) - 1 : -1]


def recent_runs(
    task_id: TaskId,
    runs: list[RunEntry] | Completed | tuple[float, float] | None,
    due_at: float,
    last_outcome: str | None,
) -> RecentRuns | None:
    """How a task's kept ``runs`` went (``RecentRuns``): a plain task's report is its one run.

    ``due_at``: the task's, a plain task's report's due time; ``last_outcome``: what a durable
    task's row said, for one that has not run here. ``None`` for a task with neither. A plain
    task's report is its ``Completed`` or, from the plain path, its ``(started_at, finished_at)``.
    """
    if isinstance(runs, tuple):
        began = runs[0]
        return RecentRuns(task_id, "completed", (began - due_at if began > due_at else 0.0,))
    if isinstance(runs, Completed):
        started = runs.started_at
        late = () if started is None else (started - due_at if started > due_at else 0.0,)
        return RecentRuns(task_id, "completed", late)
    if not runs:
        return None if last_outcome is None else RecentRuns(task_id, last_outcome, ())
    lateness = tuple(
        entry.started_at - entry.due_at if entry.started_at > entry.due_at else 0.0
        for entry in runs[-RUNS_PER_TASK:]
        if entry.started_at is not None
    )
    return RecentRuns(task_id, runs[-1].ending, lateness)


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


def as_record(entry: RunEntry, wall_offset: float) -> RunRecord:
    """The public ``RunRecord`` of a run kept in memory (``wall_offset``: wall-clock minus clock time)."""
    started = None if entry.started_at is None else entry.started_at + wall_offset
    return RunRecord(
        run=entry.run,
        due_at=entry.due_at,
        due_wall=wall_time(entry.due_wall) or datetime.max.replace(tzinfo=UTC),
        started_at=wall_time(started),
        ended_at=wall_time(entry.finished_at + wall_offset),
        outcome=cast("RunOutcomeName", entry.ending),
        reason=entry.reason,
        error=entry.error,
        attempt=entry.attempt,
        manual=entry.manual,
        value=None if entry.value_json is None else json.loads(entry.value_json),
    )
