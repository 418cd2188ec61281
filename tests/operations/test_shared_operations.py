"""Operations on a shared PostgreSQL store across nodes, and a pause that outlives a kill -9.

Two nodes on one schema: a pause made on one stops every node's claims; a run_now made on one
runs on whichever node claims it. A paused task stays paused after its node is killed with
SIGKILL and another starts (SQLite too). Real time on PostgreSQL: waits are on events.
"""

from __future__ import annotations

import signal
import subprocess
import sys

import pytest

from actors import Scheduler
from actors.store import Lease, PostgresStore
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder
from tests.operations import tasks
from tests.operations.conftest import WITNESS, Rig, completed
from tests.shared import tasks as gates
from tests.store.helpers import ROOT
from tests.store.pg import DSN


def _both(rig: Rig) -> tuple[Scheduler, Scheduler, EventRecorder]:
    """Two nodes whose events go to one recorder (a run's events come from the node that ran it)."""
    a, b = rig.start("a"), rig.start("b")
    seen = EventRecorder()
    a.subscribe(seen)
    b.subscribe(seen)
    return a, b, seen


def _witness_slots(rig: Rig, seen: EventRecorder, count: int) -> None:
    target = completed(seen.events, WITNESS) + count
    seen.wait_for(lambda events: completed(events, WITNESS) >= target, rig.timeout)


@pytest.fixture
def shared(rig: Rig) -> Rig:
    if rig.kind != "postgres":
        pytest.skip("two nodes share a PostgreSQL store only")
    return rig


def test_a_pause_on_one_node_stops_every_nodes_claims(shared: Rig) -> None:
    a, b, seen = _both(shared)
    shared.witness(a)
    a.schedule_at_fixed_rate(tasks.note, shared.interval, shared.interval, task_id="op")
    seen.wait_for(lambda events: completed(events, "op") >= 2, shared.timeout)
    assert a.pause("op") is True
    assert b.pause("op") is False  # already paused: the store says so, on any node
    assert b.info("op").status is TaskStatus.PAUSED
    _witness_slots(shared, seen, 2)  # a run in progress when paused has finished by now
    ran = len(tasks.runs("op"))
    _witness_slots(shared, seen, 4)
    assert len(tasks.runs("op")) == ran  # no node claimed it
    assert EventKind.PAUSED in shared.events(a).kinds("op")  # the node that paused publishes it
    assert EventKind.PAUSED not in shared.events(b).kinds("op")
    assert b.resume("op") is True
    seen.wait_for(lambda events: completed(events, "op") >= ran + 1, shared.timeout)


def test_run_now_on_one_node_runs_on_whichever_claims(shared: Rig) -> None:
    a, b, seen = _both(shared)
    a.schedule_at_fixed_rate(tasks.note, 1000.0, 1000.0, task_id="op")
    assert b.pause("op") is True
    assert a.run_now("op") is True
    assert a.run_now("op") is False  # one extra run waits already
    seen.wait_for(lambda events: completed(events, "op") >= 1, shared.timeout)
    assert tasks.runs("op") == [True]
    seen.wait_for(lambda _: b.info("op").run_count == 1, shared.timeout)
    assert a.info("op").status is TaskStatus.PAUSED


def test_a_paused_task_stays_paused_after_kill_9(rig: Rig) -> None:
    if not rig.durable:
        pytest.skip("nothing outlives a memory scheduler")
    where = str(rig.path) if rig.kind == "sqlite" else rig.schema
    child = subprocess.Popen(
        [sys.executable, "-m", "tests.operations.pause_child", rig.kind, where],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "paused"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
        for stream in (child.stdin, child.stdout):
            if stream is not None:
                stream.close()
    s = rig.start("b")
    assert s.info("op").status is TaskStatus.PAUSED
    if rig.kind == "postgres":  # on the database's clock the slots it misses pass now
        rig.witness(s)
        rig.slots(s, 3)
        assert s.info("op").run_count == 0
    assert s.resume("op") is True
    assert s.info("op").status is not TaskStatus.PAUSED


class _PausingStore(PostgresStore):
    """A store whose start of a run of "op" is preceded by a pause of it (committed first)."""

    def start(self, lease: Lease, *, seal: bool) -> float | None:
        if lease.task.task_id == "op":
            self.pause("op")
        return super().start(lease, seal=seal)


def test_a_claimed_run_paused_before_it_starts_does_not_start_and_the_task_stays(shared: Rig) -> None:
    pausing = _PausingStore(DSN, schema=shared.schema, node="p", lease=2.0, poll=0.5)
    p = Scheduler(workers=1, store=pausing)
    shared.made.append(p)
    seen = EventRecorder()
    p.subscribe(seen)
    p.schedule_at_fixed_rate(tasks.note, shared.interval, 0.0, task_id="op")  # due now
    p.schedule_at_fixed_rate(tasks.noop, shared.interval, shared.interval, task_id=WITNESS)
    seen.wait_for(lambda _: p.info("op").status is TaskStatus.PAUSED, shared.timeout)
    _witness_slots(shared, seen, 2)  # the refused claim was given back by now
    info = p.info("op")
    assert info.status is TaskStatus.PAUSED  # not cancelled by the run that did not start
    assert info.run_count == 0
    assert tasks.runs("op") == []
    assert not [flight for flight in pausing.runs_in_flight() if flight.task_id == "op"]


def _holder(a: Scheduler, b: Scheduler, task_id: str) -> tuple[Scheduler, Scheduler]:
    """The node whose run of ``task_id`` is in flight, and the other."""
    node = a.info(task_id).node
    assert node in ("a", "b")
    return (a, b) if node == "a" else (b, a)


def test_run_now_from_another_node_queues_behind_the_run_in_flight(shared: Rig) -> None:
    gates.reset()
    a, b, seen = _both(shared)
    a.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op", overlap="queue")
    assert gates.entered("op", shared.timeout)
    holder, other = _holder(a, b, "op")
    try:
        assert other.run_now("op") is True  # committed in the row: the holder's outcome keeps it due
        assert holder.run_now("op") is False  # at most one waits, on any node
    finally:
        gates.open_gate("op")
    seen.wait_for(lambda events: completed(events, "op") >= 2, shared.timeout)
    seen.wait_for(lambda _: len(a.history("op")) == 2, shared.timeout)
    assert [record.manual for record in a.history("op")] == [True, False]
    gates.reset()


def test_run_now_from_another_node_makes_the_run_in_flight_make_way(shared: Rig) -> None:
    a, b, seen = _both(shared)
    a.schedule_at_fixed_rate(tasks.make_way, 1000.0, 0.0, task_id="op", overlap="replace")
    assert tasks.RUNNING.wait(shared.timeout)
    _, other = _holder(a, b, "op")
    assert other.run_now("op") is True  # the holder hears of it at its next renewal
    seen.wait_for(lambda _: len(a.history("op")) == 2, shared.timeout)
    records = a.history("op")
    assert [(r.manual, r.outcome) for r in records] == [(True, "completed"), (False, "cancelled")]
    assert tasks.runs("op") == [False, True]
    assert a.info("op").status is TaskStatus.SCHEDULED
