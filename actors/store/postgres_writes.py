"""The PostgreSQL store's writes: the work of each call, on the connection it is given.

``PostgresStore`` validates the arguments and picks the transaction (see
``postgres_connections``); these functions do the statements of ``postgres_sql`` and turn
the rows into plain data. They run on the caller's thread.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import psycopg

from actors.errors import DuplicateTaskError, StoreError
from actors.store import postgres_after
from actors.store import postgres_sql as q
from actors.store.postgres_connections import Connection
from actors.store.protocol import (
    LIVE_STATUS,
    IfExists,
    Lease,
    LedgerRow,
    RunInFlight,
    StoredTask,
    TaskDefinition,
    TaskUpdate,
)

_ADD_ATTEMPTS: Final = 5  # an id whose terminal row other nodes keep replacing: give up then
_TASK_FIELDS: Final = len(q.TASK_COLUMNS.split(", "))


@dataclass(frozen=True, slots=True)
class Saved:
    """What a ``save`` transaction did: new ledger rows, ended tasks, refused fenced updates (by seq)."""

    new_runs: int
    ended: int
    fenced_out: frozenset[int]


def add(db: Connection, task: TaskDefinition, if_exists: IfExists, channel: str) -> tuple[StoredTask, bool]:
    """Add ``task`` as ``Store.add`` says, inside the caller's transaction."""
    params: dict[str, Any] = {
        "task_id": task.task_id,
        "fn_ref": task.fn_ref,
        "args_json": task.args_json,
        "kwargs_json": task.kwargs_json,
        "trigger_json": task.trigger_json,
        "options_json": task.options_json,
        "next_due": task.next_due,
        "channel": channel,
    }
    for _ in range(_ADD_ATTEMPTS):
        row = db.execute(q.INSERT_TASK, params).fetchone()
        if row is not None:
            added = q.task_from_row(row[:_TASK_FIELDS])
            if task.after:
                postgres_after.write(db, added.seq, task.after, channel)
            return added, True
        # The id is taken: lock its row, so no other node changes it until we commit.
        locked = db.execute(q.LOCK_TASK, (task.task_id,)).fetchone()
        if locked is None:
            continue  # deleted meanwhile (another node re-adding a terminal id): insert again
        stored = q.task_from_row(locked)
        if stored.live:
            if if_exists == "keep":
                return stored, False
            if if_exists == "error":
                raise DuplicateTaskError(f"a live task already has the id {task.task_id!r}")
            row = db.execute(q.REPLACE_TASK, {**params, "seq": stored.seq}).fetchone()
            assert row is not None  # the row is locked by this transaction
            postgres_after.write(db, stored.seq, task.after, channel)
            return q.task_from_row(row[:_TASK_FIELDS]), True
        db.execute(q.DELETE_TASK, (stored.seq,))  # terminal: a new task with an old id starts afresh
    raise StoreError(f"add of {task.task_id!r} lost {_ADD_ATTEMPTS} races with other nodes adding it")


def add_many(db: Connection, tasks: Sequence[TaskDefinition], channel: str) -> list[int]:
    """Insert fresh rows for ``tasks`` as ``Store.add_many`` says, inside the caller's transaction.

    ``COPY``, the fastest way in: measured at 30,000 rows, about three times faster than one
    ``INSERT ... SELECT FROM unnest`` of the same rows (arrays are sent and parsed as text).
    COPY knows no ``ON CONFLICT``: an id taken makes it fail, and the transaction with it.
    """
    row = db.execute(q.DB_NOW).fetchone()
    assert row is not None
    now = row[0]  # the transaction's now(), as the other writes stamp updated_at
    try:
        with db.cursor().copy(q.COPY_TASKS) as copy:
            write = copy.write_row
            for t in tasks:
                due = t.next_due
                write(
                    (
                        t.task_id,
                        t.fn_ref,
                        t.args_json,
                        t.kwargs_json,
                        t.trigger_json,
                        t.options_json,
                        LIVE_STATUS,
                        due,
                        now,
                    )
                )
    except psycopg.errors.UniqueViolation:  # the caller's transaction rolls back: nothing is kept
        raise DuplicateTaskError(
            f"some of the {len(tasks)} task ids are stored already, or given twice"
        ) from None
    first, last, count = db.execute(q.ADDED_RANGE).fetchone() or (None, None, 0)
    if count != len(tasks):
        raise StoreError(f"add_many wrote {count} rows of {len(tasks)}")
    if last - first + 1 == count:  # one after another (no other session took a seq between): in order
        seqs = list(range(first, last + 1))
    else:
        by_id: dict[str, int] = dict(db.execute(q.ADDED_SEQS).fetchall())
        seqs = [by_id[t.task_id] for t in tasks]
    db.execute(q.NOTIFY, (channel, tasks[0].task_id))  # one hint for the batch: delivered at commit
    return seqs


