"""The PostgreSQL store's part of ``schedule_after``: edges, released or cancelled as outcomes commit.

``task_after`` holds one row per dependency a waiting row still waits for
(``actors/store/postgres_schema.py``, v3). A waiting row has no ``next_due``, so the claim
(``postgres_sql.ACQUIRES``: ``next_due <= now()``) never sees it and ``next_wakeup`` never
wakes for it: the claim of every other row is exactly what it was, no join, no extra test.

Everything else happens in the transaction that commits a dependency's outcome, by SQL:

- ``write`` (in ``add``'s transaction): the dependencies' rows are locked ``FOR SHARE`` (an
  outcome being committed for one is waited for, and one committed after cannot miss the new
  edge); an edge is kept for each live one; one that completed counts as done; one that
  failed, was cancelled or is gone cancels the new row at once. With no edge left it is due
  ``delay`` from now.
- ``settle`` (in ``save``/``save_outcomes``'s transaction, after the updates; and in
  ``cancel``'s): for each row that has just *completed*, its waiters are locked (in ``seq``
  order, so two such transactions never deadlock), its edges deleted, and each waiter left
  with none is due ``delay`` after ``now()``; for each row that has just *failed or been
  cancelled*, every row below it in the graph (a recursive walk of the edges) is ended
  ``cancelled`` with a ``DependencyFailedError`` text naming the task it waited for. Locking
  the waiters before reading their remaining edges is what makes two dependencies completing
  at once on two nodes release their common waiter exactly once: the second transaction waits
  for the first's commit and then sees its deleted edge (READ COMMITTED: each statement sees
  what committed before it started).

Every release and cancel ``NOTIFY``s the store's channel, so nodes wake for the released row
at once (polling remains the guarantee). Threads: the caller's, on its connection and inside
its transaction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Final

from actors.store.postgres_connections import Connection
from actors.store.postgres_sql import NOW, XID
from actors.store.protocol import Dependency, Waiting

__all__ = ["settle", "settle_cancel", "waiting", "write"]

_LOCK_DEPENDENCIES: Final = """
    SELECT seq, status FROM task WHERE seq = ANY(%s::bigint[]) ORDER BY seq FOR SHARE"""
_FORGET_WAITER: Final = "DELETE FROM task_after WHERE waiter_seq = %s"
_INSERT: Final = """
    INSERT INTO task_after (dependency_seq, waiter_seq, dependency_id, delay)
    SELECT * FROM unnest(%(dependency)s::bigint[], %(waiter)s::bigint[], %(id)s::text[], %(delay)s::float8[])
    ON CONFLICT DO NOTHING"""
_DUE_NOW: Final = f"""
    UPDATE task SET next_due = {NOW} + %(delay)s, updated_at = {NOW}, change = {XID}
     WHERE seq = %(seq)s AND status = 'scheduled'"""
# Which of these rows just ended (their update applied, or they were terminal already) and
# have waiters: the only ones settle has anything to do for.
_ENDED_WITH_WAITERS: Final = """
    SELECT seq, status FROM task
     WHERE seq = ANY(%s::bigint[]) AND status <> 'scheduled'
       AND EXISTS (SELECT 1 FROM task_after WHERE dependency_seq = task.seq)
     ORDER BY seq"""
_LOCK_WAITERS: Final = """
    SELECT seq FROM task
     WHERE seq IN (SELECT waiter_seq FROM task_after WHERE dependency_seq = ANY(%s::bigint[]))
     ORDER BY seq FOR UPDATE"""
# Statement snapshot: the edges deleted by this very statement still show in its NOT EXISTS,
# hence the test against the completed rows; other transactions' deletes show (committed
# before this statement, which ran after the waiters were locked).
_RELEASE: Final = f"""
    WITH met AS (
        DELETE FROM task_after WHERE dependency_seq = ANY(%(done)s::bigint[])
        RETURNING waiter_seq, delay),
    released AS (
        UPDATE task SET next_due = {NOW} + met.delay, updated_at = {NOW}, change = {XID}
          FROM (SELECT waiter_seq, max(delay) AS delay FROM met GROUP BY waiter_seq) AS met
         WHERE task.seq = met.waiter_seq AND task.status = 'scheduled' AND task.next_due IS NULL
           AND NOT EXISTS (SELECT 1 FROM task_after AS other
                            WHERE other.waiter_seq = task.seq
                              AND other.dependency_seq <> ALL(%(done)s::bigint[]))
        RETURNING task.task_id)
    SELECT pg_notify(%(channel)s, task_id) FROM released"""
# Every row below the ended ones, each with the task it waited for that ended (the lowest
# seq, should it wait for several): deeper rows are cancelled by the row above them.
_DOWN: Final = """
    WITH RECURSIVE down (seq, cause, cause_id) AS (
        SELECT waiter_seq, dependency_seq, dependency_id FROM task_after
         WHERE dependency_seq = ANY(%s::bigint[])
      UNION
        SELECT a.waiter_seq, a.dependency_seq, a.dependency_id
          FROM task_after AS a JOIN down ON a.dependency_seq = down.seq)
    SELECT DISTINCT ON (seq) seq, cause, cause_id FROM down ORDER BY seq, cause"""
_LOCK_ROWS: Final = "SELECT seq FROM task WHERE seq = ANY(%s::bigint[]) ORDER BY seq FOR UPDATE"
# The text is the one the core gives a DependencyFailedError (actors/core/timetable.py), with
# %L quoting ids as Python's repr does a plain one. A row waited for that is gone (pruned)
# counts as cancelled, named by the id its edge kept.
_CANCEL_DOWN: Final = f"""
    WITH cancelled AS (
        UPDATE task SET status = 'cancelled', next_due = NULL, updated_at = {NOW}, change = {XID},
                        last_error = format(
                            'DependencyFailedError: task %%L was cancelled: task %%L, which it waited '
                            'for, ended %%s instead of COMPLETED',
                            task.task_id, down.cause_id,
                            CASE WHEN down.cause = ANY(%(seq)s::bigint[]) OR cause.status IS NULL
                                 THEN 'CANCELLED' ELSE upper(cause.status) END)
          FROM unnest(%(seq)s::bigint[], %(cause)s::bigint[], %(cause_id)s::text[])
               AS down (seq, cause, cause_id)
          LEFT JOIN task AS cause ON cause.seq = down.cause
         WHERE task.seq = down.seq AND task.status = 'scheduled'
        RETURNING task.task_id)
    SELECT pg_notify(%(channel)s, task_id) FROM cancelled"""
_FORGET: Final = """
    DELETE FROM task_after
     WHERE dependency_seq = ANY(%(seq)s::bigint[]) OR waiter_seq = ANY(%(seq)s::bigint[])"""
_CANCELLED_ID: Final = "SELECT seq FROM task WHERE task_id = %s AND status = 'cancelled'"
_WAITING: Final = """
    SELECT a.waiter_seq, a.dependency_seq, a.dependency_id, a.delay, d.status
      FROM task_after AS a
      JOIN task AS w ON w.seq = a.waiter_seq AND w.status = 'scheduled'
      LEFT JOIN task AS d ON d.seq = a.dependency_seq
     ORDER BY a.waiter_seq, a.dependency_seq"""


def write(db: Connection, waiter: int, after: Sequence[Dependency], channel: str) -> None:
    """Keep the edges of the new (or replaced) row ``waiter`` (module docstring)."""
    db.execute(_FORGET_WAITER, (waiter,))
    if not after:
        return
    status: dict[int, str] = dict(db.execute(_LOCK_DEPENDENCIES, ([d.seq for d in after],)).fetchall())
    live = [d for d in after if status.get(d.seq) == "scheduled"]
    if live:
        db.execute(
            _INSERT,
            {
                "dependency": [d.seq for d in live],
                "waiter": [waiter] * len(live),
                "id": [d.task_id for d in live],
                "delay": [float(d.delay) for d in live],
            },
        )
    blocked = [d for d in after if status.get(d.seq) not in ("scheduled", "completed")]
    if blocked:  # one that failed, was cancelled or is gone: the new row never runs
        _cancel_down(db, [(waiter, blocked[0].seq, blocked[0].task_id)], channel)
    elif not live:  # all it waits for has completed already
        db.execute(_DUE_NOW, {"delay": float(after[0].delay), "seq": waiter})


def settle(db: Connection, ended: Iterable[int], channel: str) -> None:
    """The rows ``ended`` may have just ended: release or cancel their waiters (module docstring)."""
    settle_found(db, ended_with_waiters(db, ended)(), channel)


def ended_with_waiters(db: Connection, ended: Iterable[int]) -> Callable[[], list[tuple[int, str]]]:
    """Send the look for which rows of ``ended`` ended and have waiters; return what reads its answer.

    In pipeline mode the answer is read later, so the look shares a round trip with what was
    sent before it (a save).
    """
    candidates = sorted(set(ended))
    if not candidates:
        return list
    cursor = db.execute(_ENDED_WITH_WAITERS, (candidates,))
    return cursor.fetchall


def settle_found(db: Connection, rows: Sequence[tuple[int, str]], channel: str) -> None:
    """Release or cancel the waiters of ``rows`` (``seq, status``: ended rows with waiters)."""
    if not rows:
        return
    done = [seq for seq, status in rows if status == "completed"]
    failed = [seq for seq, status in rows if status != "completed"]
    if done:
        db.execute(_LOCK_WAITERS, (done,))
        db.execute(_RELEASE, {"done": done, "channel": channel})
    if failed:
        below: list[tuple[int, int, str]] = db.execute(_DOWN, (failed,)).fetchall()
        if below:
            _cancel_down(db, below, channel)
        db.execute(_FORGET, {"seq": failed + [seq for seq, _, _ in below]})


def settle_cancel(db: Connection, task_id: str, channel: str) -> None:
    """``task_id`` has just been cancelled: cancel what waits for it, down the graph."""
    row = db.execute(_CANCELLED_ID, (task_id,)).fetchone()
    if row is not None:
        settle(db, [row[0]], channel)


def _cancel_down(db: Connection, below: list[tuple[int, int, str]], channel: str) -> None:
    """End the rows ``below`` (seq, the seq and id of the task each waited for) ``cancelled``."""
    db.execute(_LOCK_ROWS, (sorted(seq for seq, _, _ in below),))
    params = {
        "seq": [seq for seq, _, _ in below],
        "cause": [cause for _, cause, _ in below],
        "cause_id": [cause_id for _, _, cause_id in below],
        "channel": channel,
    }
    db.execute(_CANCEL_DOWN, params)


def waiting(db: Connection) -> list[Waiting]:
    """Every edge of a live row not met yet, with its dependency's status (``None``: gone)."""
    return [
        Waiting(waiter=waiter, dependency=Dependency(seq=seq, task_id=task_id, delay=delay), status=status)
        for waiter, seq, task_id, delay, status in db.execute(_WAITING)
    ]
