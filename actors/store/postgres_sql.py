"""The PostgreSQL store's statements, and its reads turned into plain data.

Every statement is a constant with parameters: connections resolve unqualified names in the
store's schema (``search_path``), so no name is ever spliced in. Times are UTC epoch seconds;
``NOW`` is the database's clock, the one that decides what is due and when a lease ends.
``now()`` is the start of the transaction, so within one statement it is one instant.

Writes that add, replace, cancel, reschedule or release a task ``NOTIFY`` the store's
channel with the task id, in the same statement (so in the same transaction): PostgreSQL
delivers the notification at commit, and never for a transaction that rolled back.

The read functions run on the connection they are given, on the caller's thread.
"""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg.rows import TupleRow

from actors.store.postgres_schema import FREE_ROW
from actors.store.protocol import LedgerRow, StoredTask

# The row-building helpers are backend-neutral (a tuple in TASK_COLUMNS order in, a
# StoredTask out, repeated text shared); they live with the SQLite store, which came first.
from actors.store.sqlite_rows import (
    RUN_COLUMNS,
    TASK_COLUMNS,
    check_limit,
    collect_tasks,
    ledger_rows,
    task_from_row,
)

__all__ = ["RUN_COLUMNS", "TASK_COLUMNS", "collect_tasks", "task_from_row"]

Connection = psycopg.Connection[TupleRow]

NOW: Final = "extract(epoch FROM now())::float8"
XID: Final = "pg_current_xact_id()::text::bigint"  # the writing transaction's id: the change cursor
_RETURNED: Final = ", ".join(f"task.{column}" for column in TASK_COLUMNS.split(", "))

# -- Store ---------------------------------------------------------------------------------------

# Each returns the row (TASK_COLUMNS) and, last, the void of pg_notify.
INSERT_TASK: Final = f"""
    WITH inserted AS (
        INSERT INTO task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json,
                          status, next_due, updated_at)
        VALUES (%(task_id)s, %(fn_ref)s, %(args_json)s, %(kwargs_json)s, %(trigger_json)s,
                %(options_json)s, 'scheduled', %(next_due)s, {NOW})
        ON CONFLICT (task_id) DO NOTHING
        RETURNING {TASK_COLUMNS})
    SELECT {TASK_COLUMNS}, pg_notify(%(channel)s, task_id) FROM inserted"""
REPLACE_TASK: Final = f"""
    WITH replaced AS (
        UPDATE task SET fn_ref = %(fn_ref)s, args_json = %(args_json)s, kwargs_json = %(kwargs_json)s,
                        trigger_json = %(trigger_json)s, options_json = %(options_json)s,
                        next_due = %(next_due)s, updated_at = {NOW}, change = {XID},
                        replaced_fence = CASE WHEN owner IS NOT NULL THEN fence ELSE replaced_fence END
         WHERE seq = %(seq)s
        RETURNING {TASK_COLUMNS})
    SELECT {TASK_COLUMNS}, pg_notify(%(channel)s, task_id) FROM replaced"""
# add_many: the rows come by COPY (the counters at their defaults); the
# rows a transaction wrote are those whose change is its id (task_change is indexed).
COPY_TASKS: Final = """
    COPY task (task_id, fn_ref, args_json, kwargs_json, trigger_json, options_json, status,
               next_due, updated_at)
    FROM STDIN"""
ADDED_RANGE: Final = f"SELECT min(seq), max(seq), count(*) FROM task WHERE change = {XID}"
ADDED_SEQS: Final = f"SELECT task_id, seq FROM task WHERE change = {XID}"
NOTIFY: Final = "SELECT pg_notify(%s, %s)"
SAVED_HINT: Final = ""  # the payload of a save's hint (SAVE_ONE_ROUND); others carry a task id
LOCK_TASK: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE task_id = %s FOR UPDATE"
# A replace of a row whose run is in flight (owned) records that claim's fence: the owner
# runs the definition it claimed, and its outcome lands on the counters and the ledger, but
# the new definition's status and next due time stand (see UPDATE_TASKS).
DELETE_TASK: Final = "DELETE FROM task WHERE seq = %s"
# A cancel loses to a sealed run in flight (a one-time task's run that has started and whose
# lease holds): as in memory, that run decides how the task ends; unless it interrupts, which
# also asks the run in flight to stop (its owner sees interrupt_fence = fence when it renews).
CANCEL_TASK: Final = f"""
    WITH cancelled AS (
        UPDATE task SET status = 'cancelled', next_due = NULL, updated_at = {NOW}, change = {XID},
                        interrupt_fence = CASE WHEN %(interrupt)s AND owner IS NOT NULL THEN fence
                                               ELSE interrupt_fence END
         WHERE task_id = %(task_id)s AND status = 'scheduled'
           AND (%(interrupt)s OR NOT (owner IS NOT NULL AND sealed_fence IS NOT NULL
                                      AND sealed_fence = fence AND lease_until >= {NOW}))
        RETURNING task_id)
    SELECT pg_notify(%(channel)s, task_id) FROM cancelled"""
