"""``reschedule`` on the FakeClock: a new trigger, counters kept, nothing run at once, bad input."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from actors import FakeClock, Scheduler
from messages import Cron, FixedDelay, FixedRate, Once, Reschedule, TaskStatus
from tests.conftest import Gate


class Times:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.at: list[float] = []

    def __call__(self, *args: object) -> None:
        self.at.append(self.clock.now())


def test_a_new_interval_counts_from_now_and_runs_nothing_at_once(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    s.schedule_at_fixed_rate(times, 10.0, task_id="rate", name="kept", max_consecutive_failures=3)
    s.advance(15.0)
    assert times.at == [1000.0, 1010.0]
    assert s.reschedule("rate", FixedRate(30.0)) is True
    s.settle()
    info = s.info("rate")
    assert (info.next_run_at, info.trigger.interval, info.run_count, info.name) == (1045.0, 30.0, 2, "kept")  # type: ignore[union-attr]
    s.advance(60.0)
    assert times.at == [1000.0, 1010.0, 1045.0, 1075.0]


def test_a_trigger_that_says_at_once_runs_at_once(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    s.schedule_once(times, 100.0, task_id="once")
    assert s.reschedule("once", FixedDelay(5.0, initial_delay=0.0)) is True
    s.settle()
    assert times.at == [1000.0]
    assert s.info("once").next_run_at == 1005.0


def test_a_recurring_task_becomes_one_time_and_back(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    handle = s.schedule_at_fixed_rate(times, 10.0, 10.0, task_id="r", args=(1,))
    assert s.reschedule("r", Once(1003.0)) is True
    s.advance(5.0)
    assert times.at == [1003.0]
    assert handle.info().status is TaskStatus.COMPLETED


def test_reschedule_to_cron_and_a_paused_task_stays_paused(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    times = Times(clock)
    s.schedule_at_fixed_rate(times, 10.0, 10.0, task_id="c")
    s.pause("c")
    assert s.reschedule("c", Cron("*/5 * * * *")) is True
    assert s.info("c").status is TaskStatus.PAUSED
    s.advance(600.0)
    assert times.at == []
    s.resume("c")
    s.settle()
    nxt = s.info("c").next_run_at
    assert nxt is not None
    assert nxt >= clock.now() - 300


def test_a_run_in_progress_finishes_and_the_new_trigger_applies_after_it(
    make_scheduler: Callable[..., Scheduler], clock: FakeClock
) -> None:
    s = make_scheduler()
    gate = Gate()
    s.schedule_at_fixed_rate(gate, 10.0, task_id="busy")
    gate.wait_started()
    assert s.reschedule("busy", FixedRate(50.0)) is True
    gate.open()
    s.settle()
    info = s.info("busy")
    assert (info.run_count, info.next_run_at) == (1, 1050.0)


def test_bad_triggers_raise_and_change_nothing(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    s.schedule_at_fixed_rate(lambda: None, 10.0, 10.0, task_id="t")
    before = s.info("t")
    with pytest.raises(TypeError, match="trigger"):
        s.reschedule("t", 5.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="has 3 fields"):
        s.reschedule("t", Cron("not a cron"))
    with pytest.raises(ValueError, match="unknown time zone"):
        s.reschedule("t", Cron("* * * * *", "Nowhere/Atlantis"))
    assert s.info("t") == before
    with pytest.raises(ValueError, match="greater than zero"):
        FixedRate(-1.0)
    with pytest.raises(TypeError):
        Reschedule("t", "every minute")  # type: ignore[arg-type]


def test_unknown_and_ended_tasks_give_false(make_scheduler: Callable[..., Scheduler]) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: None, 0.0)
    handle.result(timeout=5)
    assert s.reschedule(handle.task_id, FixedRate(1.0)) is False
    assert s.reschedule("nope", Once(delay=1.0)) is False
    assert s.ref.ask(Reschedule("nope", Once(delay=1.0)), timeout=5) is False
