"""The poison-pill limit: a run that takes down every node that starts it ends ``FAILED``.

Real node processes (``tests.shared.fleet``) take the run one after another and each is
``kill -9``-ed while the run is in progress; once the run has been lost ``max_lost_runs``
times (3 by default), the next node to take it (this process, listening for events) fails it
with ``RunLostError`` without calling its function, and it is retried no more.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from actors import RunLostError, Scheduler
from actors.store import PostgresStore, TaskDefinition
from messages import EventKind, TaskEvent, TaskStatus
from tests.shared import tasks
from tests.shared.fleet import EFFECT, Fleet, run_keys_counter
from tests.store.pg import DSN, drop_schemas, new_schema, require_postgres

LEASE = 1.0  # short: each loss is noticed about a lease after its kill
POLL = 0.2


@pytest.fixture
def schema() -> Iterator[str]:
    require_postgres()
    name = new_schema()
    yield name
    drop_schemas([name])


def wait_until_started_on(store: PostgresStore, task_id: str, node: str, timeout: float = 30.0) -> None:
    """Return once ``node`` holds the run of ``task_id`` and has started it (as the store says)."""
    deadline = time.monotonic() + timeout
    while not any(
        (flight.task_id, flight.owner, flight.started) == (task_id, node, True)
        for flight in store.runs_in_flight()
    ):
        assert time.monotonic() < deadline, f"{node} never started {task_id}"
        time.sleep(0.02)  # polling the database: what the test waits for is there


@pytest.mark.timeout(120)
def test_a_run_whose_every_node_is_killed_ends_failed_after_three_losses(schema: str, tmp_path: Path) -> None:
    log = tmp_path / "effects.log"
    store = PostgresStore(DSN, schema=schema, node="test")
    store.open()
    fleet = Fleet(DSN, schema, lease=LEASE, poll=POLL, workers=1)
    try:
        store.add(
            TaskDefinition(
                task_id="pill",
                fn_ref=EFFECT,
                args_json=json.dumps([str(log), 600.0]),  # runs until its node is killed
                kwargs_json="{}",
                trigger_json='{"once":true}',
                options_json="{}",
                next_due=store.db_now(),
            )
        )
        for _ in range(3):  # one node at a time takes the run, starts it, and is killed with it
            name = fleet.restart()
            wait_until_started_on(store, "pill", name)
            fleet.kill(name)
        assert store.get("pill").status == "scheduled"  # type: ignore[union-attr]

        events: queue.Queue[TaskEvent] = queue.Queue()
        last = Scheduler(
            workers=1,
            store=PostgresStore(DSN, schema=schema, node="last", lease=LEASE, poll=POLL),
            listeners=[lambda event: events.put(event) if event.kind is EventKind.FAILED else None],
        )
        try:
            event = events.get(timeout=30)
            info = last.info("pill")
        finally:
            last.shutdown(timeout=10)
    finally:
        fleet.kill_all()
        store.close()

    assert event.task_id == "pill"
    assert event.final
    assert isinstance(event.error, RunLostError)
    assert event.error.losses == 3
    assert "'pill'" in str(event.error)
    assert "3 times" in str(event.error)
    assert info.status is TaskStatus.FAILED
    with PostgresStore(DSN, schema=schema, node="reader") as reader:
        row = reader.get("pill")
        (ledger,) = reader.runs("pill")
    assert row is not None
    assert row.status == "failed"
    assert ledger.outcome == "failed"
    assert "RunLostError" in (ledger.error or "")
    assert ledger.node == "last"
    assert sum(run_keys_counter(log).values()) == 3  # the function ran on the three killed nodes only


def lose(store: PostgresStore, times: int) -> None:
    """Claim the due run, start it and let its lease end, ``times`` times: as many nodes dying with it."""
    for _ in range(times):
        deadline = time.monotonic() + 10
        held = store.claim_due(1)
        while not held:
            assert time.monotonic() < deadline, "the run was never claimable again"
            time.sleep(0.02)  # polling the database: the lease ends on its clock
            held = store.claim_due(1)
        started = store.start(held[0], seal=False)
        assert started is not None
        while store.db_now() <= started + store.lease:
            time.sleep(0.02)


@pytest.mark.parametrize("limit", [1, 2])
def test_a_recurring_task_counts_the_lost_run_failed_and_goes_on_to_its_next_slot(
    schema: str, limit: int
) -> None:
    with PostgresStore(DSN, schema=schema, node="dying", lease=0.3) as dying:
        now = dying.db_now()
        dying.add(
            TaskDefinition(
                task_id="every",
                fn_ref="tests.shared.tasks:record",
                args_json="[]",
                kwargs_json="{}",
                trigger_json=json.dumps({"rate": 3600.0, "anchor": now - 1}),
                options_json="{}",
                next_due=now - 1,
            )
        )
        lose(dying, limit)

    events: queue.Queue[TaskEvent] = queue.Queue()
    store = PostgresStore(DSN, schema=schema, node="next", lease=LEASE, poll=POLL, max_lost_runs=limit)
    node = Scheduler(workers=1, store=store, listeners=[events.put])
    try:
        failed = next(e for e in iter(lambda: events.get(timeout=30), None) if e.kind is EventKind.FAILED)
        node.settle(timeout=10)
    finally:
        node.shutdown(timeout=10)

    assert isinstance(failed.error, RunLostError)
    assert failed.error.losses == limit
    assert not failed.final  # a recurring task goes on
    with PostgresStore(DSN, schema=schema, node="reader") as reader:
        row = reader.get("every")
        (ledger,) = reader.runs("every")
    assert row is not None
    assert row.status == "scheduled"
    assert row.failure_count == 1
    assert row.next_due is not None
    assert row.next_due > now + 3000  # the next slot, an hour on
    assert ledger.outcome == "failed"
    with tasks.LOCK:
        assert tasks.CALLS == []  # the function was not called here
