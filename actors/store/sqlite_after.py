"""The SQLite store's part of ``schedule_after``: the edges a waiting row still waits on.

``task_after`` holds one row per dependency not met yet (``actors/store/sqlite_schema.py``).
``add`` writes a new row's edges (``write``); a ``save`` that ends a row ``completed`` deletes
the edges to it and makes each waiting row left without any due ``delay`` after that commit
(``release``), in the same transaction as that outcome, so a crash can never leave a waiting
row whose last dependency has completed (nor lose one whose other dependency is still live).
A row that ends otherwise keeps the edges to it: the scheduler that holds the store (the only
writer) cancels the waiting rows itself, as in memory, and if it dies first, the next one to
load them finds an edge to a row that is not live and cancels them then (``waiting`` reports
its status). The edges of a row that ends go with it (``forget``).

Threads: these functions use the connection they are given, inside the caller's write
transaction (or read snapshot, for ``waiting``), on the caller's thread.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Final

from actors.store.protocol import Dependency, Waiting

__all__ = ["forget", "release", "waiting", "write"]

# An edge to a row that has completed already is met: not kept (the writer is serialized, so
# this cannot race with that row's completion).
_INSERT: Final = """
    INSERT OR IGNORE INTO task_after (dependency_seq, waiter_seq, dependency_id, delay)
    SELECT ?1, ?2, ?3, ?4
     WHERE NOT EXISTS (SELECT 1 FROM task WHERE seq = ?1 AND status = 'completed')"""
_FORGET_WAITER: Final = "DELETE FROM task_after WHERE waiter_seq = ?"
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
_WAITING: Final = """
    SELECT a.waiter_seq, a.dependency_seq, a.dependency_id, a.delay, d.status
      FROM task_after AS a
      JOIN task AS w ON w.seq = a.waiter_seq AND w.status = 'scheduled'
      LEFT JOIN task AS d ON d.seq = a.dependency_seq
     ORDER BY a.waiter_seq, a.dependency_seq"""


def write(db: sqlite3.Connection, waiter: int, after: Sequence[Dependency]) -> None:
    """Keep the edges of the new (or replaced) row ``waiter``: what it waits for now."""
    db.execute(_FORGET_WAITER, (waiter,))  # a replace swaps in the new definition's edges
    if after:
        db.executemany(_INSERT, [(d.seq, waiter, d.task_id, float(d.delay)) for d in after])


def release(db: sqlite3.Connection, completed: Iterable[int], now: float) -> None:
    """The rows ``completed`` have just completed: release the rows that waited for them last."""
    for seq in completed:
        db.execute(_RELEASE, (seq, now))
        db.execute(_MET, (seq,))


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
