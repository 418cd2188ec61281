"""A node of a shared store whose database calls are made slow, failing or cut, on the real server.

Faults come from the server itself: a second session holding a lock the node's save needs, the
node's connections ended by ``pg_terminate_backend``, its role refused at login (the server
"down" for it, while every other session on the shared server goes on). No run may start
twice on a healthy node, and every acknowledged task must run soon after the fault ends, not
when some lease runs out.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from psycopg import sql

from actors import Scheduler, StoreError
from actors.shared.lease_book import LeaseBook
from actors.store import PostgresStore
from messages import TaskStatus
from tests.shared import tasks
from tests.shared.conftest import Node
from tests.store.helpers import definition, update
from tests.store.pg import (
    DSN,
    admin,
    backends,
    drop_schemas,
    require_postgres,
    terminate,
    unique_node,
    wait_for_db_clock,
)

RECORD = "tests.shared.tasks:record"
LEASE = 1.0  # short: a save held up for a few leases is quick to arrange
POLL = 0.2


def run_keys() -> Counter[str]:
    with tasks.LOCK:
        return Counter(key for key, _ in tasks.CALLS)


def waiting_on_a_lock(node: str) -> list[int]:
    """The server processes of ``node`` that wait for a lock."""
    with admin() as db:
        rows = db.execute(
            "SELECT pid FROM pg_stat_activity WHERE application_name = %s AND wait_event_type = 'Lock'",
            (f"pykka-taskscheduler {node}",),
        ).fetchall()
    return [int(pid) for (pid,) in rows]  # type: ignore[call-overload]


def wait_for(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never came true"
        time.sleep(0.01)  # polling the server: what the test waits for is there


def lock_the_ledger(schema: str) -> psycopg.Connection[Any]:
    """A second session holding ``LOCK TABLE run``: every save of an outcome waits for it."""
    locker = admin()
    locker.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
    locker.execute("BEGIN")
    locker.execute("LOCK TABLE run IN EXCLUSIVE MODE")
    return locker


def lease_until(schema: str, task_id: str) -> float:
    with admin() as db:
        db.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        row = db.execute("SELECT lease_until FROM task WHERE task_id = %s", (task_id,)).fetchone()
    assert row is not None, f"no task {task_id}"
    assert row[0] is not None, f"{task_id} is not held"
    return float(row[0])  # type: ignore[arg-type]


# -- point 2: a save held up past the lease ----------------------------------------------------------


@pytest.mark.parametrize("fault", ["slow", "failing"])
def test_a_run_whose_save_is_held_up_past_its_lease_is_not_run_again(
    node: Node, reader: PostgresStore, schema: str, fault: str
) -> None:
    name = unique_node("a")  # its sessions are found by name and cut: no other test's "a"
    a = node(name, lease=LEASE, poll=POLL)
    handle = a.schedule_once(tasks.gate, delay=0.0, args=("g",), task_id="held-up")
    assert tasks.entered("g"), "the run never started"
    claimed_until = lease_until(schema, "held-up")
    locker = lock_the_ledger(schema)
    try:
        tasks.open_gate("g")  # the run ends; its save waits for the lock
        wait_for(lambda: waiting_on_a_lock(name), 10, "a save waiting for the lock")
        if fault == "failing":  # its connection is cut while it waits, twice (the call's retry too)
            for _ in range(2):
                terminate(waiting_on_a_lock(name))
                wait_for(lambda: waiting_on_a_lock(name) or a.info("held-up").run_count == 0, 10, "a retry")
        # Held up for three leases: long past the claim's lease, were it not renewed meanwhile.
        wait_for_db_clock(reader, claimed_until + 3 * LEASE)
        assert lease_until(schema, "held-up") > claimed_until + 2 * LEASE  # renewed while it waited
    finally:
        locker.execute("COMMIT")
        locker.close()
    wait_for(lambda: [r.outcome for r in reader.runs("held-up")] == ["completed"], 15, "the outcome saved")
    assert handle.result(timeout=10) in ("g", None)
    assert run_keys() == Counter({next(iter(run_keys())): 1}), f"run more than once: {run_keys()}"
    assert a.info("held-up").status is TaskStatus.COMPLETED


# -- point 10: a storm of dropped connections, an outage -----------------------------------------------


def test_a_run_claimed_by_a_call_whose_answer_was_lost_runs_at_once_not_when_its_lease_ends(
    node: Node, reader: PostgresStore, schema: str
) -> None:
    # The claim committed, but the connection dropped before its answer came back: the row is
    # the node's, and no part of the node knows it. (A second store with the node's name made
    # that claim; so does a node restarted under the same name.)
    lost_answer = PostgresStore(DSN, schema=schema, node="a", lease=30.0)
    lost_answer.open()
    try:
        reader.add(
            definition(
                "orphan",
                fn_ref=RECORD,
                args_json='["orphan"]',
                kwargs_json="{}",
                trigger_json='{"once":true}',
                options_json="{}",
                next_due=reader.db_now(),
            )
        )
        (lease,) = lost_answer.claim_due(1)
    finally:
        lost_answer.close()
    started = time.monotonic()
    node("a", lease=30.0, poll=POLL)

    wait_for(lambda: [r.outcome for r in reader.runs("orphan")] == ["completed"], 10, "the orphan's run")

    assert time.monotonic() - started < 10 < lease.expires - lease.db_now  # long before the lease
    assert list(run_keys().values()) == [1]


def storm(node: str, seconds: float, every: float, stop: threading.Event) -> int:
    """End every connection ``node`` holds, every ``every`` seconds for ``seconds``; return how many."""
    ended = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not stop.is_set():
        pids = [pid for pid, _ in backends(node)]
        terminate(pids)
        ended += len(pids)
        stop.wait(every)  # the storm's own cadence
    return ended


def storm_while_scheduling(a: Scheduler, name: str, reader: PostgresStore, seconds: float, seed: int) -> None:
    """Schedule (and cancel some of) tasks due in 50 ms during a storm; every acknowledged one runs."""
    rng = random.Random(seed)
    stop = threading.Event()
    ended: list[int] = []
    stormer = threading.Thread(target=lambda: ended.append(storm(name, seconds, 0.03, stop)))
    scheduled: list[str] = []
    cancelled: list[str] = []
    maybe_cancelled: list[str] = []  # a cancel that failed may have committed
    numbers = itertools.count()
    stormer.start()
    try:
        while stormer.is_alive():
            task_id = f"storm-{next(numbers)}"
            try:
                a.schedule_once(tasks.record, delay=0.05, args=(task_id,), task_id=task_id)
            except StoreError:
                continue  # not acknowledged: it may or may not be stored
            scheduled.append(task_id)
            if rng.random() < 0.2:
                victim = rng.choice(scheduled)
                try:
                    if a.cancel(victim):
                        cancelled.append(victim)
                except StoreError:
                    maybe_cancelled.append(victim)
    finally:
        stop.set()
        stormer.join()
    ended_at = time.monotonic()
    done_by = ended_at + 3.0  # a few polls after the storm; far from the lease, and the pool's backoff
    expected = set(scheduled) - set(cancelled) - set(maybe_cancelled)

    def completed() -> set[str]:
        return {r.task_id for r in reader.runs(limit=100_000) if r.outcome == "completed"}

    while not expected <= completed() and time.monotonic() < done_by:
        time.sleep(0.05)  # polling the ledger: what the test waits for is there
    missing = expected - completed()
    stuck = {t.task_id: (t.status, t.next_due) for t in reader.tasks() if t.task_id in missing}
    flights = [f for f in reader.runs_in_flight() if f.task_id in missing]
    print(
        f"{len(scheduled)} acknowledged, {len(cancelled)} cancelled, {sum(ended)} connections ended; "
        f"all ran {time.monotonic() - ended_at:.2f} s after the storm"
    )
    assert not missing, f"{len(missing)} acknowledged tasks never ran: {stuck}; in flight: {flights}"
    assert not completed() & set(cancelled), "a task ran after its cancel returned True"
    assert max(run_keys().values(), default=1) == 1, "a run started twice on the one node"
    assert len(scheduled) > 20, "the storm left nothing acknowledged to check"


STORM_LEASE = 30.0  # the default: a run left stuck until its lease ends would miss the bound


def test_acknowledged_tasks_run_soon_after_a_storm_of_dropped_connections(
    node: Node, reader: PostgresStore
) -> None:
    name = unique_node("a")  # the storm cuts this node's sessions by name: no other test's "a"
    a = node(name, workers=4, lease=STORM_LEASE, poll=POLL, timeout=2.0)
    storm_while_scheduling(a, name, reader, seconds=2.0, seed=1)


@pytest.mark.stress
@pytest.mark.timeout(600)
@pytest.mark.parametrize("seed", range(5))
def test_acknowledged_tasks_run_soon_after_a_storm_of_dropped_connections_stress(
    node: Node, reader: PostgresStore, seed: int
) -> None:
    name = unique_node("a")
    a = node(name, workers=4, lease=STORM_LEASE, poll=POLL, timeout=2.0)
    storm_while_scheduling(a, name, reader, seconds=8.0, seed=seed)


@pytest.fixture
def refusable_role(schema: str) -> Iterator[str]:
    """A login role of the test's own owning ``schema``: ``NOLOGIN`` makes the server refuse it."""
    require_postgres()
    role = f"r_{schema}"
    with admin() as db:
        db.execute(sql.SQL("CREATE ROLE {} LOGIN").format(sql.Identifier(role)))
        db.execute(
            sql.SQL("ALTER SCHEMA {} OWNER TO {}").format(sql.Identifier(schema), sql.Identifier(role))
        )
    yield role
    with admin() as db:
        db.execute(sql.SQL("ALTER ROLE {} LOGIN").format(sql.Identifier(role)))
        for (pid,) in db.execute("SELECT pid FROM pg_stat_activity WHERE usename = %s", (role,)).fetchall():
            db.execute("SELECT pg_terminate_backend(%s)", (pid,))
    drop_schemas([schema])  # before the role that owns it
    with admin() as db:
        db.execute(sql.SQL("DROP ROLE {}").format(sql.Identifier(role)))