# One statement for a batch of updates of distinct rows. In SET, task.status, task.owner and
# task.lease_until are the row's values before this update: a terminal row keeps its status
# (no update undoes a committed cancel) and takes the counters. A fenced update applies only
# to the row its lease still holds, and ends the lease; if the task was replaced while that
# claim was in flight, the replaced definition's status and next due time stand. A fenced
# update with hold (an overlap="allow" task whose other runs go on under the same lease) is
# applied the same way but keeps the lease. Returns the seq of each applied one.
_UPDATE_TASKS: Final = f"""
    WITH given AS (
        SELECT * FROM unnest(%(task_id)s::text[], %(seq)s::bigint[], %(status)s::text[],
                             %(next_due)s::float8[], %(run_count)s::bigint[], %(failure_count)s::bigint[],
                             %(consecutive_failures)s::bigint[], %(last_error)s::text[],
                             %(last_outcome)s::text[], %(fence)s::bigint[], %(hold)s::boolean[])
            AS given (task_id, seq, status, next_due, run_count, failure_count, consecutive_failures,
                      last_error, last_outcome, fence, hold)),
    applied AS (
        UPDATE task SET status = CASE WHEN task.status <> 'scheduled' THEN task.status
                                      WHEN task.replaced_fence = given.fence THEN task.status
                                      ELSE given.status END,
                        next_due = CASE WHEN task.status <> 'scheduled' THEN NULL
                                        WHEN task.replaced_fence = given.fence THEN task.next_due
                                        ELSE given.next_due END,
                        run_count = given.run_count, failure_count = given.failure_count,
                        consecutive_failures = given.consecutive_failures,
                        last_error = given.last_error, last_outcome = given.last_outcome,
                        updated_at = {NOW}, change = {XID},
                        grid_due = CASE WHEN task.manual_fence = given.fence THEN NULL ELSE task.grid_due END,
                        owner = CASE WHEN given.fence IS NULL OR given.hold THEN task.owner END,
                        lease_until = CASE WHEN given.fence IS NULL OR given.hold THEN task.lease_until END
          FROM given
         WHERE task.seq = given.seq AND task.task_id = given.task_id
           AND (given.fence IS NULL OR (task.owner = %(node)s AND task.fence = given.fence))
        RETURNING task.seq, task.task_id, task.status)"""
UPDATE_TASKS: Final = (
    _UPDATE_TASKS
    + """
    SELECT seq, pg_notify(%(channel)s, task_id) FROM applied"""
)
# One statement for the whole batch, in the given order (identity ids follow it), so the
# newest-first ledger lists a batch's rows last first, as the SQLite store does.
INSERT_RUNS: Final = """
    INSERT INTO run (task_id, task_seq, run, due, started, finished, outcome, error,
                     attempt, reason, node, manual, value_json, value_note)
    SELECT task_id, task_seq, run, due, started, finished, outcome, error,
           attempt, reason, node, manual, value_json, value_note
      FROM unnest(%(task_id)s::text[], %(task_seq)s::bigint[], %(run)s::bigint[],
                  %(due)s::float8[], %(started)s::float8[], %(finished)s::float8[],
                  %(outcome)s::text[], %(error)s::text[], %(attempt)s::bigint[],
                  %(reason)s::text[], %(run_node)s::text[], %(manual)s::boolean[],
                  %(value_json)s::text[], %(value_note)s::text[])
           WITH ORDINALITY AS given (task_id, task_seq, run, due, started, finished, outcome, error,
                                     attempt, reason, node, manual, value_json, value_note, n)
     ORDER BY n
    ON CONFLICT (task_seq, run) DO NOTHING"""
