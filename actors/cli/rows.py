"""What the ``status`` command and the live view show of each task, as plain data and text.

A ``JobRow`` is one line of either: id, trigger, status, next run, runs, failures, the last
run's outcome and the last error. Builders take what the scheduler or the store knows
(``TaskInfo``, ``StoredTask``) and the job file's ``JobSpec`` where there is one; formatters
turn rows into text. Nothing here reads a clock: ``now`` is an argument.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Final, final

from actors.errors import RemoteRunError
from actors.store.protocol import StoredTask
from actors.store.trigger_json import decode_trigger

if TYPE_CHECKING:  # only named: the job file checks more than a pure module may import
    from actors.cli.jobfile import JobSpec

__all__ = [
    "COLUMNS",
    "NEEDED_COLUMNS",
    "JobRow",
    "describe_spec",
    "describe_stored_trigger",
    "fit_columns",
    "format_duration",
    "format_next_run",
    "last_error",
    "row_from_stored",
    "shown_path",
    "split_next_run",
    "table_text",
    "until",
]

COLUMNS: Final = ("id", "trigger", "status", "next run", "runs", "failures", "last outcome", "last error")
NEEDED_COLUMNS: Final = ("id", "next run", "runs", "failures", "last outcome")
"""The columns a narrow live view keeps whole; the others are shown only where they fit."""
_OPTIONAL_COLUMNS: Final = ("status", "last error", "trigger")  # the most useful first
_ERROR_MIN_WIDTH: Final = 20  # the last error wraps, but not into a column narrower than this
_ERROR_WIDTH: Final = 60
_NEXT_RUN_BREAK: Final = " ("  # between a next run's time and how soon it is
_DUE_NOW: Final = 1.0  # seconds either side of a due time said as "due now" (a redraw is 1 s)
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
        last_error: The last failed run's error, one line, if any (see ``last_error``): kept
            after later successes, as the store and ``TaskInfo.last_error`` keep it.
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


def describe_stored_trigger(trigger_json: str) -> str:
    """Say when a stored task runs, from the trigger the store keeps (its text, if not one of ours)."""
    try:
        trigger = decode_trigger(trigger_json)
    except (ValueError, TypeError, KeyError):
        return trigger_json
    if trigger.kind == "rate":
        return f"every {format_duration(trigger.rate)}"
    if trigger.kind == "delay":
        return f"delay {format_duration(trigger.delay)}"
    if trigger.kind == "cron":
        return f"cron {trigger.cron} ({trigger.tz})"
    return "once"


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
        last_error=last_error(text=task.last_error),
    )


def last_error(error: BaseException | None = None, text: str | None = None) -> str | None:
    """Return the "last error" of ``status`` and the live view: the last failed run's error, one line.

    It is the error of the most recent run that failed, kept after later runs succeed (the
    last outcome says whether it recovered; the failures count, how often it failed), as the
    store's ``last_error`` and ``TaskInfo.last_error`` keep it. ``error`` is the exception
    when this process has it (``TaskInfo.last_error``); else ``text`` is what the store keeps
    (``StoredTask.last_error``, or ``TaskInfo.last_traceback`` of a task loaded from a store).
    Both say ``"TypeName: message"``, so both commands show the same line for the same run.
    """
    if isinstance(error, RemoteRunError):
        return one_line(error.error)  # the text its node stored, without this node's preamble
    if error is not None:
        return one_line(f"{type(error).__name__}: {error}")
    return one_line(text)


def one_line(error: str | None) -> str | None:
    """Return the last non-empty line of an error text (a traceback's ends with the error)."""
    if not error:
        return None
    lines = [line.strip() for line in error.strip().splitlines() if line.strip()]
    return lines[-1] if lines else None


def until(instant: datetime, now: datetime, *, maybe_running: bool = False) -> str:
    """Say how long until ``instant``, coarsely: ``in 12s``, ``in 4m``, ``in 3h 5m``, ``due now``.

    A time more than a second past is ``overdue by 3m``: no run has started for it. With
    ``maybe_running`` (a store a live scheduler holds, read from outside: the store does not
    say whether a run is under way) it is ``due 3m ago`` instead.
    """
    seconds = (instant - now).total_seconds()
    if seconds >= 0.5:
        return f"in {_coarse(seconds)}"
    if seconds > -_DUE_NOW:
        return "due now"
    return f"due {_coarse(-seconds)} ago" if maybe_running else f"overdue by {_coarse(-seconds)}"


def _coarse(seconds: float) -> str:
    if seconds < 60:
        return f"{round(seconds)}s"
    if seconds < 3_600:
        return f"{int(seconds // 60)}m"
    if seconds < 86_400:
        hours, minutes = divmod(int(seconds // 60), 60)
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(int(seconds // 3_600), 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def format_next_run(instant: datetime | None, now: datetime, *, maybe_running: bool = False) -> str:
    """Show a next run in ``now``'s zone (the time of day if today, else the date too) and how soon.

    ``maybe_running``: as for ``until``.
    """
    if instant is None:
        return "-"
    local = (instant + timedelta(milliseconds=500)).astimezone(now.tzinfo)  # rounded, as ``until`` is
    shown = local.strftime("%H:%M:%S") if local.date() == now.date() else local.strftime("%Y-%m-%d %H:%M")
    return f"{shown} ({until(instant, now, maybe_running=maybe_running)})"


def cells(row: JobRow, now: datetime, *, maybe_running: bool = False) -> tuple[str, ...]:
    """Return a row's cells as text, in ``COLUMNS`` order (``maybe_running``: as for ``until``)."""
    error = row.last_error or "-"
    if len(error) > _ERROR_WIDTH:
        error = error[: _ERROR_WIDTH - 1] + "…"
    return (
        row.task_id,
        row.trigger,
        row.status,
        format_next_run(row.next_run, now, maybe_running=maybe_running),
        str(row.runs),
        str(row.failures),
        row.last_outcome or "-",
        error,
    )


def table_text(rows: Sequence[JobRow], now: datetime, *, maybe_running: bool = False) -> str:
    """Return rows as a plain text table with a header line, columns padded to fit.

    ``maybe_running``: as for ``until``.
    """
    lines = [COLUMNS, *(cells(row, now, maybe_running=maybe_running) for row in rows)]
    widths = [max(len(line[column]) for line in lines) for column in range(len(COLUMNS))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def fit_columns(
    lines: Sequence[Sequence[str]],
    width: int,
    *,
    measure: Callable[[str], int] = len,
    per_column: int = 3,
) -> dict[str, int]:
    """Choose the columns of a table ``width`` cells wide; return each one's width, in ``COLUMNS`` order.

    ``lines`` are the rows' cells in ``COLUMNS`` order (``cells``); ``measure`` says how wide a
    text shows (rich's ``cell_len`` for a terminal); ``per_column`` is what each column costs
    besides its text (a border and two blanks), the table one border more. The
    ``NEEDED_COLUMNS`` are always there, and their values are never cut: at their full width
    if they fit, else with their names on two lines, and then with the longest next runs on
    two (``split_next_run``). The others are added while they fit, in ``_OPTIONAL_COLUMNS``
    order: ``status`` and ``trigger`` whole, ``last error`` (it wraps) if
    ``_ERROR_MIN_WIDTH`` of it fits, and it then takes what the others leave, up to its full
    width.
    """
    natural = {
        column: max([measure(column), *(measure(line[index]) for line in lines)])
        for index, column in enumerate(COLUMNS)
    }
    chosen = {column: natural[column] for column in NEEDED_COLUMNS}
    left = width - 1 - sum(natural[column] + per_column for column in NEEDED_COLUMNS)
    if left < 0:  # the names on lines of one word: nothing lost
        chosen = {column: _narrowest(column, lines, measure, split=False) for column in NEEDED_COLUMNS}
        left = width - 1 - sum(chosen[column] + per_column for column in NEEDED_COLUMNS)
    if left < 0:  # then the longest next runs on two lines
        narrowest = _narrowest("next run", lines, measure, split=True)
        shrink = min(-left, chosen["next run"] - narrowest)
        chosen["next run"] -= shrink
        left += shrink
    for column in _OPTIONAL_COLUMNS:
        wanted = min(natural[column], _ERROR_MIN_WIDTH) if column == "last error" else natural[column]
        if wanted + per_column <= left:
            chosen[column] = wanted
            left -= wanted + per_column
    if "last error" in chosen:
        chosen["last error"] = min(natural["last error"], chosen["last error"] + left)
    return {column: chosen[column] for column in COLUMNS if column in chosen}


def split_next_run(text: str) -> str:
    """Put a next run's "how soon" on a second line (``12:04:00`` over ``(in 4m)``), for a narrow column."""
    return text.replace(_NEXT_RUN_BREAK, "\n(", 1)


def _narrowest(
    column: str, lines: Sequence[Sequence[str]], measure: Callable[[str], int], *, split: bool
) -> int:
    # A needed column's width with its name on lines of one word (and, ``split``, every next
    # run on two lines), its values whole.
    index = COLUMNS.index(column)
    texts = [line[index] for line in lines]
    if split:
        texts = [part for text in texts for part in split_next_run(text).split("\n")]
    return max([*(measure(word) for word in column.split()), *(measure(text) for text in texts)])


def shown_path(path: Path) -> str:
    """Write a path as a user would: relative to the current folder when it is under it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def _utc(timestamp: float) -> datetime:
    return datetime.fromtimestamp(timestamp, UTC)
