"""Pause and resume on the FakeClock: what runs, what waits, the status, the events, bad input."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from actors import FakeClock, Scheduler
from messages import EventKind, Pause, Resume, TaskStatus
from tests.conftest import EventRecorder, Gate


class Times:
    """A task body that records the clock time of each of its runs."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.at: list[float] = []

    def __call__(self) -> None:
        self.at.append(self.clock.now())


def test_a_paused_fixed_rate_task_does_not_run_and_catches_up_once_on_resume(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.PAUSED, EventKind.RESUMED})
    times = Times(clock)
    handle = s.schedule_at_fixed_rate(times, 10.0, task_id="rate")
    s.advance(15.0)
    assert times.at == [1000.0, 1010.0]
    assert s.pause("rate") is True
    assert s.info("rate").status is TaskStatus.PAUSED
    assert s.info("rate").next_run_at is None
    assert not handle.done()
    s.advance(40.0)  # 1015 .. 1055: the slots 1020 .. 1050 pass while paused
    assert times.at == [1000.0, 1010.0]
    assert s.resume("rate") is True
    s.settle()
    assert times.at == [1000.0, 1010.0, 1055.0]  # "latest": one late run for the missed slots
    assert s.info("rate").status is TaskStatus.SCHEDULED
    assert s.info("rate").next_run_at == 1060.0  # the grid did not move
    s.advance(10.0)
    assert times.at[-1] == 1060.0
    s.settle()
    assert [e.kind for e in recorder.events] == [EventKind.PAUSED, EventKind.RESUMED]
    assert s.info("rate").run_count == 4


def test_a_missed_slot_beyond_misfire_grace_is_not_run_on_resume(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED})
    times = Times(clock)
    s.schedule_at_fixed_rate(times, 10.0, 5.0, task_id="graced", misfire_grace=1.0)
    s.pause("graced")
    s.advance(30.0)
    s.resume("graced")
    s.settle()
    assert times.at == []
    # Every slot the pause cost is MISSED: the one that would run late, past its grace, and the
    # ones the catch-up policy ("latest") skipped.
    assert [(e.reason, e.due_at) for e in recorder.events] == [
        ("misfire", 1005.0),
        ("catch_up", 1015.0),
        ("catch_up", 1025.0),
    ]
    assert s.info("graced").next_run_at == 1035.0


def test_a_fixed_delay_task_resumes_delay_after_the_resume(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    s.schedule_with_fixed_delay(times, 10.0, task_id="delay")
    s.settle()
    assert s.pause("delay") is True
    s.advance(25.0)
    assert s.resume("delay") is True
    assert s.info("delay").next_run_at == 1035.0
    s.advance(10.0)
    assert times.at == [1000.0, 1035.0]


def test_a_run_in_progress_finishes_and_the_task_then_waits_paused(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    gate = Gate()
    s.schedule_at_fixed_rate(gate, 10.0, task_id="busy")
    gate.wait_started()
    assert s.pause("busy") is True
    assert s.info("busy").status is TaskStatus.PAUSED
    assert s.pause("busy") is False  # already paused
    gate.open()
    s.advance(35.0)  # off the grid: the one late run, not also a slot due right then
    info = s.info("busy")
    assert (info.status, info.run_count) == (TaskStatus.PAUSED, 1)
    assert s.resume("busy") is True
    s.settle()
    info = s.info("busy")
    assert (info.run_count, info.next_run_at) == (2, 1040.0)


def test_a_paused_task_can_be_cancelled(make_scheduler: Callable[..., Scheduler], clock: FakeClock) -> None:
    s = make_scheduler()
    times = Times(clock)
    handle = s.schedule_once(times, 5.0, task_id="once")
    assert s.pause("once") is True
    s.advance(10.0)
    assert times.at == []
    assert s.cancel("once") is True
    assert handle.info().status is TaskStatus.CANCELLED
    assert s.resume("once") is False
    assert s.pause("once") is False


def test_a_paused_one_time_task_runs_late_on_resume(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    handle = s.schedule_once(times, 5.0)
    assert s.pause(handle.task_id) is True
    s.advance(10.0)
    s.resume(handle.task_id)
    handle.result(timeout=5)
    assert times.at == [1010.0]


def test_unknown_ended_and_odd_ids_give_false(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: None, 0.0)
    handle.result(timeout=5)
    for task_id in ("nope", handle.task_id, 42, None):
        assert s.pause(task_id) is False  # type: ignore[arg-type]
        assert s.resume(task_id) is False  # type: ignore[arg-type]
    live = s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0)
    assert s.resume(live.task_id) is False  # not paused


def test_the_actor_answers_pause_and_resume_messages(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0, task_id="msg")
    assert s.ref.ask(Pause("msg"), timeout=5) is True
    assert s.ref.ask(Pause("msg"), timeout=5) is False
    assert s.info("msg").status is TaskStatus.PAUSED
    assert s.ref.ask(Resume("msg"), timeout=5) is True
    assert s.ref.ask(Resume("nope"), timeout=5) is False


def test_pause_after_shutdown_is_false(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0, task_id="late")
    s.shutdown(wait=True, timeout=10)
    assert s.pause("late") is False
    assert s.resume("late") is False


def test_a_task_paused_while_it_waits_for_a_worker_does_not_run(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler(workers=1)
    gate = Gate()
    s.schedule_once(gate, 0.0)
    gate.wait_started()
    times = Times(clock)
    s.schedule_once(times, 0.0, task_id="queued")
    assert s.pause("queued") is True
    gate.open()
    s.settle()
    assert times.at == []
    assert s.info("queued").status is TaskStatus.PAUSED
    s.resume("queued")
    s.settle()
    assert times.at == [1000.0]


@pytest.mark.parametrize("kind", [EventKind.PAUSED, EventKind.RESUMED])
def test_the_events_name_the_task(
    make_scheduler: Callable[..., Scheduler], recorder: EventRecorder, kind: EventKind
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={kind})
    s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0, task_id="named", name="the name")
    s.pause("named")
    s.resume("named")
    s.settle()
    (event,) = recorder.events
    assert (event.kind, event.task_id, event.name, event.run) == (kind, "named", "the name", None)


def test_a_task_of_schedule_many_can_be_paused_and_resumed(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    first, second = s.schedule_many(times, [5.0, 5.0])
    assert s.pause(first) is True
    s.advance(10.0)
    assert times.at == [1005.0]  # only the other one ran
    assert s.info(first).status is TaskStatus.PAUSED
    assert s.resume(first) is True
    s.settle()
    assert times.at == [1005.0, 1010.0]
    assert s.info(second).status is TaskStatus.COMPLETED


def test_shutdown_ends_a_paused_task_cancelled(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    handle = s.schedule_at_fixed_rate(lambda: None, 10.0, 5.0)
    s.pause(handle.task_id)
    s.shutdown(wait=True, timeout=10)
    assert handle.info().status is TaskStatus.CANCELLED
