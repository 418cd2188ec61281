"""Operating a live task on the PostgreSQL store: pause, resume, run now, reschedule (issue 24).

Each is one statement, committed when ``PostgresStore`` returns, whichever node calls it: the
row is the task (no node holds a durable task of a shared store but while it runs). What the
columns mean (schema v3, ``postgres_schema``):

- ``paused``: the claim passes the row over (``FREE_ROW``), so no node starts a scheduled run
  of it; a run claimed but not started is refused at its start (``START``); a run in progress
  finishes, and its outcome leaves the flag as it is.
- ``grid_due``: ``run_now`` moves the row's ``next_due`` to now and keeps the slot it had
  here, so the claim takes the extra run at once, even of a paused row. The claim that takes
  it records its fence (``manual_fence``) and hands the slot back in the lease
  (``Lease.grid_due``); the node runs it as the core's ``run_now`` and writes the next due
  time on the grid; that fenced outcome clears ``grid_due``. With a run in flight, the task's
  overlap policy (which the caller reads from the row) decides: refused (``"skip"``), or the
  extra run waits for that run's end (``"queue"``; ``"replace"`` also asks it to make way,
  ``interrupt_fence = -fence``, seen by its owner's renewal), as ``RUN_NOW`` says.
- ``reschedule`` writes the new trigger and its first due time (computed by the caller, on
  the database's clock), as a ``replace`` does: a run in flight keeps going, and its outcome
  keeps the new due time (``replaced_fence``).

Each statement notifies the store's channel, so every node's claim looks again at once.
The functions run on the connection they are given, on the caller's thread.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg.rows import TupleRow

from actors.store.postgres_sql import NOW, XID

__all__ = ["pause", "paused_ids", "resume", "run_now", "set_trigger"]

Connection = psycopg.Connection[TupleRow]

_NOTIFY: Final = "SELECT pg_notify(%(channel)s, task_id) FROM changed"

PAUSE: Final = f"""
    WITH changed AS (
        UPDATE task SET paused = true
         WHERE task_id = %(task_id)s AND status = 'scheduled' AND NOT paused
        RETURNING task_id)
    {_NOTIFY}"""
# A fixed-delay task (%(delay)s given) is due delay after the resume; every other keeps its
# due time (the catch-up policy "latest": one late run if within misfire_grace).
RESUME: Final = f"""
    WITH changed AS (
        UPDATE task SET paused = false,
                        next_due = CASE WHEN %(delay)s::float8 IS NOT NULL AND grid_due IS NULL
                                        THEN {NOW} + %(delay)s::float8 ELSE next_due END,
                        grid_due = CASE WHEN %(delay)s::float8 IS NOT NULL AND grid_due IS NOT NULL
                                        THEN {NOW} + %(delay)s::float8 ELSE grid_due END,
                        change = CASE WHEN %(delay)s::float8 IS NOT NULL THEN {XID} ELSE change END,
                        updated_at = {NOW}
         WHERE task_id = %(task_id)s AND status = 'scheduled' AND paused
        RETURNING task_id)
    {_NOTIFY}"""
# A row held by no live lease: its next_due becomes now and its slot is kept in grid_due
# (refused while an extra run waits already). A row whose run is claimed or in progress under
# a lease that has not ended: refused (the overlap policy "skip") unless %(after_run)s is given
# ("queue", "replace"): then the extra run waits for that run's end. The row is marked as a
# replace is (replaced_fence: the outcome of the run in flight keeps this next_due, now, so the
# extra run is claimable as soon as that outcome lands), with grid_due the slot it leaves: the
# slot after the run in flight (%(after_run)s), the new trigger's first (a reschedule during
# the run: next_due), or the slot a run_now run in flight left already (that run's fence is
# taken off manual_fence, so its outcome keeps grid_due). At most one waits: refused while an
# extra run waits already (grid_due set and not the run in flight's), and while a run_now run
# is claimed but not started (its start would be refused on a paused row). With %(replace)s
# the run in flight is asked to make way: interrupt_fence = -fence, which its owner sees when
# it renews (a cancel's interrupt is +fence).
RUN_NOW: Final = f"""
    WITH changed AS (
        UPDATE task SET
            grid_due = CASE WHEN owner IS NULL OR lease_until < {NOW} THEN next_due
                            WHEN replaced_fence = fence THEN next_due
                            WHEN grid_due IS NOT NULL THEN grid_due
                            ELSE %(after_run)s::float8 END,
            next_due = {NOW},
            replaced_fence = CASE WHEN owner IS NULL OR lease_until < {NOW} THEN replaced_fence
                                  ELSE fence END,
            manual_fence = CASE WHEN owner IS NOT NULL AND lease_until >= {NOW} AND manual_fence = fence
                                THEN NULL ELSE manual_fence END,
            interrupt_fence = CASE WHEN owner IS NOT NULL AND lease_until >= {NOW} AND %(replace)s
                                   THEN -fence ELSE interrupt_fence END,
            change = {XID}, updated_at = {NOW}
         WHERE task_id = %(task_id)s AND status = 'scheduled' AND next_due IS NOT NULL
           AND CASE WHEN owner IS NULL OR lease_until < {NOW} THEN grid_due IS NULL
                    ELSE %(after_run)s::float8 IS NOT NULL
                         AND (grid_due IS NULL OR manual_fence = fence)
                         AND (grid_due IS NULL OR started_fence = fence)
                         AND sealed_fence IS DISTINCT FROM fence END
        RETURNING task_id)
    {_NOTIFY}"""
# Refused while a one-time run is sealed in flight (it is ending, as in memory).
RESCHEDULE: Final = f"""
    WITH changed AS (
        UPDATE task SET trigger_json = %(trigger_json)s, next_due = %(next_due)s, grid_due = NULL,
                        change = {XID}, updated_at = {NOW},
                        replaced_fence = CASE WHEN owner IS NOT NULL THEN fence ELSE replaced_fence END
         WHERE task_id = %(task_id)s AND status = 'scheduled'
           AND NOT coalesce(owner IS NOT NULL AND sealed_fence = fence AND lease_until >= {NOW}, false)
        RETURNING task_id)
    {_NOTIFY}"""
_PAUSED: Final = "SELECT task_id FROM task WHERE status = 'scheduled' AND paused"
_PAUSED_ONE: Final = "SELECT task_id FROM task WHERE status = 'scheduled' AND paused AND task_id = %s"


def _changed(db: Connection, statement: str, params: dict[str, object]) -> bool:
    return db.execute(statement, params).fetchone() is not None


def pause(db: Connection, task_id: str, channel: str) -> bool:
    """Mark a live task paused; whether it was live and not paused."""
    return _changed(db, PAUSE, {"task_id": task_id, "channel": channel})


def resume(db: Connection, task_id: str, delay: float | None, channel: str) -> bool:
    """Clear a live task's pause (a fixed-delay one due ``delay`` from now); whether it was paused."""
    return _changed(db, RESUME, {"task_id": task_id, "delay": delay, "channel": channel})


def run_now(
    db: Connection, task_id: str, channel: str, *, after_run: float | None = None, replace: bool = False
) -> bool:
    """Make one extra run of a live task claimable now, or after the run in flight; whether it did.

    ``after_run``: the slot the task waits for after the run in flight (UTC epoch seconds): given,
    a run in flight lets the extra run wait for its end (else it refuses); ``replace``: and asks
    that run to make way.
    """
    params: dict[str, object] = {"task_id": task_id, "channel": channel}
    params.update(after_run=after_run, replace=replace)
    return _changed(db, RUN_NOW, params)


def set_trigger(db: Connection, task_id: str, trigger_json: str, next_due: float, channel: str) -> bool:
    """Give a live task a new trigger and next due time; whether it did."""
    params = {"task_id": task_id, "trigger_json": trigger_json, "next_due": next_due, "channel": channel}
    return _changed(db, RESCHEDULE, params)


def paused_ids(db: Connection, task_id: str | None = None) -> frozenset[str]:
    """The ids of the live paused tasks (of ``task_id`` alone, if given)."""
    rows = db.execute(_PAUSED if task_id is None else _PAUSED_ONE, () if task_id is None else (task_id,))
    return frozenset(row[0] for row in rows)