# A whole save in one statement (one round trip), for a batch that updates each row at most
# once: the updates as UPDATE_TASKS, then the ledger rows as INSERT_RUNS but for the rows whose
# fenced update was refused while the row still exists (see postgres_writes.save). Every CTE
# sees the snapshot the statement started with, so "still exists" is judged before the update,
# which deletes nothing. Returns the new ledger rows, the notifications sent, the refused
# rows' seqs, and the updates that left their task terminal. One hint per save, not one per
# row (each notification wakes every node of the fleet), with the empty payload SAVED_HINT
# (a task id is never empty): a listener told so (``listen(saved=...)``) knows it is a save,
# which adds no reference to import and asks no run to stop.
SAVE_ONE_ROUND: Final = (
    _UPDATE_TASKS
    + """,
    notified AS (SELECT pg_notify(%(channel)s, '') FROM applied HAVING count(*) > 0),
    refused AS (
        SELECT given.seq FROM given
         WHERE given.fence IS NOT NULL
           AND NOT EXISTS (SELECT 1 FROM applied WHERE applied.seq = given.seq)
           AND EXISTS (SELECT 1 FROM task WHERE task.seq = given.seq)),
    inserted AS (
        INSERT INTO run (task_id, task_seq, run, due, started, finished, outcome, error,
                         attempt, reason, node, manual, value_json, value_note)
        SELECT task_id, task_seq, run, due, started, finished, outcome, error,
               attempt, reason, node, manual, value_json, value_note
          FROM unnest(%(run_task_id)s::text[], %(run_task_seq)s::bigint[], %(run_run)s::bigint[],
                      %(run_due)s::float8[], %(run_started)s::float8[], %(run_finished)s::float8[],
                      %(run_outcome)s::text[], %(run_error)s::text[], %(run_attempt)s::bigint[],
                      %(run_reason)s::text[], %(run_node)s::text[], %(run_manual)s::boolean[],
                      %(run_value_json)s::text[], %(run_value_note)s::text[])
               WITH ORDINALITY AS ran (task_id, task_seq, run, due, started, finished, outcome, error,
                                       attempt, reason, node, manual, value_json, value_note, n)
         WHERE ran.task_seq NOT IN (SELECT seq FROM refused)
         ORDER BY n
        ON CONFLICT (task_seq, run) DO NOTHING
        RETURNING 1)
    SELECT (SELECT count(*) FROM inserted), (SELECT count(*) FROM notified),
           ARRAY(SELECT seq FROM refused), (SELECT count(*) FROM applied WHERE status <> 'scheduled')"""
)
RESERVE_MINTED: Final = """
    UPDATE store_meta SET minted_high_water = minted_high_water + %s WHERE id = 1
    RETURNING minted_high_water"""

# Pruning runs in a transaction of its own, by one node at a time (a try-lock), and never
# waits for a row lock (SKIP LOCKED), so it can never deadlock with a caller's write.
TRY_LOCK: Final = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))"
# Ledger ids come from a sequence with gaps (rollbacks, conflicts), so the cut is the id of
# the (keep + 1)-th newest row, not max - keep.
PRUNE_RUNS: Final = """
    DELETE FROM run WHERE id <= (SELECT id FROM run ORDER BY id DESC OFFSET %(keep)s LIMIT 1)"""
# A terminal row still leased (cancelled while its run was in flight) is kept until the run's
# outcome lands or the lease ends, so a prune never fences out an outcome.
PRUNE_TASKS: Final = f"""
    DELETE FROM task WHERE seq IN (
        SELECT seq FROM task
         WHERE status <> 'scheduled' AND (owner IS NULL OR lease_until < {NOW})
           AND (updated_at, seq) <= (SELECT updated_at, seq FROM task WHERE status <> 'scheduled'
                                      ORDER BY updated_at DESC, seq DESC OFFSET %(keep)s LIMIT 1)
           FOR UPDATE SKIP LOCKED)"""