def outage(role: str, *, down: bool) -> None:
    """Refuse ``role`` at login and end its sessions (the server gone, for it), or let it in again."""
    with admin() as db:
        db.execute(
            sql.SQL("ALTER ROLE {} {}").format(sql.Identifier(role), sql.SQL("NOLOGIN" if down else "LOGIN"))
        )
        if down:
            for (pid,) in db.execute(
                "SELECT pid FROM pg_stat_activity WHERE usename = %s", (role,)
            ).fetchall():
                db.execute("SELECT pg_terminate_backend(%s)", (pid,))


def test_store_calls_work_again_as_soon_as_the_server_answers_after_an_outage(
    schema: str, refusable_role: str
) -> None:
    dsn = psycopg.conninfo.make_conninfo(DSN, user=refusable_role)
    store = PostgresStore(dsn, schema=schema, node="a", timeout=20.0)
    store.open()
    try:
        store.db_now()
        outage(refusable_role, down=True)
        answers: list[float] = []
        caller = threading.Thread(target=lambda: answers.append((store.db_now(), time.monotonic())[1]))
        caller.start()  # its connection is dead: it waits for another while the server refuses it
        # Down for 4 s: the pool's own backoff (1, 2, 4 s...) would next try about 3 s after it is back.
        time.sleep(4.0)  # the outage's own length
        outage(refusable_role, down=False)
        back = time.monotonic()
        caller.join(25)
        assert answers, "the call waiting through the outage failed"
        print(f"the call waiting through the outage answered {answers[0] - back:.3f} s after the server")
        assert answers[0] - back < 1.0, f"the first call answered {answers[0] - back:.2f} s after the server"
        started = time.monotonic()
        store.db_now()
        assert time.monotonic() - started < 1.0
    finally:
        store.close()


