"""``overlap="allow"`` on the shared store: a task's runs go on beside one another under one lease.

The node that claims a slot of such a task holds its row's lease until the last of its runs
going ends: meanwhile its further slots start further runs there (up to ``max_instances``; a
slot beyond is ``MISSED`` with reason ``"overlap"``), each run saved (fenced) as it ends. These
tests run real nodes on the real server: in this process (two schedulers on one schema), and,
for a ``kill -9``, node processes (``tests.shared.fleet``). Runs are held at a gate
(``tests.operations.tasks.hold``) while the test looks; waits are on events, the gate's
condition or the database (polled), never sleeps.
"""

from __future__ import annotations

import json
import queue
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from psycopg import sql

from actors import Scheduler
from actors.store import PostgresStore, TaskDefinition
from messages import EventKind, TaskEvent, TaskStatus
from tests.operations import tasks
from tests.shared import tasks as shared_tasks
from tests.shared.fleet import EFFECT, Fleet
from tests.store.pg import DSN, admin

LEASE = 2.0
POLL = 0.5
TIMEOUT = 30.0  # generous: the server and the cores are shared


@pytest.fixture(autouse=True)
def _held() -> Iterator[None]:
    tasks.reset_held()
    yield
    tasks.reset_held()


class Recorder:
    """The events of one node, for the test to wait on."""

    def __init__(self) -> None:
        self.events: queue.Queue[TaskEvent] = queue.Queue()
        self.seen: list[TaskEvent] = []

    def __call__(self, event: TaskEvent) -> None:
        self.events.put(event)

    def wait_for(self, found: Callable[[TaskEvent], bool], timeout: float = TIMEOUT) -> TaskEvent:
        for event in self.seen:
            if found(event):
                return event
        deadline = time.monotonic() + timeout
        while True:
            event = self.events.get(timeout=max(0.0, deadline - time.monotonic()))
            self.seen.append(event)
            if found(event):
                return event


@pytest.fixture
def nodes(schema: str) -> Iterator[Callable[[str], tuple[Scheduler, Recorder]]]:
    """Start schedulers (four workers) on the test's schema, each with its events recorded."""
    made: list[Scheduler] = []

    def make(name: str) -> tuple[Scheduler, Recorder]:
        recorder = Recorder()
        store = PostgresStore(DSN, schema=schema, node=name, lease=LEASE, poll=POLL)
        scheduler = Scheduler(workers=4, store=store, listeners=[recorder])
        made.append(scheduler)
        return scheduler, recorder

    yield make
    tasks.RELEASE.set()
    for scheduler in made:
        scheduler.shutdown(timeout=10)


