"""Catch-up after downtime, the same on SQLite and on PostgreSQL (memory keeps nothing to catch up).

The scheduler (on PostgreSQL: the whole fleet) is stopped while due times pass, then one starts
again: the task's ``catch_up`` decides what the passed times get, as at a restart's load.
SQLite runs on the FakeClock; on PostgreSQL the downtime is the row's times moved back
(``Rig.down_for``) and the node starts for real.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from actors import Scheduler
from messages import EventKind
from tests.operations import tasks
from tests.operations.conftest import Rig


@pytest.fixture
def durable(rig: Rig) -> Rig:
    if not rig.durable:
        pytest.skip("nothing outlives a memory scheduler")
    return rig


def _every(rig: Rig) -> float:
    # On PostgreSQL the downtime must be longer than a live fleet's claim takes (lease + poll).
    return 10.0 if rig.fake else 2.0


def _reasons(rig: Rig, s: Scheduler, task_id: str) -> list[str | None]:
    return [e.reason for e in rig.events(s).events if e.task_id == task_id and e.kind is EventKind.MISSED]


def _dues(s: Scheduler, task_id: str) -> list[datetime]:
    return [record.due_wall for record in reversed(s.history(task_id))]  # oldest first


def _restart_after(rig: Rig, first: Scheduler, downtime: float) -> Scheduler:
    first.shutdown(timeout=10)
    rig.down_for(downtime)
    return rig.start("b")


def _first_slot(rig: Rig, s: Scheduler, downtime: float) -> datetime:
    """The task "op"'s next slot, as the store will have it after ``downtime`` (``Rig.down_for``)."""
    first = s.info("op").next_run_wall
    assert first is not None
    return first if rig.fake else first - timedelta(seconds=downtime)  # PostgreSQL: moved back


def _close(rig: Rig, got: datetime, want: datetime) -> bool:
    return abs((got - want).total_seconds()) < rig.tolerance


def _slots(got: datetime, first: datetime, every: float) -> int:
    """How many slots after ``first`` the due time ``got`` is."""
    return round((got - first).total_seconds() / every)


# On PostgreSQL the node's start takes real time after the downtime, so a slot more may pass
# before it claims: the tests count the slots passed from the runs that follow.


def test_catch_up_none_skips_the_times_missed_while_down_to_the_first_slot_not_past(durable: Rig) -> None:
    every = _every(durable)
    s = durable.start()
    s.schedule_at_fixed_rate(tasks.note, every, every, task_id="op", catch_up="none")
    first = _first_slot(durable, s, 4.5 * every)
    s = _restart_after(durable, s, 4.5 * every)  # the slots first .. first + 3 passed
    if durable.fake:
        s.settle()
        assert tasks.runs("op") == []  # no late run
        durable.clock.advance(0.5 * every)
    durable.wait_runs(s, "op", 1)
    durable.events(s).wait_for(lambda _: len(s.history("op")) >= 1, durable.timeout)
    passed = _slots(_dues(s, "op")[0], first, every)  # its first run: the first slot not past
    assert passed == 4 if durable.fake else passed >= 4
    assert _reasons(durable, s, "op") == ["catch_up"] * passed


def test_catch_up_all_runs_the_newest_max_catch_up_times_missed_while_down_oldest_first(durable: Rig) -> None:
    every = _every(durable)
    s = durable.start()
    s.schedule_at_fixed_rate(tasks.note, every, every, task_id="op", catch_up="all", max_catch_up=3)
    first = _first_slot(durable, s, 4.5 * every)
    s = _restart_after(durable, s, 4.5 * every)  # the slots first .. first + 3 passed
    durable.wait_runs(s, "op", 3)
    durable.events(s).wait_for(lambda _: len(s.history("op")) >= 3, durable.timeout)
    slots = [_slots(due, first, every) for due in _dues(s, "op")[:3]]
    assert slots == [1, 2, 3] if durable.fake else slots == list(range(slots[0], slots[0] + 3))
    assert slots[0] >= 1
    assert _reasons(durable, s, "op") == ["catch_up"] * slots[0]  # the oldest: beyond max_catch_up


