"""Schedulers sharing one PostgreSQL store: what works on SQLite works here, and each run runs once.

Nodes are schedulers in this process (separate stores, connections and threads); the fault
tests with processes and kill -9 are in ``test_fleet.py``. Time is real and the database's.
"""

from __future__ import annotations

import itertools
import json
import os
import secrets
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import CancelledError
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from actors import (
    DuplicateTaskError,
    FakeClock,
    MissedRunError,
    RemoteRunError,
    Scheduler,
    SchedulerShutdownError,
    StoreError,
    UnknownTaskError,
)
from actors.runtime.minting import BLOCK as MINT_BLOCK
from actors.runtime.minting import is_memory_id
from actors.store import Lease, PostgresStore, TaskDefinition
from messages import Cron, EventKind, Once, Schedule, TaskStatus
from tests.conftest import EventRecorder
from tests.shared import tasks
from tests.shared.conftest import LEASE, POLL, Node
from tests.store.pg import DSN, admin, require_postgres

RECORD = "tests.shared.tasks:record"


def ledger(store: PostgresStore, task_id: str | None = None) -> list[Any]:
    return list(reversed(store.runs(task_id, limit=10_000)))


def wait_for(predicate: Any, timeout: float = 10.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never came true"
        time.sleep(0.02)


def run_keys() -> list[str]:
    with tasks.LOCK:
        return [key for key, _ in tasks.CALLS]


# -- scheduling and running ----------------------------------------------------------------------


def test_a_task_scheduled_on_one_node_runs_once_and_its_handle_says_how_it_ended(
    node: Node, reader: PostgresStore
) -> None:
    a, b = node("a"), node("b")
    handle = a.schedule_once(tasks.echo, delay=0.1, args=(1, (2, 3)), task_id="job")
    assert reader.get("job").status == "scheduled"  # type: ignore[union-attr]  # committed already
    assert b.handle("job") == handle  # any node finds it

    value = handle.result(timeout=10)

    assert handle.done()
    [run] = ledger(reader)
    assert (run.task_id, run.run, run.outcome) == ("job", 1, "completed")
    assert run.due <= run.started <= run.finished  # on the database's clock
    assert value in (((1, [2, 3]), {}), None)  # the value if it ran on a's node, else None
    info = b.info("job")
    assert (info.status, info.run_count, info.end_reason) == (TaskStatus.COMPLETED, 1, "completed")


def test_many_tasks_on_two_nodes_each_run_exactly_once(node: Node, reader: PostgresStore) -> None:
    a, b = node("a", workers=3), node("b", workers=3)
    recorders = {name: EventRecorder() for name in "ab"}
    a.subscribe(recorders["a"], [EventKind.COMPLETED])
    b.subscribe(recorders["b"], [EventKind.COMPLETED])
    handles = [
        (a if i % 2 else b).schedule_once(tasks.record, delay=0.05 * (i % 5), args=(i,)) for i in range(60)
    ]

    for handle in handles:
        handle.result(timeout=20)

    keys = run_keys()
    assert len(keys) == 60 == len(set(keys))  # each run once, in this process's two nodes
    rows = ledger(reader)
    assert Counter((r.task_id, r.run) for r in rows) == Counter({(h.task_id, 1): 1 for h in handles})
    assert all(r.due <= r.started for r in rows)
    # Events are published on the node that ran the run: each run's COMPLETED once, somewhere.
    wait_for(lambda: len([e for r in recorders.values() for e in r.events]) == 60, what="60 COMPLETED")
    completed = [e.task_id for r in recorders.values() for e in r.events]
    assert Counter(completed) == Counter(h.task_id for h in handles)


def test_a_recurring_task_moves_between_nodes_one_run_at_a_time(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    a.schedule_at_fixed_rate(tasks.record, 0.2, task_id="beat")
    wait_for(lambda: len(ledger(reader, "beat")) >= 8, what="8 runs")
    assert b.cancel("beat")

    rows = ledger(reader, "beat")
    assert [r.run for r in rows] == list(range(1, len(rows) + 1))
    dues = [r.due for r in rows]
    assert dues == sorted(set(dues))  # one run per slot, in order
    for before, after in itertools.pairwise(rows):
        assert after.due - before.due == pytest.approx(0.2, abs=1e-6) or after.due > before.finished
        assert after.started >= before.finished  # runs never overlap, whichever node ran them
    keys = run_keys()
    assert len(keys) == len(set(keys))


def test_store_urls_open_a_shared_store(schema: str) -> None:
    url = f"{DSN}{'&' if '?' in DSN else '?'}options=-csearch_path%3D{schema}"
    with Scheduler(workers=1, store=url) as s:
        handle = s.schedule_once(tasks.echo, delay=0.0, args=(7,))
        assert handle.result(timeout=10) == ((7,), {})
        assert s.info(handle.task_id).status is TaskStatus.COMPLETED


def test_a_fake_clock_cannot_drive_a_shared_store(schema: str) -> None:
    store = PostgresStore(DSN, schema=schema)
    with pytest.raises(ValueError, match="database's clock"):
        Scheduler(workers=1, clock=FakeClock(), store=store)
    with pytest.raises(Exception, match="not open"):
        store.get("x")  # closed again


def test_minted_ids_never_collide_between_nodes(node: Node) -> None:
    a, b = node("a"), node("b")
    ids = [s.schedule_once(tasks.noop, delay=60.0).task_id for _ in range(5) for s in (a, b)]
    assert len(set(ids)) == 10
    assert {info.task_id for info in a.tasks()} == set(ids) == {info.task_id for info in b.tasks()}


def test_memory_tasks_stay_on_their_node(node: Node) -> None:
    a, b = node("a"), node("b")
    handle = a.schedule_once(lambda: "here", delay=0.0, durable=False)
    assert handle.result(timeout=5) == "here"
    local = a.schedule_once(lambda: None, delay=60.0, durable=False, task_id="local")
    assert "local" in {i.task_id for i in a.tasks()}
    assert "local" not in {i.task_id for i in b.tasks()}
    assert local.cancel()


def test_schedule_many_keeps_its_tasks_on_the_node_and_cancels_them_there(node: Node) -> None:
    a, b = node("a"), node("b")
    ran: list[int] = []
    soon, later = a.schedule_many(ran.append, [0.0, 60.0], args=[(1,), (2,)])
    a.settle()
    assert ran == [1]
    assert a.info(soon).status is TaskStatus.COMPLETED
    assert later in {i.task_id for i in a.tasks()}
    assert later not in {i.task_id for i in b.tasks()}
    assert b.cancel(later) is False  # not b's, and not in the store
    assert a.cancel(later) is True
    assert a.info(later).status is TaskStatus.CANCELLED


# -- cancels -------------------------------------------------------------------------------------


def test_a_cancel_from_any_node_before_the_run_prevents_it(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    recorders = {name: EventRecorder() for name in "ab"}
    a.subscribe(recorders["a"], [EventKind.CANCELLED])
    b.subscribe(recorders["b"], [EventKind.CANCELLED])
    handle = a.schedule_once(tasks.record, delay=1.0, task_id="job")

    assert b.cancel("job") is True
    assert b.cancel("job") is False

    assert reader.get("job").status == "cancelled"  # type: ignore[union-attr]  # committed
    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    assert handle.done()
    recorders["b"].wait_for(lambda events: len(events) == 1)  # published by the node that cancelled
    assert recorders["a"].events == []
    time.sleep(1.0 + POLL)  # past its due time: nothing runs
    assert run_keys() == []


class GatedStore(PostgresStore):
    """A store whose ``start`` waits for the test: a claimed run held just before it starts."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.entered = threading.Event()
        self.opened = threading.Event()
        self.answers: list[float | None] = []

    def start(self, lease: Lease, *, seal: bool) -> float | None:
        self.entered.set()
        self.opened.wait(30)
        answer = super().start(lease, seal=seal)
        self.answers.append(answer)
        return answer


def test_a_cancel_wins_against_a_claim_that_has_not_started(
    node: Node, schema: str, reader: PostgresStore
) -> None:
    gated = GatedStore(DSN, schema=schema, node="a", lease=LEASE, poll=POLL)
    a = node("a", store=gated)
    b = node("b", workers=1)
    b.schedule_once(tasks.gate, delay=0.0, args=("busy",), durable=False)  # b has no idle worker
    assert tasks.entered("busy")
    handle = b.schedule_once(tasks.record, delay=0.0, task_id="job")
    assert gated.entered.wait(10)  # a claimed it; its worker is about to start it

    assert b.cancel("job") is True  # the store says: not started
    gated.opened.set()

    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    wait_for(lambda: gated.answers == [None], what="a's start refused")
    assert not [key for key in run_keys() if key.startswith("job@")]
    assert ledger(reader) == []
    assert a.info("job").status is TaskStatus.CANCELLED
    tasks.open_gate("busy")


def test_a_one_time_run_in_progress_on_another_node_is_not_cancelled(
    node: Node, reader: PostgresStore
) -> None:
    a = node("a")
    handle = a.schedule_once(tasks.gate, delay=0.0, args=("g",), task_id="job")
    assert tasks.entered("g")
    b = node("b")
    info = b.info("job")
    assert (info.status, info.node) == (TaskStatus.RUNNING, "a")  # every node sees who runs it
    assert b.cancel("job") is False  # it has started: it decides how the task ends

    tasks.open_gate("g")
    assert handle.result(timeout=10) == "g"
    assert b.info("job").status is TaskStatus.COMPLETED


def test_a_recurring_task_cancelled_mid_run_finishes_that_run_and_stops(
    node: Node, reader: PostgresStore
) -> None:
    a = node("a")
    handle = a.schedule_at_fixed_rate(tasks.gate, 0.2, args=("g",), task_id="beat")
    assert tasks.entered("g")
    b = node("b")
    assert b.cancel("beat") is True
    assert reader.get("beat").status == "cancelled"  # type: ignore[union-attr]

    tasks.open_gate("g")
    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    wait_for(lambda: len(ledger(reader, "beat")) == 1, what="the run's ledger row")
    time.sleep(0.2 + POLL)
    assert len(run_keys()) == 1  # no further run
    row = reader.get("beat")
    assert row is not None
    assert (row.status, row.run_count) == ("cancelled", 1)


def test_handles_cancel_through_the_store(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    handle = a.schedule_once(tasks.record, delay=5.0)
    other = b.handle(handle.task_id)
    assert other.cancel() is True
    assert other.done()
    assert handle.done()
    assert handle.cancel() is False
    assert reader.get(handle.task_id).status == "cancelled"  # type: ignore[union-attr]


# -- if_exists, misfire, cron, failures --------------------------------------------------------------


def test_if_exists_keep_and_replace_across_nodes(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    first = a.schedule_at_fixed_rate(tasks.record, 60.0, 60.0, task_id="beat")
    with pytest.raises(DuplicateTaskError, match="beat"):
        b.schedule_at_fixed_rate(tasks.record, 60.0, task_id="beat")
    kept = b.schedule_at_fixed_rate(tasks.noop, 99.0, task_id="beat", if_exists="keep")
    assert kept == first
    assert reader.get("beat").fn_ref == RECORD  # type: ignore[union-attr]  # untouched
    replaced = b.schedule_at_fixed_rate(tasks.echo, 5.0, 5.0, task_id="beat", if_exists="replace")
    assert replaced == first
    row = reader.get("beat")
    assert row is not None
    assert (row.fn_ref, json.loads(row.trigger_json)["rate"]) == ("tests.shared.tasks:echo", 5.0)
    assert a.info("beat").trigger.interval == 5.0  # type: ignore[union-attr]


def test_a_run_later_than_its_misfire_grace_is_missed(node: Node, reader: PostgresStore) -> None:
    a = node("a")
    recorder = EventRecorder()
    a.subscribe(recorder, [EventKind.MISSED])
    past = datetime.now(UTC) - timedelta(seconds=30)
    handle = a.schedule_once(tasks.record, at=past, misfire_grace=1.0, task_id="late")

    with pytest.raises(MissedRunError, match="late"):
        handle.result(timeout=10)
    assert run_keys() == []
    [run] = ledger(reader)
    assert (run.outcome, run.started) == ("missed", None)
    recorder.wait_for(lambda events: len(events) == 1)


def test_a_failure_on_another_node_raises_its_stored_error(node: Node, schema: str) -> None:
    gated = GatedStore(DSN, schema=schema, node="a", lease=LEASE, poll=POLL)
    a = node("a", store=gated)
    handle = a.schedule_once(tasks.fail, delay=0.0, task_id="f")
    assert gated.entered.wait(10)
    b = node("b")
    seen_from_b = b.handle("f")  # b's handle, made while the task is live
    gated.opened.set()
    with pytest.raises(RuntimeError, match="always fails"):
        handle.result(timeout=10)  # it failed here: its own exception
    with pytest.raises(RemoteRunError, match="RuntimeError: always fails"):
        seen_from_b.result(timeout=10)  # on b, only the store's text
    info = b.info("f")
    assert (info.status, info.end_reason) == (TaskStatus.FAILED, "the run failed")
    assert isinstance(info.last_error, RemoteRunError)


def test_a_cron_task_runs_at_its_slot_and_is_planned_from_it(
    node: Node, reader: PostgresStore, schema: str
) -> None:
    a = node("a")
    handle = a.schedule_cron(tasks.record, "* * * * *", task_id="minutely")
    row = reader.get("minutely")
    assert row is not None
    slot = datetime.fromtimestamp(row.next_due, UTC)  # type: ignore[arg-type]
    assert (slot.second, slot.microsecond) == (0, 0)
    assert handle.info().trigger == Cron("* * * * *", "UTC")
    with admin() as db:  # make the slot come now: as if the minute had passed
        db.execute(
            sql.SQL("UPDATE {}.task SET next_due = next_due - 60 WHERE task_id = 'minutely'").format(
                sql.Identifier(schema)
            )
        )
    wait_for(lambda: len(ledger(reader, "minutely")) == 1, what="the run")
    [run] = ledger(reader, "minutely")
    assert run.due == row.next_due - 60  # type: ignore[operator]
    assert run_keys() == [
        f"minutely@{datetime.fromtimestamp(run.due, UTC).isoformat(timespec='milliseconds')[:-6]}Z"
    ]
    wait_for(lambda: reader.get("minutely").next_due == row.next_due, what="the next slot")  # type: ignore[union-attr]


def test_a_claimed_row_that_does_not_decode_fails_naming_the_store_task_and_column(
    node: Node, reader: PostgresStore, schema: str
) -> None:
    """Issue 21, point 11, on a shared store: the claim's load makes the same stand-in as SQLite's."""
    a = node("a")
    a.schedule_once(tasks.record, delay=3600, task_id="damaged")
    sound = a.schedule_once(tasks.record, delay=0.2, task_id="sound")
    with admin() as db:  # an operator's edit: a trigger that is not one, and due now
        db.execute(
            sql.SQL(
                "UPDATE {}.task SET trigger_json = '[1]', next_due = next_due - 3600"
                " WHERE task_id = 'damaged'"
            ).format(sql.Identifier(schema))
        )
    wait_for(lambda: reader.get("damaged").status == "failed", what="the damaged run's end")  # type: ignore[union-attr]
    row = reader.get("damaged")
    assert row is not None
    assert row.trigger_json == "[1]"
    error = row.last_error or ""
    assert "StoreError" in error
    assert reader.location in error
    assert "'damaged'" in error
    assert "trigger_json" in error
    sound.result(timeout=10)
    assert [key.split("@")[0] for key in run_keys()] == ["sound"]


def test_a_function_no_node_can_import_waits_in_the_store(node: Node, reader: PostgresStore) -> None:
    reader.add(
        TaskDefinition(
            task_id="elsewhere",
            fn_ref="tests.shared.no_such_module:job",
            args_json="[]",
            kwargs_json="{}",
            trigger_json='{"once":true}',
            options_json="{}",
            next_due=reader.db_now() - 1,
        )
    )
    a = node("a")
    done = a.schedule_once(tasks.noop, delay=0.0)
    done.result(timeout=10)
    time.sleep(2 * POLL)
    assert reader.get("elsewhere").status == "scheduled"  # type: ignore[union-attr]  # left for a node that can
    assert reader.runs_in_flight() == []


def test_process_runs_are_claimed_only_by_a_node_with_worker_processes(
    node: Node, reader: PostgresStore
) -> None:
    reader.add(
        TaskDefinition(
            task_id="in-a-process",
            fn_ref="tests.shared.tasks:echo",
            args_json="[1]",
            kwargs_json="{}",
            trigger_json='{"once":true}',
            options_json='{"executor": "process"}',
            next_due=reader.db_now() - 1,
        )
    )
    threads_only = node("threads-only")  # processes=0
    seen_there = EventRecorder()
    threads_only.subscribe(seen_there)
    # A thread run due after the process run: once it is done, the node has claimed past it.
    threads_only.schedule_once(tasks.noop, delay=0.0).result(timeout=10)
    assert reader.runs_in_flight() == []  # before: claimed here, its lease renewed for ever

    with_processes = node("with-processes", processes=1)
    seen_here = EventRecorder()
    with_processes.subscribe(seen_here)
    assert with_processes.handle("in-a-process").result(timeout=30) == ((1,), {})  # it ran here, in a process

    seen_here.wait_for(lambda _: EventKind.COMPLETED in seen_here.kinds("in-a-process"))

    assert seen_there.kinds("in-a-process") == []
    assert [r.outcome for r in ledger(reader, "in-a-process")] == ["completed"]


# -- stopping ------------------------------------------------------------------------------------


def test_a_stopping_node_gives_back_a_claim_it_has_not_started(
    node: Node, schema: str, reader: PostgresStore
) -> None:
    gated = GatedStore(DSN, schema=schema, node="a", lease=30.0, poll=POLL)
    a = node("a", store=gated)
    handle = a.schedule_once(tasks.record, delay=0.0, task_id="job")
    assert gated.entered.wait(10)
    b = node("b", lease=30.0)
    stopping = threading.Thread(target=a.shutdown, kwargs={"timeout": 20})
    stopping.start()
    try:
        # a gave it back: b runs it long before a's 30 s lease would have ended.
        wait_for(lambda: len(ledger(reader)) == 1, timeout=10, what="b's run")
    finally:
        gated.opened.set()
        stopping.join(20)
    assert gated.answers == [None]  # a's worker found the claim given back: it did not run it
    assert len(run_keys()) == 1
    with pytest.raises(SchedulerShutdownError):
        handle.result(timeout=5)  # a has stopped: its handles can no longer read the store
    assert b.info("job").status is TaskStatus.COMPLETED


def test_shutdown_leaves_durable_tasks_in_the_store_for_the_other_nodes(
    node: Node, reader: PostgresStore
) -> None:
    a = node("a")
    handle = a.schedule_once(tasks.record, delay=1.0, task_id="later")
    a.shutdown()
    with pytest.raises(SchedulerShutdownError, match="stays in the store"):
        handle.result(timeout=5)
    with pytest.raises(SchedulerShutdownError):
        a.info("later")
    b = node("b")
    assert b.handle("later").result(timeout=10) is not None
    assert reader.get("later").status == "completed"  # type: ignore[union-attr]


def test_info_of_an_unknown_id_is_an_error(node: Node) -> None:
    a = node("a")
    with pytest.raises(UnknownTaskError):
        a.info("nothing")
    with pytest.raises(UnknownTaskError):
        a.handle("nothing")


def test_an_interrupting_cancel_stops_a_run_on_another_node(node: Node, reader: PostgresStore) -> None:
    a = node("a")
    handle = a.schedule_once(tasks.stoppable, delay=0.0, args=("s",), task_id="job")
    assert tasks.entered("s")
    b = node("b")
    assert b.cancel("job") is False  # started, and not interrupted: it would just finish
    asked = time.monotonic()

    assert b.cancel("job", interrupt=True) is True

    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    assert time.monotonic() - asked < LEASE  # a hint brought a's renewal forward
    wait_for(lambda: reader.runs_in_flight() == [], what="the lease's end")
    assert reader.get("job").status == "cancelled"  # type: ignore[union-attr]


class FlakyStartStore(PostgresStore):
    """A store whose first ``start`` fails, as when the database is cut off at that moment."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.failed = threading.Event()

    def start(self, lease: Lease, *, seal: bool) -> float | None:
        if not self.failed.is_set():
            self.failed.set()
            raise StoreError("the database is unreachable (a test's fault)")
        return super().start(lease, seal=seal)


def test_a_run_that_could_not_start_for_want_of_the_store_runs_once_later(
    node: Node, schema: str, reader: PostgresStore
) -> None:
    flaky = FlakyStartStore(DSN, schema=schema, node="a", lease=LEASE, poll=POLL)
    a = node("a", store=flaky)
    handle = a.schedule_once(tasks.record, delay=0.0, task_id="job")
    assert flaky.failed.wait(10)
    began = time.monotonic()

    handle.result(timeout=LEASE + POLL + 10)  # its lease ends (or was given back): a runs it then

    assert time.monotonic() - began < LEASE + POLL + 2
    assert len(run_keys()) == 1
    assert [r.run for r in ledger(reader)] == [1]


# -- bounds and outages ------------------------------------------------------------------------


def test_a_durable_call_fails_within_the_lock_timeout_while_another_session_locks_the_table(
    node: Node, schema: str
) -> None:
    a = node("lock-bound", lock_timeout=0.3)  # a name of its own: other tests end node a's sessions
    with admin() as locker:
        locker.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        locker.execute("BEGIN")
        locker.execute("LOCK TABLE task IN ACCESS EXCLUSIVE MODE")
        for call in (
            lambda: a.schedule_once(RECORD, delay=60.0),
            lambda: a.schedule_once(RECORD, delay=60.0, task_id="named"),
            lambda: a.cancel("named"),
            a.tasks,
        ):
            began = time.monotonic()
            with pytest.raises(StoreError, match=r"lock_timeout=0\.3 s"):
                call()
            assert time.monotonic() - began < 3.0  # 45 s and more before: as long as the lock
        local = a.schedule_once(tasks.noop, delay=0.0, durable=False)  # needs no store
        assert local.result(timeout=5) is None
        locker.execute("ROLLBACK")
    assert a.schedule_once(RECORD, delay=0.0).result(timeout=10)  # it carries on at once


@pytest.fixture
def own_database() -> Iterator[str]:
    """A database of the test's own on the server (so the test may refuse its connections)."""
    require_postgres()
    name = f"t_{os.getpid()}_{secrets.token_hex(4)}"
    with admin() as db:
        db.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield name
    with admin() as db:
        db.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def cut_off(database: str) -> None:
    """Make ``database`` unreachable: its sessions ended, new connections refused."""
    with admin() as db:
        db.execute(sql.SQL("ALTER DATABASE {} WITH ALLOW_CONNECTIONS false").format(sql.Identifier(database)))
        db.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = %s AND pid <> pg_backend_pid()",
            (database,),
        )


def test_memory_tasks_are_minted_scheduled_and_run_while_the_store_is_unreachable(own_database: str) -> None:
    dsn = make_conninfo(DSN, dbname=own_database)
    s = Scheduler(workers=2, store=PostgresStore(dsn, node="cut", lease=LEASE, poll=POLL, timeout=2.0))
    try:
        stored = s.schedule_once(RECORD, delay=60.0)  # a block of stored ids was reserved: use it up
        cut_off(own_database)
        with pytest.raises(psycopg.OperationalError):
            psycopg.connect(dsn, connect_timeout=3).close()  # the database is truly unreachable

        began = time.monotonic()
        handles = [s.schedule_once(tasks.noop, delay=0.0, durable=False) for _ in range(MINT_BLOCK + 1)]
        many = s.schedule_many(tasks.noop, [0.0, 0.0])
        by_message = s.ref.ask(Schedule(fn=tasks.noop, trigger=Once(0.0)), timeout=5)
        assert time.monotonic() - began < 2.0  # 10 s and a StoreError before, or 40 s
        for handle in handles:
            assert handle.result(timeout=10) is None
        s.settle(timeout=10)
        assert s.info(many[0]).status is TaskStatus.COMPLETED  # asks no store: a memory id
        assert s.info(by_message).status is TaskStatus.COMPLETED
        minted = [h.task_id for h in handles] + many + [by_message]
        assert len(set(minted)) == len(minted)
        assert all(is_memory_id(task_id) for task_id in minted)  # a space no stored id can take
        assert stored.task_id not in minted
        with pytest.raises(StoreError):  # a durable task needs its store, and says so
            s.schedule_once(RECORD, delay=60.0)
    finally:
        s.shutdown(timeout=10)


def test_a_node_without_worker_processes_takes_a_process_task_that_a_node_with_them_runs(
    node: Node,
) -> None:
    """Only what cannot be anywhere is refused at the call: some node of the store may have processes."""
    a = node("a")  # processes=0: it claims no process runs, but may schedule them
    node("b", processes=1)
    handle = a.schedule_once("tests.shared.tasks:echo", 0.0, args=[1], executor="process", keep_result=True)
    assert handle.result(timeout=30) == [[1], {}]  # kept as JSON, read from the ledger
    [run] = a.history(handle.task_id)
    assert (run.outcome, run.node) == ("completed", "b")
    with pytest.raises(ValueError, match="needs worker processes"):
        a.schedule_once("tests.shared.tasks:echo", 0.0, executor="process", durable=False)