_TASK_BY_ID: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE task_id = %s"
_LIVE_TASKS: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE status = 'scheduled' ORDER BY seq"
_ALL_TASKS: Final = f"SELECT {TASK_COLUMNS} FROM task ORDER BY seq"
_RUNS: Final = f"SELECT {RUN_COLUMNS} FROM run ORDER BY id DESC LIMIT %s"
_RUNS_OF_TASK: Final = f"SELECT {RUN_COLUMNS} FROM run WHERE task_id = %s ORDER BY id DESC LIMIT %s"
_HIGH_WATER: Final = "SELECT minted_high_water FROM store_meta WHERE id = 1"

# -- SharedStore ---------------------------------------------------------------------------------

DB_NOW: Final = f"SELECT {NOW}"

# The claim, one statement. Free rows and rows whose lease has ended are picked from their
# own indexes (task_free, task_owned), each in due order and each FOR UPDATE SKIP LOCKED: the
# scan passes over rows another claim is holding instead of queueing behind them, and
# re-checks each row it locks against its newest version, so a row another node claimed
# meanwhile is dropped. Of the two sets (at most 2 * limit rows, and the expired set is
# nearly always empty), the first limit rows in (next_due, seq) order are claimed; the rest
# are unlocked when the statement ends. The CTEs are evaluated once (MATERIALIZED), so the
# LIMIT bounds the rows claimed even if the planner would re-scan a subquery.
# With %(adopt)s (the node says which rows it holds, %(held)s), a row this node owns counts
# as expired when it is not one of those, whatever its lease says (an orphan: claimed by a
# call whose answer was lost, or given back by a release that failed), and never when it is
# (its run is on this node, whose keeper renews it: claiming it again would run it twice).
# A paused row is claimed only for its run_now run (grid_due set; the claim's fence is then
# its manual_fence, and grid_due comes back last: the lease's run is the manual one).
# The poison-pill count (lost_runs): a claim that retakes a row whose run had started under
# the lease that ended (started_fence = fence: its node died or stalled with it) counts one
# more loss; a claim of a free row (the last run's outcome landed, or it was given back)
# starts again from none. The node fails the run once the count reaches max_lost_runs.
# Such a claim also counts the row's runs from the highest number its ledger holds: the
# lost lease's overlap="allow" runs may have ended out of order (run 2 saved while run 1 was
# lost), and the next run is numbered run_count + 1, which must not be a number already
# given (its ledger row would be refused as a repeat). The lost runs below it count as runs.
_ACQUIRE: Final = """
    WITH free AS MATERIALIZED (
        SELECT seq, next_due FROM task
         WHERE {free} AND next_due <= {now}{only}
         ORDER BY next_due, seq
         LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED),
    expired AS MATERIALIZED (
        SELECT seq, next_due FROM task
         WHERE owner IS NOT NULL AND status = 'scheduled' AND next_due <= {now}{only}
           AND (NOT paused OR grid_due IS NOT NULL)
           AND CASE WHEN %(adopt)s AND owner = %(node)s THEN seq <> ALL(%(held)s::bigint[])
                    ELSE lease_until < {now} END
         ORDER BY next_due, seq
         LIMIT %(limit)s
           FOR UPDATE SKIP LOCKED),
    picked AS (
        SELECT seq FROM (SELECT * FROM free UNION ALL SELECT * FROM expired) AS candidates
         ORDER BY next_due, seq
         LIMIT %(limit)s)
    UPDATE task SET owner = %(node)s, lease_until = {now} + %(lease)s, fence = task.fence + 1,
                    manual_fence = CASE WHEN task.grid_due IS NOT NULL THEN task.fence + 1
                                        ELSE task.manual_fence END,
                    lost_runs = CASE WHEN task.owner IS NULL THEN 0
                                     WHEN task.started_fence = task.fence THEN task.lost_runs + 1
                                     ELSE task.lost_runs END,
                    run_count = CASE WHEN task.owner IS NOT NULL AND task.started_fence = task.fence
                                     THEN GREATEST(task.run_count, (SELECT COALESCE(max(run.run), 0)
                                                                     FROM run WHERE run.task_seq = task.seq))
                                     ELSE task.run_count END
      FROM picked
     WHERE task.seq = picked.seq
    RETURNING {returned}, task.fence, task.lease_until, {now}, task.grid_due, task.lost_runs"""
