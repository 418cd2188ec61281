"""The SQLite store's part of ``schedule_after``: the edges a waiting row still waits on.

``task_after`` holds one row per dependency not met yet (``actors/store/sqlite_schema.py``).
``add`` writes a new row's edges (``write``); a ``save`` that ends a row ``completed`` deletes
the edges to it and makes each waiting row left without any due ``delay`` after that commit
(``release``), in the same transaction as that outcome, so a crash can never leave a waiting
row whose last dependency has completed (nor lose one whose other dependency is still live).
A row that fails or is cancelled (by ``save`` or ``cancel``) ends every row below it in the
graph ``cancelled`` with a ``DependencyFailedError`` text naming what each waited for
(``cancel_down``), in the same transaction, as PostgreSQL does; the scheduler's core does the
same in memory, and its updates then find those rows terminal. An edge to a row that is gone
(pruned) is reported by ``waiting`` with no status: the loader cancels its waiter. The edges
of a row that ends go with it (``forget``).

Threads: these functions use the connection they are given, inside the caller's write
transaction (or read snapshot, for ``waiting``), on the caller's thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final

from actors.store.protocol import Dependency, Waiting

__all__ = ["cancel_down", "forget", "release", "settle", "waiting", "write"]

# An edge to a row that has completed already is met: not kept (the writer is serialized, so
# this cannot race with that row's completion).
_INSERT: Final = """
    INSERT OR IGNORE INTO task_after (dependency_seq, waiter_seq, dependency_id, delay)
    SELECT ?1, ?2, ?3, ?4
     WHERE NOT EXISTS (SELECT 1 FROM task WHERE seq = ?1 AND status = 'completed')"""
_CHUNK: Final = 500  # seqs per IN list: well under SQLite's bound on a statement's parameters
_FORGET_WAITER: Final = "DELETE FROM task_after WHERE waiter_seq = ?"
_FORGET_WAITERS: Final = "DELETE FROM task_after WHERE waiter_seq IN ({marks})"
_WAITED_FOR: Final = "SELECT DISTINCT dependency_seq FROM task_after WHERE dependency_seq IN ({marks})"
_DUE_IF_MET: Final = """
    UPDATE task SET next_due = ?2
     WHERE seq = ?1 AND next_due IS NULL AND NOT EXISTS (SELECT 1 FROM task_after WHERE waiter_seq = ?1)"""
# The waiting rows whose only edge left is to the completed row ?1: due delay after now (?2).
# One that has a due time already was released by an update of the same save (the scheduler
# that holds the file releases its waiting tasks itself, by its own clock): that one stands.
_RELEASE: Final = """
    UPDATE task SET next_due = ?2 + (SELECT delay FROM task_after
                                      WHERE dependency_seq = ?1 AND waiter_seq = task.seq),
                    updated_at = ?2
     WHERE seq IN (SELECT waiter_seq FROM task_after WHERE dependency_seq = ?1)
       AND status = 'scheduled' AND next_due IS NULL
       AND EXISTS (SELECT 1 FROM task AS done WHERE done.seq = ?1 AND done.status = 'completed')
       AND NOT EXISTS (SELECT 1 FROM task_after AS other
                        WHERE other.waiter_seq = task.seq AND other.dependency_seq <> ?1)"""
_MET: Final = """
    DELETE FROM task_after
     WHERE dependency_seq = ?1 AND EXISTS (SELECT 1 FROM task WHERE seq = ?1 AND status = 'completed')"""
_DROP_TO: Final = "DELETE FROM task_after WHERE dependency_seq = ?"
_FAILED_WITH_WAITERS: Final = """
    SELECT seq FROM task WHERE seq IN ({marks}) AND status IN ('failed', 'cancelled')
       AND EXISTS (SELECT 1 FROM task_after WHERE dependency_seq = task.seq)"""
# Every row below the ended ones, with the task it waited for that ended (the lowest seq, if
# several: SQLite takes the bare columns from the row min() picks).
_DOWN: Final = """
    WITH RECURSIVE down (seq, cause, cause_id) AS (
        SELECT waiter_seq, dependency_seq, dependency_id FROM task_after WHERE dependency_seq IN ({marks})
      UNION
        SELECT a.waiter_seq, a.dependency_seq, a.dependency_id
          FROM task_after AS a JOIN down ON a.dependency_seq = down.seq)
    SELECT down.seq, w.task_id, min(down.cause), down.cause_id, c.status
      FROM down JOIN task AS w ON w.seq = down.seq AND w.status = 'scheduled'
      LEFT JOIN task AS c ON c.seq = down.cause
     GROUP BY down.seq ORDER BY down.seq"""
_CANCEL: Final = """
    UPDATE task SET status = 'cancelled', next_due = NULL, updated_at = ?1, last_error = ?2
     WHERE seq = ?3 AND status = 'scheduled'"""
_WAITING: Final = """
    SELECT a.waiter_seq, a.dependency_seq, a.dependency_id, a.delay, d.status
      FROM task_after AS a
      JOIN task AS w ON w.seq = a.waiter_seq AND w.status = 'scheduled'
      LEFT JOIN task AS d ON d.seq = a.dependency_seq
     ORDER BY a.waiter_seq, a.dependency_seq"""


def write(db: sqlite3.Connection, waiter: int, after: Sequence[Dependency], now: float) -> None:
    """Keep the edges of the new (or replaced) row ``waiter``: what it waits for now.

    If all of it has completed already, the row is due ``delay`` from ``now``.
    """
    db.execute(_FORGET_WAITER, (waiter,))  # a replace swaps in the new definition's edges
    if after:
        db.executemany(_INSERT, [(d.seq, waiter, d.task_id, float(d.delay)) for d in after])
        db.execute(_DUE_IF_MET, (waiter, now + float(after[0].delay)))


def settle(db: sqlite3.Connection, completed: Sequence[int], ended: Sequence[int], now: float) -> None:
    """A save ended the rows ``ended``, of which ``completed`` completed: release, cancel, forget.

    A save that ends no row waited for costs one indexed probe per statement here, and a save
    of live rows nothing at all (the common case of a recurring task's runs).
    """
    done = set(completed)
    for start in range(0, len(ended), _CHUNK):
        part = ended[start : start + _CHUNK]
        waited = [seq for (seq,) in db.execute(_WAITED_FOR.format(marks=_marks(part)), part)]
        release(db, [seq for seq in waited if seq in done], now)
        cancel_down(db, [seq for seq in waited if seq not in done], now)
        db.execute(_FORGET_WAITERS.format(marks=_marks(part)), part)


def release(db: sqlite3.Connection, completed: Iterable[int], now: float) -> None:
    """The rows ``completed`` have just completed: release the rows that waited for them last."""
    for seq in completed:
        db.execute(_RELEASE, (seq, now))
        db.execute(_MET, (seq,))


def cancel_down(db: sqlite3.Connection, ended: Iterable[int], now: float) -> None:
    """Of the rows ``ended``, those that failed or were cancelled: cancel every row below them."""
    seqs = sorted(set(ended))
    if not seqs:
        return
    marks = ", ".join("?" * len(seqs))
    failed = [seq for (seq,) in db.execute(_FAILED_WITH_WAITERS.format(marks=marks), seqs)]
    if not failed:
        return
    marks = ", ".join("?" * len(failed))
    below = db.execute(_DOWN.format(marks=marks), failed).fetchall()
    cancelled = {seq for seq, _, _, _, _ in below}
    for seq, waiter_id, cause, cause_id, cause_status in below:
        how = "CANCELLED" if cause in cancelled or cause_status is None else cause_status.upper()
        error = (
            f"DependencyFailedError: task {waiter_id!r} was cancelled: task {cause_id!r}, which it "
            f"waited for, ended {how} instead of COMPLETED"
        )
        db.execute(_CANCEL, (now, error, seq))
    forget(db, [*failed, *cancelled])
    db.executemany(_DROP_TO, [(seq,) for seq in failed])


def _marks(seqs: Sequence[int]) -> str:
    return ", ".join("?" * len(seqs))


def forget(db: sqlite3.Connection, ended: Iterable[int]) -> None:
    """The rows ``ended`` are terminal: drop what they waited for (nothing will release them)."""
    db.executemany(_FORGET_WAITER, [(seq,) for seq in ended])


def waiting(db: sqlite3.Connection) -> list[Waiting]:
    """Every edge of a live row not met yet, with its dependency's status (``None``: gone)."""
    return [
        Waiting(
            waiter=waiter,
            dependency=Dependency(seq=seq, task_id=task_id, delay=delay),
            status=status,
        )
        for waiter, seq, task_id, delay, status in db.execute(_WAITING)
    ]