def test_catch_up_latest_runs_once_late_after_downtime(durable: Rig) -> None:
    every = _every(durable)
    s = durable.start()
    s.schedule_at_fixed_rate(tasks.note, every, every, task_id="op")
    first = _first_slot(durable, s, 4.5 * every)
    s = _restart_after(durable, s, 4.5 * every)
    durable.wait_runs(s, "op", 1)
    durable.events(s).wait_for(lambda _: len(s.history("op")) >= 1, durable.timeout)
    assert _slots(_dues(s, "op")[0], first, every) == 0  # the oldest, late
    durable.events(s).wait_for(lambda _: len(_reasons(durable, s, "op")) >= 3, durable.timeout)
    skipped = len(_reasons(durable, s, "op"))
    assert skipped == 3 if durable.fake else skipped >= 3
    assert _reasons(durable, s, "op") == ["catch_up"] * skipped  # the slots after it


def test_catch_up_none_of_a_fixed_delay_task_runs_delay_after_the_restart(durable: Rig) -> None:
    every = _every(durable)
    s = durable.start()
    s.schedule_with_fixed_delay(tasks.note, every, every, task_id="op", catch_up="none")
    s = _restart_after(durable, s, 3 * every)  # its due time passed two delays ago
    restarted = s.clock.wall()
    if durable.fake:
        s.settle()
        assert tasks.runs("op") == []
        durable.clock.advance(every)
    durable.wait_runs(s, "op", 1)
    durable.events(s).wait_for(lambda _: len(s.history("op")) >= 1, durable.timeout)
    assert _close(durable, _dues(s, "op")[0], restarted + timedelta(seconds=every))
    assert _reasons(durable, s, "op") == ["catch_up"]


# -- resume: the times missed while paused, by the same policy (memory too) -------------------------


def test_resume_with_catch_up_none_skips_the_slots_missed_while_paused(rig: Rig) -> None:
    s = rig.start()
    rig.witness(s)
    s.schedule_at_fixed_rate(tasks.note, rig.interval, rig.interval, task_id="op", catch_up="none")
    first = s.info("op").next_run_wall
    assert first is not None
    assert s.pause("op") is True
    rig.slots(s, 3)  # the slots first, first + 1 passed (FakeClock: first + 2 is due now)
    assert s.resume("op") is True
    rig.wait_runs(s, "op", 1)
    rig.events(s).wait_for(lambda _: len(s.history("op")) >= 1, rig.timeout)
    passed = _slots(s.history("op")[-1].due_wall, first, rig.interval)  # its first run
    assert passed == 2 if rig.fake else passed >= 2
    assert _reasons(rig, s, "op") == ["catch_up"] * passed  # no late run: each missed, then the grid


def test_resume_with_catch_up_all_runs_each_slot_missed_while_paused(rig: Rig) -> None:
    s = rig.start()
    rig.witness(s)
    s.schedule_at_fixed_rate(tasks.note, rig.interval, rig.interval, task_id="op", catch_up="all")
    first = s.info("op").next_run_wall
    assert first is not None
    assert s.pause("op") is True
    rig.slots(s, 3)
    assert s.resume("op") is True
    rig.wait_runs(s, "op", 3)
    rig.events(s).wait_for(lambda _: len(s.history("op")) >= 3, rig.timeout)
    slots = [_slots(record.due_wall, first, rig.interval) for record in reversed(s.history("op"))][:3]
    assert slots == [0, 1, 2]  # each, oldest first
    assert _reasons(rig, s, "op") == []


def test_resume_of_a_cron_task_skips_to_its_first_time_not_past_with_catch_up_none(rig: Rig) -> None:
    s = rig.start()
    s.schedule_cron(tasks.note, "* * * * *", task_id="op", catch_up="none")
    due = s.info("op").next_run_wall
    assert due is not None
    assert s.pause("op") is True
    # Minutes pass while paused: FakeClock 170 s (00:00 -> 02:50, due 01:00); on PostgreSQL its
    # stored due time moves three minutes back (the next minute is then the first not past).
    rig.down_for(170.0 if rig.fake else 180.0)
    following = due + timedelta(seconds=120.0) if rig.fake else due
    assert s.resume("op") is True
    rig.settle(s)
    rig.events(s).wait_for(lambda _: len(_reasons(rig, s, "op")) >= 2, rig.timeout)
    rig.events(s).wait_for(lambda _: (s.info("op").next_run_wall or due) >= following, rig.timeout)
    reasons = _reasons(rig, s, "op")
    assert reasons == ["catch_up"] * (2 if rig.fake else len(reasons))
    assert len(reasons) >= 2
    assert all(record.due_wall >= following for record in s.history("op"))  # no late run
    if rig.fake:
        assert s.info("op").next_run_wall == following