_ONLY_IMPORTABLE: Final = " AND fn_ref = ANY(%(importable)s::text[])"
# A row's executor, read from its options' JSON text (``actors.runtime.durable`` writes
# ``"executor": "process"`` for a process task, the registered name for a Celery or Dask
# task, nothing for a thread task). A pattern, not a
# cast to jsonb: a damaged row must not make every claim fail. Inside a JSON string every
# quote is escaped, so only the key itself can match.
EXECUTOR: Final = """COALESCE(substring(options_json from '"executor"\\s*:\\s*"([^"]*)"'), 'thread')"""
# A row without the key is a thread task: said first, with LIKE, whose estimate the planner
# takes from the column's statistics (nearly every row: '{}'). The pattern alone is an
# expression the planner cannot estimate (it guesses 0.5% of the rows match), so it took a
# claim of more than a few rows for one that reads every due row: a sequential scan and a
# sort of them all, each row through the pattern (20-30 ms for 3,000 due rows, per claim).
# The same rows match either way (the pattern finds no key where LIKE finds none).
_ONLY_EXECUTORS: Final = (
    " AND (('thread' = ANY(%(executors)s::text[]) AND options_json NOT LIKE '%%\"executor\"%%')"
    f" OR {EXECUTOR} = ANY(%(executors)s::text[]))"
)


def _limited(statement: str, **values: str) -> dict[tuple[bool, bool], str]:
    """``statement`` by (limited to importable references, limited to executors)."""
    return {
        (importable, executors): statement.format(
            only=(_ONLY_IMPORTABLE if importable else "") + (_ONLY_EXECUTORS if executors else ""), **values
        )
        for importable in (False, True)
        for executors in (False, True)
    }


ACQUIRES: Final = _limited(_ACQUIRE, now=NOW, returned=_RETURNED, free=FREE_ROW)

# Returns, last, whether a cancel with interrupt asked the run to stop (interrupt_fence =
# fence), and whether a run_now of an overlap="replace" task asked it to make way (-fence).
RENEW: Final = f"""
    UPDATE task SET lease_until = {NOW} + %(lease)s
      FROM unnest(%(seq)s::bigint[], %(fence)s::bigint[]) AS held (seq, fence)
     WHERE task.seq = held.seq AND task.fence = held.fence AND task.owner = %(node)s
    RETURNING task.seq, task.fence, task.lease_until, {NOW},
              coalesce(task.interrupt_fence = task.fence, false),
              coalesce(task.interrupt_fence = -task.fence, false)"""
# A renewal that extends only the leases ending within %(within)s seconds and returns the others
# as they stand: read from the statement's snapshot (a lease that has not ended cannot be
# claimed by another node meanwhile). When none is due, it writes nothing: no commit to flush,
# which is what the renewals a hint brings forward (to learn of stop requests) nearly always are.
# A lease due for extension that the UPDATE did not find (claimed elsewhere meanwhile) is left
# out: lost, as with RENEW.
RENEW_DUE: Final = f"""
    WITH mine AS (
        SELECT task.seq, task.fence, task.lease_until,
               coalesce(task.interrupt_fence = task.fence, false) AS stop,
               coalesce(task.interrupt_fence = -task.fence, false) AS way
          FROM task JOIN unnest(%(seq)s::bigint[], %(fence)s::bigint[]) AS held (seq, fence)
            ON task.seq = held.seq AND task.fence = held.fence
         WHERE task.owner = %(node)s),
    extended AS (
        UPDATE task SET lease_until = {NOW} + %(lease)s
          FROM mine
         WHERE task.seq = mine.seq AND task.fence = mine.fence AND task.owner = %(node)s
           AND mine.lease_until < {NOW} + %(within)s
        RETURNING task.seq, task.lease_until,
                  coalesce(task.interrupt_fence = task.fence, false) AS stop,
                  coalesce(task.interrupt_fence = -task.fence, false) AS way)
    SELECT mine.seq, mine.fence, coalesce(extended.lease_until, mine.lease_until), {NOW},
           coalesce(extended.stop, mine.stop), coalesce(extended.way, mine.way)
      FROM mine LEFT JOIN extended ON extended.seq = mine.seq
     WHERE extended.seq IS NOT NULL OR mine.lease_until >= {NOW} + %(within)s"""
