"""The whole fleet killed (``kill -9``), due times missed, then one node back: it obeys ``catch_up``.

Real node processes (``tests.shared.fleet_node``) run the task until every one of them is
killed; the database's clock passes several of its slots while no node is up; then a node
starts in this process, with a listener from its start, and the task's policy decides what
the missed times get, as a restart of a single store's scheduler does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from actors import Scheduler
from actors.store import PostgresStore
from messages import EventKind, TaskEvent
from tests.conftest import EventRecorder
from tests.shared.fleet import Fleet
from tests.store.pg import DSN, wait_for_db_clock

LEASE = 1.0
POLL = 0.25
EVERY = 1.0  # the task's interval; a downtime of several slots exceeds lease + poll


@pytest.fixture
def fleet(schema: str) -> Iterator[Fleet]:
    made = Fleet(DSN, schema, lease=LEASE, poll=POLL, workers=2)
    yield made
    made.kill_all()


def _misses(events: list[TaskEvent]) -> list[str | None]:
    return [e.reason for e in events if e.task_id == "op" and e.kind is EventKind.MISSED]


@pytest.mark.timeout(180)  # node processes start slowly on a loaded machine
@pytest.mark.parametrize("policy", ["none", "all"])
def test_the_first_node_up_after_the_whole_fleet_was_killed_obeys_catch_up(
    fleet: Fleet, reader: PostgresStore, policy: str
) -> None:
    declare = Scheduler(workers=1, store=PostgresStore(DSN, schema=fleet.schema, node="declare"))
    declare.schedule_at_fixed_rate(
        "tests.operations.tasks:noop", EVERY, EVERY, task_id="op", catch_up=policy, max_catch_up=2
    )
    declare.shutdown(timeout=10)
    names = fleet.start(2)
    deadline = reader.db_now() + 30.0
    while not any(run.task_id == "op" for run in reader.runs("op")):  # the fleet runs it
        wait_for_db_clock(reader, reader.db_now() + 0.05)
        assert reader.db_now() < deadline, "the fleet never ran the task"
    for name in names:
        fleet.kill(name)
    down = reader.db_now()
    wait_for_db_clock(reader, down + 5.5 * EVERY, timeout=30.0)  # five slots or so pass, nobody up
    seen = EventRecorder()
    back = Scheduler(
        workers=2,
        store=PostgresStore(DSN, schema=fleet.schema, node="back", lease=LEASE, poll=POLL),
        listeners=[seen],
    )
    try:
        up = reader.db_now()
        seen.wait_for(
            lambda events: sum(1 for e in events if e.task_id == "op" and e.kind is EventKind.COMPLETED) >= 2,
            30.0,
        )
        ran = sorted(run.due for run in reader.runs("op") if run.node == "back")
        assert len(ran) >= 2
        misses = _misses(seen.events)
        if policy == "none":
            assert ran[0] >= up - 0.5 * EVERY  # no late run: the first slot not past when it came up
            assert len(misses) >= 4
            assert set(misses) == {"catch_up"}
        else:  # the newest max_catch_up missed slots run at once, oldest first; older ones missed
            assert ran[0] < up - EVERY  # late: slots missed while the fleet was down
            assert ran[1] - ran[0] == pytest.approx(EVERY, abs=1e-3)
            assert len(misses) >= 2
            assert set(misses) == {"catch_up"}
    finally:
        back.shutdown(timeout=10)
