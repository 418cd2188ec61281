"""The SQLite store's reads: its queries and the conversion of rows to plain data.

Shared by the store and the read-only inspector, and the conversions (``collect_tasks``,
``ledger_rows``) by the PostgreSQL store, whose rows have the same columns. Each function runs
on the connection it is given, on the caller's thread; a query sees the data committed when
it started.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, Protocol

from actors.store.protocol import LedgerRow, StoredTask
from messages.frozen import slot_setters

# Column order of every task query: the field order of StoredTask.
TASK_COLUMNS: Final = (
    "task_id, seq, fn_ref, args_json, kwargs_json, trigger_json, options_json, status, "
    "next_due, run_count, failure_count, consecutive_failures, last_error, last_outcome, updated_at"
)
RUN_COLUMNS: Final = (
    "task_id, task_seq, run, due, started, finished, outcome, error, "
    "attempt, reason, node, manual, value_json, value_note"
)

_TASK_BY_ID: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE task_id = ?"
_LIVE_TASKS: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE status = 'scheduled' ORDER BY seq"
_ALL_TASKS: Final = f"SELECT {TASK_COLUMNS} FROM task ORDER BY seq"
_RUNS: Final = f"SELECT {RUN_COLUMNS} FROM run ORDER BY id DESC LIMIT ?"
_RUNS_OF_TASK: Final = f"SELECT {RUN_COLUMNS} FROM run WHERE task_id = ? ORDER BY id DESC LIMIT ?"
_HIGH_WATER: Final = "SELECT minted_high_water FROM store_meta WHERE id = 1"

_SHORT_TEXT: Final = 2  # arguments this short ("[]": none) are shared; longer ones rarely repeat
_PART_ROWS: Final = 512  # rows per part of a scheduler's load (read_live_parts says why)
_FETCH_ROWS: Final = 4096  # rows per fetch: bounds the transient tuples while loading

(
    _SET_TASK_ID,
    _SET_SEQ,
    _SET_FN_REF,
    _SET_ARGS,
    _SET_KWARGS,
    _SET_TRIGGER,
    _SET_OPTIONS,
    _SET_STATUS,
    _SET_NEXT_DUE,
    _SET_RUN_COUNT,
    _SET_FAILURE_COUNT,
    _SET_CONSECUTIVE,
    _SET_LAST_ERROR,
    _SET_LAST_OUTCOME,
    _SET_UPDATED_AT,
) = slot_setters(StoredTask)
_new = object.__new__


def task_from_row(row: tuple[Any, ...]) -> StoredTask:
    """Build a ``StoredTask`` from a row in ``TASK_COLUMNS`` order (trusted: our own file)."""
    return _build_task(row, _own)


def _own(text: Any, _default: Any) -> Any:  # no sharing: a single row keeps its own text
    return text


_Share = Callable[[Any, Any], Any]  # dict.setdefault of a text -> shared text table


def _build_task(row: tuple[Any, ...], share: _Share) -> StoredTask:
    # Set the slots directly (as messages.frozen explains): a restart builds a million of
    # these. ``share`` maps text to one shared copy: references, triggers and options repeat
    # across many rows, and a copy each would double the memory a large load takes.
    (
        task_id,
        seq,
        fn_ref,
        args_json,
        kwargs_json,
        trigger_json,
        options_json,
        status,
        next_due,
        run_count,
        failure_count,
        consecutive_failures,
        last_error,
        last_outcome,
        updated_at,
    ) = row
    task: StoredTask = _new(StoredTask)
    _SET_TASK_ID(task, task_id)
    _SET_SEQ(task, seq)
    _SET_FN_REF(task, share(fn_ref, fn_ref))
    _SET_ARGS(task, share(args_json, args_json) if len(args_json) <= _SHORT_TEXT else args_json)
    _SET_KWARGS(task, share(kwargs_json, kwargs_json))
    _SET_TRIGGER(task, share(trigger_json, trigger_json))
    _SET_OPTIONS(task, share(options_json, options_json))
    _SET_STATUS(task, share(status, status))
    _SET_NEXT_DUE(task, next_due)
    _SET_RUN_COUNT(task, run_count)
    _SET_FAILURE_COUNT(task, failure_count)
    _SET_CONSECUTIVE(task, consecutive_failures)
    _SET_LAST_ERROR(task, share(last_error, last_error))
    _SET_LAST_OUTCOME(task, share(last_outcome, last_outcome))
    _SET_UPDATED_AT(task, updated_at)
    return task


def get_task(db: sqlite3.Connection, task_id: str) -> StoredTask | None:
    """Return the row of ``task_id``, or ``None``."""
    row = db.execute(_TASK_BY_ID, (task_id,)).fetchone()
    return None if row is None else task_from_row(row)


def read_tasks(db: sqlite3.Connection, *, include_terminal: bool) -> list[StoredTask]:
    """Return the live tasks (and the terminal ones if asked), in ``seq`` order.

    One statement, so one read snapshot, fetched in chunks.
    """
    return collect_tasks(db.execute(_ALL_TASKS if include_terminal else _LIVE_TASKS))


def read_live_parts(db: sqlite3.Connection, take: Callable[[list[StoredTask]], object]) -> None:
    """Hand the live tasks to ``take`` in ``seq`` order, one fetched chunk at a time (one read snapshot).

    Small parts: a part's rows die once it is taken, and the fewer of them a collection finds
    alive, the fewer the collector moves to its oldest generation, where each such move
    counts towards the next full collection (measured at 1M: 35 full collections with parts
    of 4,096 rows, 28 with 512).
    """
    for part in task_parts(db.execute(_LIVE_TASKS), _PART_ROWS):
        take(part)


class RowCursor(Protocol):
    """An executed cursor (sqlite3's or psycopg's) whose rows are fetched in chunks."""

    def fetchmany(self, size: int = ..., /) -> Sequence[Any]:
        """Return up to ``size`` more rows (none at the end)."""
        ...


def collect_tasks(cursor: RowCursor) -> list[StoredTask]:
    """Build the tasks of an executed cursor's rows (in ``TASK_COLUMNS`` order), sharing text."""
    tasks: list[StoredTask] = []
    for part in task_parts(cursor):
        tasks.extend(part)
    return tasks


