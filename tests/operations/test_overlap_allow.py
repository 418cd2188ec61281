"""``overlap="allow"`` with ``max_instances=N``: the same in memory, on SQLite and on PostgreSQL.

Every test runs on the three stores (``conftest.Rig``), the task durable on SQLite and
PostgreSQL (there its runs go on beside one another under one lease, on the node that holds
it: ``actors/shared/node.py``; ``tests/shared/test_allow_shared.py`` has the fleet's cases).
Runs are held at a gate (``tasks.hold``) while the test looks; waits are on events and the
gate's condition, never sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from actors import Retry, Scheduler, TaskTimeoutError
from messages import EventKind, TaskStatus
from tests.operations import tasks
from tests.operations.conftest import Rig


@pytest.fixture(autouse=True)
def _held() -> Iterator[None]:
    tasks.reset_held()
    tasks.RUNNING.clear()
    yield
    tasks.reset_held()


def _options(rig: Rig, **more: Any) -> dict[str, Any]:
    """``overlap="allow"`` options: a durable task on SQLite and PostgreSQL (their default)."""
    return {"overlap": "allow", **more}


def _advance(rig: Rig) -> None:
    """One interval passes while runs are held (FakeClock: moved, its timer wakes; PostgreSQL: real)."""
    if rig.fake:
        rig.clock.advance(rig.interval)


def _missed(rig: Rig, s: Scheduler) -> list[str | None]:
    return [e.reason for e in rig.events(s).events if e.task_id == "op" and e.kind is EventKind.MISSED]


def test_up_to_n_runs_go_at_once_each_numbered_and_a_slot_beyond_is_missed(rig: Rig) -> None:
    s = rig.start(workers=4)
    s.schedule_at_fixed_rate(tasks.hold, rig.interval, 0.0, task_id="op", **_options(rig, max_instances=2))
    assert tasks.wait_held(1, rig.timeout) == [1]
    _advance(rig)
    assert tasks.wait_held(2, rig.timeout) == [1, 2]
    _advance(rig)  # two go: this slot is missed, as "skip" misses it
    rig.events(s).wait_for(lambda _: "overlap" in _missed(rig, s), rig.timeout)
    info = s.info("op")
    assert info.active_runs == 2
    if rig.kind != "postgres":  # (PostgreSQL keeps no missed count in its row: the events say)
        assert info.missed_count >= 1
    assert info.status is TaskStatus.SCHEDULED  # waiting for its next slot meanwhile
    tasks.RELEASE.set()
    rig.wait_runs(s, "op", 2)
    runs = s.history("op")
    assert {1, 2} <= {r.run for r in runs}
    assert len({r.run for r in runs}) == len(runs)  # each run its own number
    recorded = rig.events(s)  # events come through the event bus, after the history has them
    recorded.wait_for(
        lambda _: (
            {e.run for e in recorded.events if e.task_id == "op" and e.kind is EventKind.COMPLETED} >= {1, 2}
        ),
        rig.timeout,
    )
    events = [(e.kind, e.run) for e in recorded.events if e.task_id == "op"]
    for run in (1, 2):  # each run's own events, in its order
        mine = [kind for kind, number in events if number == run and kind is not EventKind.MISSED]
        assert mine[:3] == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED]


def test_run_now_starts_another_run_while_fewer_than_n_go(rig: Rig) -> None:
    s = rig.start(workers=4)
    s.schedule_at_fixed_rate(tasks.hold, 1000.0, 0.0, task_id="op", **_options(rig, max_instances=2))
    assert tasks.wait_held(1, rig.timeout) == [1]
    assert s.run_now("op") is True
    assert tasks.wait_held(2, rig.timeout) == [1, 2]
    assert s.run_now("op") is False  # two go: refused, nothing queued
    tasks.RELEASE.set()
    rig.wait_runs(s, "op", 2)
    assert sorted((r.run, r.manual) for r in s.history("op")) == [(1, False), (2, True)]
    assert s.info("op").run_count == 2


def test_cancel_stops_future_runs_and_the_task_ends_with_its_last_run(rig: Rig) -> None:
    s = rig.start(workers=4)
    handle = s.schedule_at_fixed_rate(tasks.hold, 1000.0, 0.0, task_id="op", **_options(rig, max_instances=3))
    assert tasks.wait_held(1, rig.timeout) == [1]
    assert s.run_now("op") is True
    assert tasks.wait_held(2, rig.timeout) == [1, 2]
    assert handle.cancel() is True
    assert s.info("op").status is TaskStatus.RUNNING  # its runs go on
    assert s.run_now("op") is False
    tasks.RELEASE.set()

    def ended() -> tuple[TaskStatus, int, int]:
        info = s.info("op")
        return info.status, info.run_count, info.active_runs

    rig.events(s).wait_for(lambda _: s.info("op").status is TaskStatus.CANCELLED, rig.timeout)
    # On PostgreSQL the row can say CANCELLED before the last run's save has brought its counts
    # (what is awaited is in the database, not in an event here): poll the row, with a deadline.
    deadline = time.monotonic() + rig.timeout
    while ended() != (TaskStatus.CANCELLED, 2, 0) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ended() == (TaskStatus.CANCELLED, 2, 0)


def test_a_durable_allow_task_keeps_its_policy_over_a_restart(rig: Rig) -> None:
    if not rig.durable:
        return  # nothing to keep in memory
    s = rig.start(workers=4)
    s.schedule_at_fixed_rate(tasks.hold, 1000.0, 1000.0, task_id="op", overlap="allow", max_instances=2)
    s.shutdown(timeout=10)
    again = rig.start("b", workers=4)
    assert again.run_now("op") is True
    assert tasks.wait_held(1, rig.timeout) == [1]  # (PostgreSQL: b claims it, and holds it from then)
    assert again.run_now("op") is True  # the kept policy: two at once
    assert sorted(tasks.wait_held(2, rig.timeout)) == [1, 2]
    assert again.run_now("op") is False
    tasks.RELEASE.set()
    rig.wait_runs(again, "op", 2)
    assert [r.run for r in again.history("op")] in ([2, 1], [1, 2])


def test_each_run_has_its_own_timeout_and_only_the_late_one_fails(rig: Rig) -> None:
    s = rig.start(workers=4)
    timeout = 5.0 if rig.fake else 0.5
    options = _options(rig, max_instances=2, timeout=timeout)
    s.schedule_at_fixed_rate(tasks.stall_first, 1000.0, 0.0, task_id="op", **options)
    assert tasks.RUNNING.wait(rig.timeout)  # run 1 goes, until its deadline
    assert s.run_now("op") is True  # run 2 beside it returns at once, before its own deadline
    events = rig.events(s)
    events.wait_for(lambda _: s.info("op").run_count >= 1, rig.timeout)
    if rig.fake:
        rig.clock.advance(timeout)  # run 1's deadline (run 2 has ended)
    events.wait_for(lambda _: s.info("op").failure_count >= 1, rig.timeout)
    info = s.info("op")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 2, 1, 0,
    )  # fmt: skip
    failed = [e for e in events.events if e.task_id == "op" and e.kind is EventKind.FAILED]
    assert [(e.run, type(e.error)) for e in failed] == [(1, TaskTimeoutError)]
    assert sorted((r.run, r.outcome) for r in s.history("op")) == [(1, "timed_out"), (2, "completed")]


def test_each_run_has_its_own_retries_under_its_own_number(rig: Rig) -> None:
    s = rig.start(workers=4)
    delay = 5.0 if rig.fake else 0.2
    options = _options(rig, max_instances=2, retry=Retry(attempts=2, delay=delay, jitter=0.0))
    s.schedule_at_fixed_rate(tasks.fail_first, 1000.0, 0.0, task_id="op", **options)
    events = rig.events(s)
    events.wait_for(lambda got: any(e.task_id == "op" and e.retrying for e in got), rig.timeout)
    assert s.run_now("op") is True  # run 1 waits for its retry: run 2 goes beside it
    if rig.fake:
        events.wait_for(lambda _: s.info("op").run_count >= 1, rig.timeout)  # run 2, while 1 waits
        assert s.info("op").active_runs == 1
        rig.clock.advance(delay)
    events.wait_for(lambda _: s.info("op").run_count >= 2, rig.timeout)
    info = s.info("op")
    assert (info.status, info.run_count, info.failure_count, info.active_runs) == (
        TaskStatus.SCHEDULED, 2, 0, 0,
    )  # fmt: skip
    runs = sorted((r.run, r.outcome, r.attempt) for r in s.history("op"))
    assert runs == [(1, "completed", 2), (2, "completed", 1)]