def cancel(db: Connection, task_id: str, channel: str, interrupt: bool = False) -> bool:
    """Cancel ``task_id`` if it is live; say whether it was."""
    params = {"task_id": task_id, "channel": channel, "interrupt": interrupt}
    cancelled = len(db.execute(q.CANCEL_TASK, params).fetchall()) == 1
    if cancelled:  # what waits for it ends too, in this transaction
        postgres_after.settle_cancel(db, task_id, channel)
    return cancelled


def save(
    db: Connection, updates: Sequence[TaskUpdate], runs: Sequence[LedgerRow], node: str, channel: str
) -> Saved:
    """Apply ``updates`` in order, then insert the ledger rows their fences allow.

    A fenced update that does not apply (the lease was lost) drops the ledger rows of its
    ``seq``, unless another update of the same ``seq`` in the batch applied.
    """
    ended = [u.seq for u in updates if u.status != LIVE_STATUS]
    if len(_rounds(updates)) <= 1:  # nearly always: one statement, and the look for waiters sent with it
        found = _save_one_round(db, updates, runs, node, channel)
        waiters = postgres_after.ended_with_waiters(db, ended)  # sent before the save's answer is read
        saved = found()
        postgres_after.settle_found(db, waiters(), channel)
        return saved
    saved = _save(db, updates, runs, node, channel)
    # schedule_after: the waiters of rows this save ended, released or cancelled in its transaction.
    postgres_after.settle(db, ended, channel)
    return saved


def _save(
    db: Connection, updates: Sequence[TaskUpdate], runs: Sequence[LedgerRow], node: str, channel: str
) -> Saved:
    rounds = _rounds(updates)
    if len(rounds) <= 1:  # each row updated once at most (nearly always): one statement
        return _save_one_round(db, updates, runs, node, channel)()
    applied = [False] * len(updates)
    for batch in rounds:
        rows = db.execute(
            q.UPDATE_TASKS,
            {
                "task_id": [updates[i].task_id for i in batch],
                "seq": [updates[i].seq for i in batch],
                "status": [updates[i].status for i in batch],
                "next_due": [updates[i].next_due for i in batch],
                "run_count": [updates[i].run_count for i in batch],
                "failure_count": [updates[i].failure_count for i in batch],
                "consecutive_failures": [updates[i].consecutive_failures for i in batch],
                "last_error": [updates[i].last_error for i in batch],
                "last_outcome": [updates[i].last_outcome for i in batch],
                "fence": [updates[i].fence for i in batch],
                "hold": [updates[i].hold for i in batch],
                "node": node,
                "channel": channel,
            },
        ).fetchall()
        done = {seq for seq, _ in rows}
        for i in batch:
            applied[i] = updates[i].seq in done
    fenced_out = {u.seq for u, ok in zip(updates, applied, strict=True) if u.fence is not None and not ok}
    fenced_out -= {u.seq for u, ok in zip(updates, applied, strict=True) if ok}
    if fenced_out:
        # A row that is gone (its id re-added after a cancel, or pruned) cannot be claimed
        # again: the outcome of its last lease is the only one it can ever get, so it counts.
        rows = db.execute(q.EXISTING, (sorted(fenced_out),)).fetchall()
        fenced_out = {seq for (seq,) in rows}
    kept = [r for r in runs if r.task_seq not in fenced_out]
    new = 0
    if kept:
        # Its own pipeline block: a rowcount is only known once synced (a pipelined save).
        with db.pipeline():
            inserted = db.execute(
                q.INSERT_RUNS,
                {
                    "task_id": [r.task_id for r in kept],
                    "task_seq": [r.task_seq for r in kept],
                    "run": [r.run for r in kept],
                    "due": [r.due for r in kept],
                    "started": [r.started for r in kept],
                    "finished": [r.finished for r in kept],
                    "outcome": [r.outcome for r in kept],
                    "error": [r.error for r in kept],
                    "attempt": [r.attempt for r in kept],
                    "reason": [r.reason for r in kept],
                    "run_node": [r.node for r in kept],
                    "manual": [r.manual for r in kept],
                    "value_json": [r.value_json for r in kept],
                    "value_note": [r.value_note for r in kept],
                },
            )
        new = inserted.rowcount
    # Counts updates that end a task; one that finds its row terminal already is counted too,
    # which only makes a prune come a little early.
    ended = sum(ok and u.status != LIVE_STATUS for u, ok in zip(updates, applied, strict=True))
    return Saved(new_runs=new, ended=ended, fenced_out=frozenset(fenced_out))