def task_parts(cursor: RowCursor, size: int = _FETCH_ROWS) -> Iterator[list[StoredTask]]:
    """The tasks of an executed cursor's rows, ``size`` at a time, sharing text across them."""
    shared: dict[object, object] = {}  # one table per call: nothing outlives the load but the rows
    share = shared.setdefault
    while rows := cursor.fetchmany(size):
        yield [_build_task(row, share) for row in rows]


def read_runs(db: sqlite3.Connection, task_id: str | None, limit: int) -> list[LedgerRow]:
    """Return up to ``limit`` ledger rows, newest first, of ``task_id`` or of every task."""
    check_limit(limit)
    if task_id is None:
        return ledger_rows(db.execute(_RUNS, (limit,)).fetchall())
    return ledger_rows(db.execute(_RUNS_OF_TASK, (task_id, limit)).fetchall())


def check_limit(limit: object) -> None:
    """Refuse a ledger ``limit`` that is not an int >= 0 (``ValueError``)."""
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
        raise ValueError(f"limit must be an int >= 0, got {limit!r}")


(
    _SET_RUN_TASK_ID,
    _SET_TASK_SEQ,
    _SET_RUN,
    _SET_DUE,
    _SET_STARTED,
    _SET_FINISHED,
    _SET_OUTCOME,
    _SET_ERROR,
    _SET_ATTEMPT,
    _SET_REASON,
    _SET_NODE,
    _SET_MANUAL,
    _SET_VALUE_JSON,
    _SET_VALUE_NOTE,
) = slot_setters(LedgerRow)


def ledger_rows(rows: Iterable[Sequence[Any]]) -> list[LedgerRow]:
    """The ledger rows (in ``RUN_COLUMNS`` order) as ``LedgerRow``s (trusted: our own rows).

    The slots are set directly, as for tasks: ``history`` reads up to ``limit`` rows at a
    time, and every row was checked when it was written.
    """
    built: list[LedgerRow] = []
    append = built.append
    for (
        task_id, task_seq, run, due, started, finished, outcome, error,
        attempt, reason, node, manual, value_json, value_note,
    ) in rows:  # fmt: skip
        row: LedgerRow = _new(LedgerRow)
        _SET_RUN_TASK_ID(row, task_id)
        _SET_TASK_SEQ(row, task_seq)
        _SET_RUN(row, run)
        _SET_DUE(row, due)
        _SET_STARTED(row, started)
        _SET_FINISHED(row, finished)
        _SET_OUTCOME(row, outcome)
        _SET_ERROR(row, error)
        _SET_ATTEMPT(row, attempt)
        _SET_REASON(row, reason)
        _SET_NODE(row, node)
        _SET_MANUAL(row, bool(manual))  # SQLite keeps it as 0 or 1
        _SET_VALUE_JSON(row, value_json)
        _SET_VALUE_NOTE(row, value_note)
        append(row)
    return built


def read_high_water(db: sqlite3.Connection) -> int:
    """Return the highest number reserved for minted ids."""
    value: int = db.execute(_HIGH_WATER).fetchone()[0]
    return value