# The start of a leased run: the row must still be held with this lease and still be
# scheduled (a cancel from any node committed before this wins: the run does not start). It
# renews the lease, and records the start (sealed too, for a run a cancel can no longer stop).
# A paused row's run does not start, but for the run_now run the claim took (manual_fence).
# A run started beside others under the same lease (%(beside)s: an overlap="allow" task's
# further runs, ``actors/shared/node.py``) is also refused once the row was replaced,
# rescheduled or given a run_now from elsewhere since the claim (replaced_fence = fence): the
# lease then runs no new run of the old definition, and ends with the last run going.
START: Final = f"""
    UPDATE task SET lease_until = {NOW} + %(lease)s, started_fence = fence,
                    sealed_fence = CASE WHEN %(seal)s THEN fence ELSE sealed_fence END
     WHERE seq = %(seq)s AND fence = %(fence)s AND owner = %(node)s AND status = 'scheduled'
       AND (NOT paused OR manual_fence = fence)
       AND NOT (%(beside)s AND coalesce(replaced_fence = fence, false))
    RETURNING {NOW}"""
# START for several leased runs in one statement; returns the seq of each that may start.
START_MANY: Final = f"""
    UPDATE task SET lease_until = {NOW} + %(lease)s, started_fence = task.fence,
                    sealed_fence = CASE WHEN given.seal THEN task.fence ELSE task.sealed_fence END
      FROM unnest(%(seq)s::bigint[], %(fence)s::bigint[], %(seal)s::boolean[], %(beside)s::boolean[])
           AS given (seq, fence, seal, beside)
     WHERE task.seq = given.seq AND task.fence = given.fence AND task.owner = %(node)s
       AND task.status = 'scheduled' AND (NOT task.paused OR task.manual_fence = task.fence)
       AND NOT (given.beside AND coalesce(task.replaced_fence = task.fence, false))
    RETURNING task.seq, {NOW}"""
# The runs in flight on every node: rows held by a lease that has not ended (task_owned).
IN_FLIGHT: Final = f"""
    SELECT task_id, seq, owner, lease_until, coalesce(started_fence = fence, false) FROM task
     WHERE owner IS NOT NULL AND lease_until >= {NOW}
     ORDER BY seq"""
# Which of these rows still exist (a fenced update of a row that is gone was not fenced out:
# nobody can claim that incarnation any more, so its outcome is the only one there can be).
EXISTING: Final = "SELECT seq FROM task WHERE seq = ANY(%s::bigint[])"
RELEASE: Final = """
    WITH released AS (
        UPDATE task SET owner = NULL, lease_until = NULL
          FROM unnest(%(seq)s::bigint[], %(fence)s::bigint[]) AS held (seq, fence)
         WHERE task.seq = held.seq AND task.fence = held.fence AND task.owner = %(node)s
        RETURNING task.task_id)
    SELECT pg_notify(%(channel)s, task_id) FROM released"""

# Two index probes: the first free row in due order (task_free), and the owned rows' lease
# ends (task_owned: only as many rows as runs in flight).
_NEXT_WAKEUP: Final = """
    SELECT least(
        (SELECT next_due FROM task
          WHERE {free} AND next_due IS NOT NULL{only}
          ORDER BY next_due, seq LIMIT 1),
        (SELECT min(greatest(next_due, lease_until)) FROM task
          WHERE status = 'scheduled' AND owner IS NOT NULL AND next_due IS NOT NULL{only}
            AND (NOT paused OR grid_due IS NOT NULL)))"""
NEXT_WAKEUPS: Final = _limited(_NEXT_WAKEUP, free=FREE_ROW)