def wait_until(predicate: Callable[[], bool], what: str, timeout: float = TIMEOUT) -> None:
    """Poll the database until ``predicate`` holds (what the test waits for is there, not here)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def row_column(schema: str, task_id: str, column: str) -> Any:
    with admin() as db:
        db.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        query = sql.SQL("SELECT {} FROM task WHERE task_id = %s").format(sql.Identifier(column))
        row = db.execute(query, (task_id,)).fetchone()
    assert row is not None
    return row[0]


def owner_of(reader: PostgresStore, task_id: str) -> str | None:
    flights = [flight for flight in reader.runs_in_flight() if flight.task_id == task_id]
    return flights[0].owner if flights else None


def test_runs_overlap_under_one_lease_on_the_node_that_holds_it_and_a_slot_beyond_n_is_missed(
    nodes: Callable[[str], tuple[Scheduler, Recorder]], reader: PostgresStore
) -> None:
    a, a_events = nodes("a")
    b, b_events = nodes("b")
    a.schedule_at_fixed_rate(tasks.hold, 0.3, 0.0, task_id="op", overlap="allow", max_instances=2)
    assert sorted(tasks.wait_held(2, TIMEOUT)) == [1, 2]  # two at once, each its own number
    holder = owner_of(reader, "op")
    assert holder in ("a", "b")
    scheduler, events = (a, a_events) if holder == "a" else (b, b_events)
    missed = events.wait_for(lambda e: e.task_id == "op" and e.kind is EventKind.MISSED)
    assert missed.reason == "overlap"  # two go: the next slot is missed, as "skip" misses it
    info = scheduler.info("op")
    assert (info.status, info.active_runs, info.node) == (TaskStatus.SCHEDULED, 2, holder)
    assert len(reader.runs_in_flight()) == 1  # one lease for both runs
    assert len(tasks.wait_held(2, 0.0)) == 2  # no third run started anywhere

    tasks.RELEASE.set()
    wait_until(lambda: {1, 2} <= {run.run for run in reader.runs("op")}, "runs 1 and 2 in the ledger")
    assert scheduler.cancel("op") is True
    wait_until(lambda: owner_of(reader, "op") is None, "the lease to end")
    runs = [run for run in reader.runs("op") if run.outcome == "completed"]
    numbers = [run.run for run in runs]
    assert len(set(numbers)) == len(numbers)  # each run its own number, once
    first_two = sorted((run for run in runs if run.run in (1, 2)), key=lambda run: run.run)
    assert [run.node for run in first_two] == [holder, holder]  # both ran where the lease was
    assert first_two[0].started is not None
    assert first_two[1].started is not None
    assert first_two[0].started < first_two[1].started  # each its own start (the database's clock)
    row = reader.get("op")
    assert row is not None
    assert row.status == "cancelled"
    assert row.run_count == len(runs)
    assert [r.run for r in scheduler.history("op") if r.run in (1, 2)] != []


def test_a_node_whose_lease_was_taken_saves_no_run_and_starts_no_more(
    nodes: Callable[[str], tuple[Scheduler, Recorder]], reader: PostgresStore, schema: str
) -> None:
    a, _ = nodes("a")
    a.schedule_at_fixed_rate(tasks.hold, 0.5, 0.0, task_id="op", overlap="allow", max_instances=3)
    assert sorted(tasks.wait_held(2, TIMEOUT)) == [1, 2]
    assert owner_of(reader, "op") == "a"
    with admin() as db:  # another node takes the row over, as after a's lease had ended
        db.execute(sql.SQL("SET search_path = {}").format(sql.Identifier(schema)))
        db.execute(
            "UPDATE task SET owner = 'thief', fence = fence + 1, lease_until = lease_until + 600 "
            "WHERE task_id = 'op'"
        )
    runs_before = row_column(schema, "op", "run_count")
    wait_until(lambda: a.info("op").node == "thief", "the row to show its new owner")
    tasks.RELEASE.set()  # a's runs end: their outcomes are fenced out
    node = a._directory._node  # type: ignore[attr-defined]  # (the node's count: no public face)
    wait_until(lambda: node.fenced_out >= 1, "a's save to be refused")
    assert reader.runs("op") == []  # no run of a's in the ledger
    assert row_column(schema, "op", "run_count") == runs_before
    assert row_column(schema, "op", "owner") == "thief"
    held = len(tasks.wait_held(2, 0.0))
    assert held == 2  # no further run started under the lost lease (it was refused at its start)


@pytest.mark.timeout(120)
def add_allow_task(reader: PostgresStore, fn_ref: str, args: list[Any]) -> None:
    """Put task ``op`` in the store: every 0.5 s from now, ``overlap="allow"``, two runs at most."""
    now = reader.db_now()
    reader.add(
        TaskDefinition(
            task_id="op",
            fn_ref=fn_ref,
            args_json=json.dumps(args),
            kwargs_json="{}",
            trigger_json=json.dumps({"rate": 0.5, "anchor": now}),
            options_json=json.dumps({"overlap": "allow", "max_instances": 2}),
            next_due=now,
        )
    )


def test_a_killed_holder_loses_every_run_going_once_and_another_node_takes_the_task_over(
    schema: str, tmp_path: Path, reader: PostgresStore
) -> None:
    log = tmp_path / "effects.log"
    fleet = Fleet(DSN, schema, lease=1.0, poll=0.2, workers=2)
    try:
        (first,) = fleet.start(1)
        add_allow_task(reader, EFFECT, [str(log), 600.0])  # runs until its node is killed

        def lines() -> list[list[str]]:
            return [line.split() for line in log.read_text().splitlines()] if log.exists() else []

        wait_until(lambda: len(lines()) >= 2, "two runs going on the first node")
        assert row_column(schema, "op", "owner") == first
        killed = {pid for _, pid, _ in lines()}
        assert len(killed) == 1
        fleet.kill(first)
        second = fleet.restart()
        wait_until(lambda: len({pid for _, pid, _ in lines()} - killed) == 1, "a run on the second node")
        wait_until(lambda: row_column(schema, "op", "owner") == second, "the second node to hold it")
        assert row_column(schema, "op", "lost_runs") == 1  # two runs lost with their node: one loss
        wait_until(lambda: len([p for _, p, _ in lines() if p not in killed]) == 2, "two runs on the second")
        assert reader.runs("op") == []  # the runs lost with the first node were never saved
        assert row_column(schema, "op", "status") == "scheduled"
    finally:
        fleet.kill_all()


def test_runs_ended_out_of_order_before_a_kill_leave_no_run_number_to_give_twice(
    schema: str, tmp_path: Path, reader: PostgresStore
) -> None:
    # Run 1 outlives its node; runs 2, 3, ... end (and are saved) beside it, so the row counts
    # fewer runs than the highest number its ledger holds. The node that takes the task over
    # numbers its runs past that number: each of its runs has its ledger row (a number given
    # twice would find its row taken, and the run would leave no trace).
    log = tmp_path / "effects.log"
    fleet = Fleet(DSN, schema, lease=1.0, poll=0.2, workers=2)
    try:
        (first,) = fleet.start(1)
        add_allow_task(reader, "tests.shared.fleet_tasks:effect_first_long", [str(log), 600.0, 0.05])

        def pids() -> list[int]:
            return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []

        wait_until(lambda: len(reader.runs("op")) >= 2, "runs 2 and 3 saved beside the long run 1")
        assert max(row.run for row in reader.runs("op")) > row_column(schema, "op", "run_count")
        killed = set(pids())
        fleet.kill(first)
        second = fleet.restart()
        wait_until(lambda: len([pid for pid in pids() if pid not in killed]) >= 3, "runs on the second node")
        fleet.stop()  # its runs going end, and are saved
        ran_on_second = len([pid for pid in pids() if pid not in killed])
        rows = reader.runs("op", limit=1000)
        saved_by_second = [row for row in rows if row.node == second]
        assert len(saved_by_second) == ran_on_second, (rows, ran_on_second)
        assert {row.outcome for row in saved_by_second} == {"completed"}
        assert min(row.run for row in saved_by_second) > max(row.run for row in rows if row.node == first)
    finally:
        fleet.kill_all()


def test_a_cancel_with_interrupt_from_another_node_stops_every_run_going_on_the_holder(
    nodes: Callable[[str], tuple[Scheduler, Recorder]], reader: PostgresStore
) -> None:
    a, _ = nodes("a")
    b, _ = nodes("b")
    options: dict[str, Any] = {"task_id": "op", "overlap": "allow", "max_instances": 2}
    a.schedule_at_fixed_rate(shared_tasks.stoppable, 0.3, 0.0, args=("s",), **options)
    wait_until(lambda: len(shared_tasks.CALLS) >= 2, "two runs going")
    holder = owner_of(reader, "op")
    other = b if holder == "a" else a
    assert other.cancel("op", interrupt=True) is True
    wait_until(lambda: owner_of(reader, "op") is None, "the holder to end its lease")
    runs = reader.runs("op")
    assert sorted((run.run, run.outcome, run.node) for run in runs) == [
        (1, "cancelled", holder), (2, "cancelled", holder),
    ]  # fmt: skip
    assert len(shared_tasks.CALLS) == 2  # no run started after the cancel
    row = reader.get("op")
    assert row is not None
    assert row.status == "cancelled"


def test_a_pause_from_another_node_starts_no_more_runs_and_resume_catches_up(
    nodes: Callable[[str], tuple[Scheduler, Recorder]], reader: PostgresStore
) -> None:
    a, _ = nodes("a")
    b, _ = nodes("b")
    a.schedule_at_fixed_rate(tasks.hold, 0.3, 0.0, task_id="op", overlap="allow", max_instances=3)
    a.schedule_at_fixed_rate(shared_tasks.noop, 0.3, 0.0, task_id="witness")
    tasks.wait_held(1, TIMEOUT)
    holder = owner_of(reader, "op")
    other = b if holder == "a" else a
    assert other.pause("op") is True
    tasks.RELEASE.set()  # the runs going finish, and are saved
    wait_until(lambda: owner_of(reader, "op") is None, "the holder to end its lease")
    started = len(tasks.wait_held(1, 0.0))
    saved = len(reader.runs("op"))
    assert saved == started  # every run that started was saved
    assert a.info("op").status is TaskStatus.PAUSED
    witnessed = len(reader.runs("witness"))
    wait_until(lambda: len(reader.runs("witness")) >= witnessed + 4, "four more slots to pass")
    assert len(tasks.wait_held(1, 0.0)) == started  # paused: no run of it started meanwhile
    assert len(reader.runs("op")) == saved
    assert a.resume("op") is True
    wait_until(lambda: len(reader.runs("op")) > saved, "a run after the resume")
