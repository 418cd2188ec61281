"""Pause, resume, run now and reschedule: the same behaviour in memory, on SQLite and on PostgreSQL.

Every test runs on the three stores (``conftest.Rig``): memory and SQLite on the FakeClock,
PostgreSQL on the database's clock with real short intervals (a witness task's runs show the
slots passing; waits are on events, never sleeps).
"""

from __future__ import annotations

from datetime import timedelta

from actors import Scheduler
from messages import EventKind, FixedRate, TaskStatus
from tests.operations import tasks
from tests.operations.conftest import Rig
from tests.shared import tasks as gates


def _kinds(rig: Rig, s: Scheduler, task_id: str) -> list[EventKind]:
    return rig.events(s).kinds(task_id)


def test_a_paused_task_does_not_run_until_resumed(rig: Rig) -> None:
    s = rig.start()
    rig.witness(s)
    s.schedule_at_fixed_rate(tasks.note, rig.interval, rig.interval, task_id="op")
    assert s.pause("op") is True
    assert s.pause("op") is False  # already paused
    paused = s.info("op")
    assert paused.status is TaskStatus.PAUSED
    assert paused.next_run_at is None  # as in memory
    assert paused.next_run_wall is None
    rig.slots(s, 3)
    assert tasks.runs("op") == []
    assert s.info("op").status is TaskStatus.PAUSED
    assert s.resume("op") is True
    assert s.resume("op") is False  # not paused any more
    assert s.info("op").status in (TaskStatus.SCHEDULED, TaskStatus.RUNNING)
    rig.wait_runs(s, "op", 1)  # "latest": one late run for the slots it missed, then its grid
    assert tasks.runs("op")[0] is False
    rig.events(s).wait_for(lambda events: EventKind.RESUMED in rig.events(s).kinds("op"), rig.timeout)
    kinds = _kinds(rig, s, "op")
    assert kinds.index(EventKind.PAUSED) < kinds.index(EventKind.RESUMED)


def test_run_now_on_a_paused_task_runs_once_and_it_stays_paused(rig: Rig) -> None:
    s = rig.start()
    rig.witness(s)
    s.schedule_at_fixed_rate(tasks.note, 100 * rig.interval, 100 * rig.interval, task_id="op")
    assert s.pause("op") is True
    assert s.run_now("op") is True
    rig.wait_runs(s, "op", 1)
    assert tasks.runs("op") == [True]  # current_run().manual
    rig.slots(s, 2)
    assert tasks.runs("op") == [True]  # one run, and still paused
    info = s.info("op")
    assert info.status is TaskStatus.PAUSED
    assert info.run_count == 1


def test_run_now_keeps_the_grid(rig: Rig) -> None:
    s = rig.start()
    rig.witness(s)
    first = 50 * rig.interval
    s.schedule_at_fixed_rate(tasks.note, 100 * rig.interval, first, task_id="op")
    due = s.info("op").next_run_wall
    assert due is not None
    assert s.run_now("op") is True
    rig.wait_runs(s, "op", 1)
    rig.slots(s, 1)  # the outcome is in (its run ended a slot ago)
    info = s.info("op")
    assert tasks.runs("op") == [True]
    assert info.status is TaskStatus.SCHEDULED
    assert info.next_run_wall is not None
    assert abs((info.next_run_wall - due).total_seconds()) < rig.tolerance  # the slot it waited for


def test_reschedule_counts_from_now(rig: Rig) -> None:
    s = rig.start()
    s.schedule_at_fixed_rate(tasks.note, 1000.0, 1000.0, task_id="op")
    before = s.clock.wall()
    assert s.reschedule("op", FixedRate(50.0)) is True
    after = s.clock.wall()
    info = s.info("op")
    assert info.next_run_wall is not None
    assert before + timedelta(seconds=50 - rig.tolerance) <= info.next_run_wall
    assert info.next_run_wall <= after + timedelta(seconds=50 + rig.tolerance)
    assert info.trigger.interval == 50.0  # type: ignore[union-attr]
    assert tasks.runs("op") == []  # nothing at once


def test_unknown_and_ended_tasks_are_refused(rig: Rig) -> None:
    s = rig.start()
    for operation in (s.pause, s.resume, s.run_now):
        assert operation("nobody") is False
    assert s.reschedule("nobody", FixedRate(5.0)) is False
    s.schedule_once(tasks.note, 0.0, task_id="done")
    rig.wait_runs(s, "done", 1)
    rig.events(s).wait_for(lambda events: any(e.task_id == "done" and e.final for e in events), rig.timeout)
    assert s.pause("done") is False
    assert s.resume("done") is False
    assert s.run_now("done") is False
    assert s.reschedule("done", FixedRate(5.0)) is False


def test_run_now_while_a_run_is_in_progress_is_refused(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    s.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op")  # due now
    assert gates.entered("op", rig.timeout)
    try:
        assert s.run_now("op") is False  # overlap "skip": nothing queued
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 1)
    gates.reset()


def test_a_paused_task_stays_paused_after_a_restart(rig: Rig) -> None:
    if not rig.durable:
        return  # nothing outlives a memory scheduler
    s = rig.start()
    s.schedule_at_fixed_rate(tasks.note, rig.interval, rig.interval, task_id="op")
    assert s.pause("op") is True
    s.shutdown(timeout=10)
    again = rig.start("b")
    rig.witness(again)
    assert again.info("op").status is TaskStatus.PAUSED
    rig.slots(again, 3)
    assert tasks.runs("op") == []
    assert again.resume("op") is True
    rig.wait_runs(again, "op", 1)


