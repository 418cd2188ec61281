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
  time on the grid; that fenced outcome clears ``grid_due``.
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
# Refused (the overlap policy "skip": nothing queued) while a run is claimed or in progress
# under a lease that has not ended, or an extra run already waits.
RUN_NOW: Final = f"""
    WITH changed AS (
        UPDATE task SET grid_due = next_due, next_due = {NOW}, change = {XID}, updated_at = {NOW}
         WHERE task_id = %(task_id)s AND status = 'scheduled' AND grid_due IS NULL
           AND next_due IS NOT NULL AND (owner IS NULL OR lease_until < {NOW})
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


def run_now(db: Connection, task_id: str, channel: str) -> bool:
    """Make one extra run of a live task claimable now; whether it did."""
    return _changed(db, RUN_NOW, {"task_id": task_id, "channel": channel})


def set_trigger(db: Connection, task_id: str, trigger_json: str, next_due: float, channel: str) -> bool:
    """Give a live task a new trigger and next due time; whether it did."""
    params = {"task_id": task_id, "trigger_json": trigger_json, "next_due": next_due, "channel": channel}
    return _changed(db, RESCHEDULE, params)


def paused_ids(db: Connection, task_id: str | None = None) -> frozenset[str]:
    """The ids of the live paused tasks (of ``task_id`` alone, if given)."""
    rows = db.execute(_PAUSED if task_id is None else _PAUSED_ONE, () if task_id is None else (task_id,))
    return frozenset(row[0] for row in rows)