# The change feed's cursor: a transaction id below which every writer of this store's task
# table has ended, judged in the snapshot of the statement it is read in. All a transaction
# older than the snapshot's xmin wrote is visible; so is all that the transactions between
# xmin and xmax not in the snapshot's in-progress list (xip) wrote; and a transaction starting
# later gets an id >= xmax. So the cursor may be xmax, less any in-progress transaction that
# may write the task table: its rows (change = its id) may commit after this read, and the
# next call (since = this cursor) must see them.
#
# The snapshot is the server's, not the database's: xip lists every open transaction of every
# database (another application's, a session left idle in a transaction), and taking its
# xmin, as the first design did, held the cursor back as long as any of them stayed open (and
# every call returned every row written since). An in-progress transaction is passed over when
# the lock manager shows it running (its own transaction-id lock, held by a live backend) and
# holding no lock on this task table (a transaction of another database, or of this one that
# has not touched the table). Every write of the store locks the table (the statement's
# relation lock, held to the transaction's end) before it is given a transaction id, so a
# writer of the store seen in xip holds that lock; one that has ended since the snapshot is
# missing from pg_locks and counts (a row may then come twice: never lost). pg_locks is read
# after the snapshot is taken (in the same statement, or a later one of the same snapshot).
_FEED_CURSOR: Final = """
    (WITH snapshot AS (SELECT pg_current_snapshot() AS s),
          open AS (SELECT x FROM snapshot, pg_snapshot_xip(s) AS x),
          locks AS MATERIALIZED (
              SELECT locktype, pid, transactionid FROM pg_locks
               WHERE EXISTS (SELECT 1 FROM open)
                 AND ((locktype = 'transactionid' AND granted AND mode = 'ExclusiveLock' AND pid IS NOT NULL)
                      OR (locktype = 'relation' AND relation = 'task'::regclass
                          AND database = (SELECT oid FROM pg_database WHERE datname = current_database()))))
     SELECT least((SELECT pg_snapshot_xmax(s) FROM snapshot),
                  (SELECT min(x) FROM open
                    WHERE NOT EXISTS (SELECT 1 FROM locks AS own
                                       WHERE own.locktype = 'transactionid' AND own.transactionid = x::xid
                                         AND NOT EXISTS (SELECT 1 FROM locks AS writer
                                                          WHERE writer.locktype = 'relation'
                                                            AND writer.pid = own.pid))))::text::bigint)"""

# The change feed, in one REPEATABLE READ snapshot: the cursor (above), then the rows written
# at or above ``since``. Rows written at or above the new cursor may come twice.
CHANGES_BEGIN: Final = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
CHANGES_CURSOR: Final = f"SELECT {_FEED_CURSOR}"
CHANGES: Final = f"SELECT {TASK_COLUMNS} FROM task WHERE change >= %s ORDER BY change, seq"

# The references of live rows written since the cursor: what a node must be able to import
# to claim them (lean: a few strings, not the rows). One statement, so one snapshot, whose
# cursor is the new one, as in the change feed.
REFERENCES: Final = f"""
    SELECT {_FEED_CURSOR},
           ARRAY(SELECT DISTINCT fn_ref FROM task WHERE change >= %s AND status = 'scheduled')"""


def get_task(db: Connection, task_id: str) -> StoredTask | None:
    """Return the row of ``task_id``, or ``None``."""
    row = db.execute(_TASK_BY_ID, (task_id,)).fetchone()
    return None if row is None else task_from_row(row)


def read_tasks(db: Connection, *, include_terminal: bool) -> list[StoredTask]:
    """Return the live tasks (and the terminal ones if asked), in ``seq`` order.

    Call inside a transaction: the rows come through a server-side cursor in chunks, so a
    million rows never sit in the client library's buffer at once.
    """
    with db.cursor(name="tasks", binary=True) as cursor:
        cursor.execute(_ALL_TASKS if include_terminal else _LIVE_TASKS)
        return collect_tasks(cursor)


def read_runs(db: Connection, task_id: str | None, limit: int) -> list[LedgerRow]:
    """Return up to ``limit`` ledger rows, newest first, of ``task_id`` or of every task."""
    check_limit(limit)
    if task_id is None:
        return ledger_rows(db.execute(_RUNS, (limit,)).fetchall())
    return ledger_rows(db.execute(_RUNS_OF_TASK, (task_id, limit)).fetchall())


def read_high_water(db: Connection) -> int:
    """Return the highest number reserved for minted ids."""
    row = db.execute(_HIGH_WATER).fetchone()
    assert row is not None  # created with the schema, never deleted
    value: int = row[0]
    return value