def _save_one_round(
    db: Connection, updates: Sequence[TaskUpdate], runs: Sequence[LedgerRow], node: str, channel: str
) -> Callable[[], Saved]:
    """Send the save in one statement; return what reads its answer (in pipeline mode: later)."""
    cursor = db.execute(
        q.SAVE_ONE_ROUND,
        {
            **_update_params(updates),
            "run_task_id": [r.task_id for r in runs],
            "run_task_seq": [r.task_seq for r in runs],
            "run_run": [r.run for r in runs],
            "run_due": [r.due for r in runs],
            "run_started": [r.started for r in runs],
            "run_finished": [r.finished for r in runs],
            "run_outcome": [r.outcome for r in runs],
            "run_error": [r.error for r in runs],
            "run_attempt": [r.attempt for r in runs],
            "run_reason": [r.reason for r in runs],
            "run_node": [r.node for r in runs],
            "run_manual": [r.manual for r in runs],
            "run_value_json": [r.value_json for r in runs],
            "run_value_note": [r.value_note for r in runs],
            "node": node,
            "channel": channel,
        },
    )

    def answer() -> Saved:
        row = cursor.fetchone()
        assert row is not None  # a SELECT of aggregates: one row
        new, _, refused, ended = row
        return Saved(new_runs=new, ended=ended, fenced_out=frozenset(refused))

    return answer


def _update_params(updates: Sequence[TaskUpdate]) -> dict[str, list[Any]]:
    return {
        "task_id": [u.task_id for u in updates],
        "seq": [u.seq for u in updates],
        "status": [u.status for u in updates],
        "next_due": [u.next_due for u in updates],
        "run_count": [u.run_count for u in updates],
        "failure_count": [u.failure_count for u in updates],
        "consecutive_failures": [u.consecutive_failures for u in updates],
        "last_error": [u.last_error for u in updates],
        "last_outcome": [u.last_outcome for u in updates],
        "fence": [u.fence for u in updates],
        "hold": [u.hold for u in updates],
    }


def _rounds(updates: Sequence[TaskUpdate]) -> list[list[int]]:
    """Split the updates' indexes into rounds of distinct rows, keeping each row's order.

    One statement updates each row at most once, so the k-th update of a row goes in round
    k: applied round after round, updates of one row land in order, each on the row the one
    before left (updates of different rows commute). Nearly always a single round.
    """
    rounds: list[list[int]] = []
    seen: dict[int, int] = {}  # seq -> updates of it so far
    for i, u in enumerate(updates):
        k = seen.get(u.seq, 0)
        seen[u.seq] = k + 1
        if k == len(rounds):
            rounds.append([])
        rounds[k].append(i)
    return rounds


