"""One-time tasks through the facade, on a FakeClock."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from actors import FakeClock
from messages import EventKind, TaskStatus


def test_runs_once_at_its_due_time(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    ran_at: list[float] = []
    handle = s.schedule_once(lambda: ran_at.append(clock.now()), delay=5.0)
    s.advance(4.999)
    assert ran_at == []
    assert handle.info().status is TaskStatus.SCHEDULED
    assert handle.info().next_run_at == 1005.0
    s.advance(10.0)
    assert ran_at == [1005.0]
    info = handle.info()
    assert (info.status, info.run_count, info.next_run_at) == (TaskStatus.COMPLETED, 1, None)


@pytest.mark.parametrize("when", [{"delay": -3.0}, {"delay": 0.0}, {"at": 10.0}])
def test_a_past_time_means_as_soon_as_possible(make_scheduler, clock: FakeClock, when) -> None:
    s = make_scheduler()
    ran_at: list[float] = []
    s.schedule_once(lambda: ran_at.append(clock.now()), **when)
    s.settle()
    assert ran_at == [1000.0]


def test_result_returns_the_value(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda x, y: x * y, delay=0, args=(6,), kwargs={"y": 7})
    assert handle.result(timeout=5) == 42
    assert handle.done()


def test_result_times_out_while_pending(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: None, delay=60)
    with pytest.raises(TimeoutError):
        handle.result(timeout=0.01)
    assert not handle.done()


def test_an_aware_datetime_is_a_wall_clock_instant(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    ran_at: list[float] = []
    s.schedule_once(lambda: ran_at.append(clock.now()), at=clock.wall() + timedelta(seconds=30))
    s.advance(10.0)
    clock.set_wall(clock.wall() + timedelta(seconds=15))  # the wall clock is stepped forward
    s.advance(4.0)
    assert ran_at == []
    s.advance(1.0)  # 30 s after scheduling on the wall clock, 15 s of clock time
    assert ran_at == [1015.0]


def test_naive_datetime_is_rejected(make_scheduler) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match="aware"):
        s.schedule_once(lambda: None, at=datetime(2030, 1, 1))


def test_events_of_a_run_arrive_in_order(make_scheduler, recorder, clock: FakeClock) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    handle = s.schedule_once(lambda: None, delay=2.0, name="nightly")
    s.advance(2.0)
    assert recorder.kinds() == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED]
    for event in recorder.events:
        assert (event.task_id, event.name, event.run, event.due_at) == (handle.task_id, "nightly", 1, 1002.0)
        assert event.at == 1002.0


def test_subscription_to_some_kinds_gets_only_those(make_scheduler, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder, kinds=[EventKind.COMPLETED])
    s.schedule_once(lambda: None, delay=0)
    s.settle()
    assert recorder.kinds() == [EventKind.COMPLETED]


def test_cancelled_subscription_gets_nothing_more(make_scheduler, recorder) -> None:
    s = make_scheduler()
    subscription = s.subscribe(recorder)
    s.schedule_once(lambda: None, delay=0)
    s.settle()
    subscription.cancel()
    s.schedule_once(lambda: None, delay=0)
    s.settle()
    assert len(recorder.events) == 3


def test_snapshots_show_the_next_run_on_the_wall_clock(make_scheduler, clock) -> None:
    from datetime import UTC, datetime

    s = make_scheduler()
    handle = s.schedule_once(lambda: None, delay=90)
    info = handle.info()
    assert info.next_run_at == clock.now() + 90
    assert info.next_run_wall == datetime(2026, 1, 1, 0, 1, 30, tzinfo=UTC)
    assert "wall=2026-01-01T00:00:00+00:00" in repr(s)


# Regression (issue 22, point 12): TaskInfo's repr showed monotonic clock times (first_at=799.5)
# that nobody can read. Each is followed by its wall-clock instant, and str() is one line of
# wall-clock time; a finished task's snapshot still knows how the clocks related.
def test_task_info_shows_wall_clock_times_beside_clock_times(make_scheduler, clock) -> None:
    s = make_scheduler()
    every = s.schedule_at_fixed_rate(lambda: None, 60.0, 30.0, task_id="every-minute", name="beat")
    once = s.schedule_once(lambda: None, 10.0, task_id="once")
    s.advance(40)
    info = every.info()
    assert f"first_at={clock.now() - 10.0!r} [2026-01-01T00:00:30+00:00]" in repr(info)
    assert f"next_run_at={info.next_run_at!r} [2026-01-01T00:01:30+00:00]" in repr(info)
    assert str(info) == (
        "task 'every-minute' (beat): scheduled, next run 2026-01-01 00:01:30+00:00, 1 runs, 0 failed"
    )
    finished = s.info("once")
    assert finished.next_run_at is None
    assert "at=1010.0 [2026-01-01T00:00:10+00:00]" in repr(finished)
    assert finished == once.info()  # the clock reading it carries is not part of the task's state