def test_a_run_in_progress_finishes_after_a_pause_and_the_task_stays_paused(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    rig.witness(s)
    s.schedule_at_fixed_rate(gates.gate, rig.interval, 0.0, args=("op",), task_id="op")  # due now
    assert gates.entered("op", rig.timeout)
    try:
        assert s.pause("op") is True
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 1)  # it finished, and counted
    rig.slots(s, 3)
    info = s.info("op")
    assert info.status is TaskStatus.PAUSED
    assert info.run_count == 1
    gates.reset()


def test_a_reschedule_during_a_run_applies_from_its_end(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    s.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op")  # due now
    assert gates.entered("op", rig.timeout)
    try:
        before = s.clock.wall()
        assert s.reschedule("op", FixedRate(500.0)) is True
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 1)
    rig.events(s).wait_for(lambda _: s.info("op").status is TaskStatus.SCHEDULED, rig.timeout)
    info = s.info("op")
    assert info.next_run_wall is not None
    due = (info.next_run_wall - before).total_seconds()
    assert 500.0 - rig.tolerance <= due <= 500.0 + rig.tolerance + (0.0 if rig.fake else 5.0)
    assert info.trigger.interval == 500.0  # type: ignore[union-attr]
    gates.reset()


def test_run_now_while_a_run_is_in_progress_queues_one_run_with_overlap_queue(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    s.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op", overlap="queue")
    assert gates.entered("op", rig.timeout)
    try:
        assert s.run_now("op") is True  # one run waits for the run in progress
        assert s.run_now("op") is False  # at most one
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 2)
    info = s.info("op")
    assert info.run_count == 2
    assert info.next_run_wall is not None  # back on its grid, 1000 s from its first slot
    gates.reset()


def test_run_now_with_overlap_queue_runs_the_extra_run_manual_and_keeps_the_grid(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    s.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op", overlap="queue")
    assert gates.entered("op", rig.timeout)
    first = s.history
    try:
        assert s.run_now("op") is True
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 2)
    rig.events(s).wait_for(lambda _: len(first("op")) == 2, rig.timeout)
    assert [record.manual for record in first("op")] == [True, False]  # newest first
    rig.events(s).wait_for(lambda _: s.info("op").status is TaskStatus.SCHEDULED, rig.timeout)
    info = s.info("op")
    assert info.next_run_wall is not None
    due = (info.next_run_wall - first("op")[-1].due_wall).total_seconds()
    assert abs(due - 1000.0) < rig.tolerance  # the slot after the first run's, not counted anew
    gates.reset()


def test_run_now_with_overlap_replace_asks_the_run_in_progress_to_make_way(rig: Rig) -> None:
    s = rig.start()
    s.schedule_at_fixed_rate(tasks.make_way, 1000.0, 0.0, task_id="op", overlap="replace")
    assert tasks.RUNNING.wait(rig.timeout)
    assert s.run_now("op") is True  # the run in progress is asked to stop, then the extra run starts
    rig.wait_runs(s, "op", 2)
    assert tasks.runs("op") == [False, True]
    if rig.durable:  # a store's run ledger keeps the run that made way, "cancelled"
        rig.events(s).wait_for(lambda _: len(s.history("op")) == 2, rig.timeout)
        records = s.history("op")
        assert [(r.manual, r.outcome) for r in records] == [(True, "completed"), (False, "cancelled")]
    rig.events(s).wait_for(lambda _: s.info("op").run_count == 2, rig.timeout)
    assert s.info("op").status is TaskStatus.SCHEDULED  # the task goes on


def test_run_now_with_overlap_skip_while_a_run_is_in_progress_is_refused_and_queues_nothing(rig: Rig) -> None:
    gates.reset()
    s = rig.start()
    s.schedule_at_fixed_rate(gates.gate, 1000.0, 0.0, args=("op",), task_id="op")
    assert gates.entered("op", rig.timeout)
    try:
        assert s.run_now("op") is False
    finally:
        gates.open_gate("op")
    rig.wait_runs(s, "op", 1)
    rig.events(s).wait_for(lambda _: s.info("op").status is TaskStatus.SCHEDULED, rig.timeout)
    info = s.info("op")
    assert info.run_count == 1
    assert info.next_run_wall is not None
    assert (info.next_run_wall - s.clock.wall()).total_seconds() > 900.0  # nothing queued: its next slot
    gates.reset()


def test_a_reschedule_survives_a_restart(rig: Rig) -> None:
    if not rig.durable:
        return  # nothing outlives a memory scheduler
    s = rig.start()
    s.schedule_at_fixed_rate(tasks.note, 1000 * rig.interval, 1000 * rig.interval, task_id="op")
    assert s.reschedule("op", FixedRate(2 * rig.interval)) is True
    due = s.info("op").next_run_wall
    assert due is not None
    s.shutdown(timeout=10)
    again = rig.start("b")
    rig.witness(again)
    info = again.info("op")
    assert info.trigger.interval == 2 * rig.interval  # type: ignore[union-attr]
    assert info.next_run_wall is not None
    assert abs((info.next_run_wall - due).total_seconds()) < rig.tolerance
    rig.slots(again, 2)
    rig.wait_runs(again, "op", 1)  # on its new trigger, not 1000 intervals away


def test_history_marks_a_run_now_run_manual(rig: Rig) -> None:
    s = rig.start()
    s.schedule_at_fixed_rate(tasks.note, 1000 * rig.interval, 1000 * rig.interval, task_id="op")
    assert s.run_now("op") is True
    rig.wait_runs(s, "op", 1)
    rig.events(s).wait_for(lambda _: bool(s.history("op")), rig.timeout)
    records = s.history("op")
    assert [record.manual for record in records] == [True]
    assert records[0].outcome == "completed"