# -- group commit: a row claimed here again before the saver forgets its old lease -------------------


def test_a_row_claimed_again_before_its_saved_lease_is_forgotten_keeps_its_new_lease(
    reader: PostgresStore,
) -> None:
    # The saver's thread commits an outcome, then forgets its lease; in between, the lease loop
    # may claim the row, now free, for its next slot. Forgetting by row dropped that new lease:
    # its run started, and the next claim took the row (still showing that slot, owned here but
    # not held) as an orphan, and the node ran the same slot twice.
    store = reader
    store.add(definition("again", next_due=store.db_now() - 1.0))
    book = LeaseBook()
    (first,) = store.claim_due(1, held=book.seqs())
    book.acquired([first])
    book.saving([(first.seq, first.fence)])
    saved = update(first.task, next_due=store.db_now() - 0.5, run_count=1, fence=first.fence)
    assert store.save_outcomes([saved]) == frozenset()  # committed: the row is free, its next slot due
    (second,) = store.claim_due(1, held=book.seqs())  # the lease loop, before the saver forgets
    assert second.seq == first.seq
    assert second.fence > first.fence
    book.acquired([second])
    assert book.forget([(first.seq, first.fence)]) == []  # the saver: only the lease it saved
    held = book.get(first.seq)
    assert held is not None
    assert held.lease.fence == second.fence
    assert not held.saving
    assert store.claim_due(1, held=book.seqs()) == []  # not an orphan: the slot is not run again