def acquire(
    db: Connection,
    limit: int,
    importable: list[str] | None,
    node: str,
    lease: float,
    executors: list[str] | None = None,
    held: list[int] | None = None,
) -> list[Lease]:
    """Claim up to ``limit`` due, free rows (one statement); return them in claim order.

    ``held``: the rows the node holds, if it says (see ``SharedStore.claim_due``).
    """
    params: dict[str, Any] = {
        "limit": limit,
        "node": node,
        "lease": lease,
        "importable": importable,
        "executors": executors,
        "adopt": held is not None,
        "held": held or [],
    }
    rows = db.execute(q.ACQUIRES[importable is not None, executors is not None], params).fetchall()
    leases = [
        Lease(
            task=q.task_from_row(row[:_TASK_FIELDS]),
            fence=row[_TASK_FIELDS],
            owner=node,
            expires=row[_TASK_FIELDS + 1],
            db_now=row[_TASK_FIELDS + 2],
            grid_due=row[_TASK_FIELDS + 3],
            lost_runs=row[_TASK_FIELDS + 4],
        )
        for row in rows
    ]
    # RETURNING comes in no particular order; leased rows are due, so next_due is set.
    leases.sort(key=lambda lease: (lease.task.next_due, lease.task.seq))
    return leases


def _held(leases: Sequence[Lease]) -> dict[str, list[int]]:
    return {"seq": [lease.seq for lease in leases], "fence": [lease.fence for lease in leases]}


def renew(
    db: Connection, leases: Sequence[Lease], node: str, lease: float, within: float | None = None
) -> list[Lease]:
    """Extend the leases still held (with ``within``: those ending within it); return them, in order."""
    mine = [held for held in leases if held.owner == node]  # another node's lease is not ours to keep
    if not mine:
        return []
    params = {**_held(mine), "node": node, "lease": lease}
    if within is None:
        rows = db.execute(q.RENEW, params).fetchall()
    else:
        rows = db.execute(q.RENEW_DUE, {**params, "within": within}).fetchall()
    renewed = {(seq, fence): (expires, now, stop, way) for seq, fence, expires, now, stop, way in rows}
    result: list[Lease] = []
    for held in mine:
        found = renewed.get((held.seq, held.fence))
        if found is not None:
            expires, now, stop, way = found
            result.append(
                dataclasses.replace(
                    held, expires=expires, db_now=now, stop_requested=stop, make_way_requested=way
                )
            )
    return result


def start(
    db: Connection, held: Lease, seal: bool, node: str, lease: float, *, beside: bool = False
) -> float | None:
    """Record that the run of ``held`` starts; return the database's clock, or ``None`` if refused."""
    params = {"seq": held.seq, "fence": held.fence, "node": node, "lease": lease, "seal": seal}
    params["beside"] = beside
    row = db.execute(q.START, params).fetchone()
    if row is None:
        return None
    started: float = row[0]
    return started


def start_many(
    db: Connection,
    starts: Sequence[tuple[Lease, bool]],
    node: str,
    lease: float,
    beside: Sequence[bool] | None = None,
) -> list[float | None]:
    """Record that the runs of these leases start; return the database's clock for each, ``None``: refused.

    ``beside``: for each start, whether it is ``SharedStore.start``'s ``beside`` (default: none is).
    """
    flags = [False] * len(starts) if beside is None else [bool(flag) for flag in beside]
    given = zip(starts, flags, strict=True)
    mine = [(held, seal, flag) for (held, seal), flag in given if held.owner == node]
    if not mine:
        return [None] * len(starts)
    params = {
        "seq": [held.seq for held, _, _ in mine],
        "fence": [held.fence for held, _, _ in mine],
        "seal": [bool(seal) for _, seal, _ in mine],
        "beside": [flag for _, _, flag in mine],
        "node": node,
        "lease": lease,
    }
    started: dict[int, float] = dict(db.execute(q.START_MANY, params).fetchall())
    return [started.get(held.seq) if held.owner == node else None for held, _ in starts]


def in_flight(db: Connection) -> list[RunInFlight]:
    """Return the rows held by a lease that has not ended, in ``seq`` order."""
    return [
        RunInFlight(task_id=task_id, seq=seq, owner=owner, expires=expires, started=started)
        for task_id, seq, owner, expires, started in db.execute(q.IN_FLIGHT).fetchall()
    ]


def release(db: Connection, leases: Sequence[Lease], node: str, channel: str) -> None:
    """Give back the rows still held with ``leases``."""
    db.execute(q.RELEASE, {**_held(leases), "node": node, "channel": channel}).fetchall()
