"""Wall-clock jumps: wall-clock tasks are re-planned, interval tasks are not, listeners are told.

``FakeClock.set_wall`` steps the wall clock alone, as an NTP step or a manual reset does; the
scheduler's timer is woken by it, so these tests wait for events, not for ``settle``, where
they show that the jump alone brings a run.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import pytest

import actors.runtime.timer
from actors import FakeClock, MissedRunError, Scheduler
from actors.sync.clock import Unwatch
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder

START = datetime(2026, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1000.0, wall_start=START)


def test_a_jump_forward_runs_what_became_due_once_and_says_so(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.CLOCK_JUMPED, EventKind.COMPLETED})
    meeting = s.schedule_once(lambda: "ran", at=START + timedelta(hours=1))
    later = s.schedule_once(lambda: "ran", at=START + timedelta(hours=3))
    s.settle()
    clock.set_wall(START + timedelta(hours=2))  # the timer notices: no settle() needed
    assert meeting.result(timeout=5) == "ran"
    recorder.wait_for(lambda events: any(e.kind is EventKind.CLOCK_JUMPED for e in events))
    jumped = [e for e in recorder.events if e.kind is EventKind.CLOCK_JUMPED]
    assert len(jumped) == 1
    assert jumped[0].jump == pytest.approx(7200.0)
    assert (jumped[0].task_id, jumped[0].name, jumped[0].at) == ("", "", clock.now())
    s.settle()
    info = later.info()
    assert info.status is TaskStatus.SCHEDULED
    assert info.next_run_wall == START + timedelta(hours=3)
    assert info.next_run_at == pytest.approx(clock.now() + 3600.0)


# Regression (issue 21, point 14): a jump after a cron task was scheduled but before the scheduler
# had handled any message was taken as the first reading of the wall offset: the task ran right,
# but CLOCK_JUMPED never came. The scheduler reads the offset as it starts, so the first task
# is planned against a known offset.
def test_a_jump_before_the_scheduler_handled_any_message_is_published(clock: FakeClock) -> None:
    recorder = EventRecorder()
    with Scheduler(workers=1, clock=clock, listeners=[recorder]) as s:
        runs: list[datetime] = []
        s.schedule_cron(lambda: runs.append(clock.wall()), "0 10 * * *")  # 10:00, in an hour
        clock.set_wall(START + timedelta(minutes=30))  # 09:30 on the wall, the clock unmoved
        s.advance(1800)
        jumped = [e for e in recorder.events if e.kind is EventKind.CLOCK_JUMPED]
        assert [e.jump for e in jumped] == [pytest.approx(1800.0)]
        assert runs == [START + timedelta(hours=1)]


def test_a_jump_back_runs_nothing_twice_and_nothing_early(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    hourly: list[datetime] = []
    s.schedule_cron(lambda: hourly.append(clock.wall()), "30 * * * *", task_id="hourly")
    once = s.schedule_once(clock.wall, at=START + timedelta(hours=1))
    s.advance(1800)  # 09:30: the cron job runs
    assert hourly == [START + timedelta(minutes=30)]
    clock.set_wall(START)  # back to 09:00
    s.settle()
    s.advance(1800)  # 09:30 again: it ran for 09:30 already, so nothing
    assert len(hourly) == 1
    assert not once.done()
    s.advance(1800)  # 10:00 on the wall: the one-time task is due now, not an hour of clock time ago
    assert once.result(timeout=5) == START + timedelta(hours=1)
    s.advance(1800)  # 10:30
    assert hourly == [START + timedelta(minutes=30), START + timedelta(minutes=90)]


def test_interval_tasks_keep_to_the_monotonic_clock(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    runs: list[float] = []
    s.schedule_at_fixed_rate(lambda: runs.append(clock.now()), 10.0, initial_delay=10.0)
    s.schedule_with_fixed_delay(lambda: runs.append(clock.now()), 10.0, initial_delay=10.0)
    single = s.schedule_once(lambda: None, 10.0)
    s.settle()
    clock.set_wall(START + timedelta(days=1))
    s.settle()
    clock.set_wall(START - timedelta(days=1))
    s.settle()
    assert runs == []
    assert not single.done()
    s.advance(10.0)
    assert runs == [1010.0, 1010.0]
    assert single.done()


def test_a_small_step_is_drift_not_a_jump(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.CLOCK_JUMPED})
    s.schedule_once(print, at=START + timedelta(hours=1))
    s.settle()
    clock.set_wall(START + timedelta(seconds=0.5))
    s.settle()
    clock.set_wall(START + timedelta(seconds=5))
    s.settle()
    assert [e.jump for e in recorder.events] == [pytest.approx(5.0)]  # measured from the last plan


def test_a_jump_past_misfire_grace_misses_the_run(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock, recorder: EventRecorder
) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds={EventKind.MISSED})
    task = s.schedule_once(print, at=START + timedelta(hours=1), misfire_grace=60.0)
    clock.set_wall(START + timedelta(hours=3))
    with pytest.raises(MissedRunError):
        task.result(timeout=5)
    s.settle()
    assert recorder.kinds() == [EventKind.MISSED]
    assert task.info().status is TaskStatus.FAILED


class SteppableRealClock:
    """The real monotonic clock with a wall clock that can be stepped *without telling anyone*,
    as the system clock is: only the timer's periodic check can notice."""

    def __init__(self) -> None:
        self.step = 0.0

    def now(self) -> float:
        return time.monotonic()

    def wall(self) -> datetime:
        return datetime.now(UTC) + timedelta(seconds=self.step)

    def sleep_time(self, deadline: float) -> float:
        return max(0.0, deadline - time.monotonic())

    def watch(self, callback: Callable[[], None]) -> Unwatch:
        return lambda: None


@pytest.mark.realtime
def test_the_timer_notices_a_silent_jump_on_its_periodic_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(actors.runtime.timer, "WALL_CHECK_INTERVAL", 0.05)  # 60 s in production
    clock = SteppableRealClock()
    ran = threading.Event()
    s = Scheduler(workers=1, clock=clock)
    try:
        s.schedule_once(ran.set, at=datetime.now(UTC) + timedelta(hours=1))
        s.settle()
        clock.step = 7200.0
        assert ran.wait(timeout=10.0)
        assert s.stats().timer_wakeups < 1000  # it slept between checks: no busy wait
    finally:
        s.shutdown(timeout=10)


def test_with_no_wall_clock_task_the_timer_does_not_poll(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    s.schedule_at_fixed_rate(print, 3600.0, initial_delay=3600.0)
    s.settle()
    before = s.stats().timer_wakeups
    clock.set_wall(START + timedelta(days=1))  # nobody is due on the wall clock: no reason to wake
    s.settle()
    assert s.stats().timer_wakeups == before
    assert math.isclose(s.tasks()[0].next_run_at or 0.0, clock.now() + 3600.0)
