"""Cron tasks through the facade, on the FakeClock: the DST policy, misfire, restarts, messages.

Each run records the fake wall clock as it ran; ``Scheduler.advance`` steps through every due
time, so a run happens exactly at its due instant and the recorded times are exact.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from actors import FakeClock, Scheduler
from messages import Cron, EventKind, Schedule, TaskStatus
from tests.conftest import EventRecorder

BERLIN = ZoneInfo("Europe/Berlin")


class WallLog:
    """A task that records the (fake) wall-clock time of each of its runs, in UTC."""

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.times: list[datetime] = []
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            self.times.append(self.clock.wall().astimezone(UTC))


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


@pytest.fixture
def at_wall(make_scheduler: Callable[..., Scheduler]) -> Callable[[datetime], tuple[Scheduler, FakeClock]]:
    """A scheduler on a FakeClock whose wall reading starts at the given instant."""

    def make(wall: datetime) -> tuple[Scheduler, FakeClock]:
        clock = FakeClock(1000.0, wall_start=wall)
        return make_scheduler(clock=clock), clock

    return make


def test_spring_forward_a_time_in_the_gap_runs_once_right_after_it(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, clock = at_wall(utc(2026, 3, 28, 0, 0))
    log = WallLog(clock)
    s.schedule_cron(log, "30 2 * * *", "Europe/Berlin")
    s.advance(3 * 86400)
    # 28th: 02:30 CET = 01:30 UTC; 29th: 02:30 does not exist -> 03:00 CEST = 01:00 UTC; 30th: 00:30 UTC
    assert log.times == [utc(2026, 3, 28, 1, 30), utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]


def test_fall_back_a_time_in_the_repeated_hour_runs_once_at_the_first(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, clock = at_wall(utc(2026, 10, 24, 12, 0))
    log = WallLog(clock)
    s.schedule_cron(log, "30 2 * * *", "Europe/Berlin")
    s.advance(2 * 86400)
    assert log.times == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]


def test_an_hourly_job_follows_real_hours_through_both_changes(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, clock = at_wall(utc(2026, 10, 24, 23, 30))
    log = WallLog(clock)
    s.schedule_cron(log, "0 * * * *", "Europe/Berlin")
    s.advance(3 * 3600)
    # 01:00 CEST, 02:00 CEST, 02:00 CET (again), ...: every real hour
    assert log.times == [utc(2026, 10, 25, 0, 0), utc(2026, 10, 25, 1, 0), utc(2026, 10, 25, 2, 0)]
    assert [t.astimezone(BERLIN).hour for t in log.times] == [2, 2, 3]


def test_next_run_wall_and_trigger_are_shown_exactly(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, _ = at_wall(utc(2026, 3, 1, 0, 0))
    monthly = s.schedule_cron(print, "0 0 31 * *", BERLIN, task_id="monthly")
    leap = s.schedule_cron(print, "0 0 29 2 *", task_id="leap")
    info = monthly.info()
    assert info.trigger == Cron("0 0 31 * *", "Europe/Berlin")
    assert info.status is TaskStatus.SCHEDULED
    assert info.next_run_wall == datetime(2026, 3, 31, tzinfo=BERLIN).astimezone(UTC)
    assert leap.info().next_run_wall == utc(2028, 2, 29)
    assert leap.info().trigger == Cron("0 0 29 2 *", "UTC")


def test_a_monthly_job_on_the_31st_skips_short_months(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, clock = at_wall(utc(2026, 1, 1))
    log = WallLog(clock)
    s.schedule_cron(log, "0 12 31 * *")
    s.advance(220 * 86400)
    assert [t.month for t in log.times] == [1, 3, 5, 7]


def test_a_zone_with_a_half_hour_shift(at_wall: Callable[..., tuple[Scheduler, FakeClock]]) -> None:
    # Australia/Lord_Howe moves from +10:30 to +11 at 02:00 local on 2026-10-04: 02:00-02:30 is skipped.
    s, clock = at_wall(utc(2026, 10, 3, 14, 0))  # 00:30 local
    log = WallLog(clock)
    s.schedule_cron(log, "15 2 * * *", "Australia/Lord_Howe")
    s.advance(86400)
    assert [t.astimezone(ZoneInfo("Australia/Lord_Howe")).strftime("%H:%M") for t in log.times] == ["02:30"]


@pytest.mark.parametrize(
    ("expr", "tz", "words"),
    [
        ("61 * * * *", "UTC", "minute"),
        ("0 25 * * *", "UTC", "hour"),
        ("0 0 * * FUNDAY", "UTC", "day-of-week"),
        ("* * *", "UTC", "5"),
        ("0 9 * * *", "Mars/Olympus_Mons", "Mars/Olympus_Mons"),
    ],
)
def test_a_bad_expression_or_zone_is_a_value_error_at_the_call(
    make_scheduler: Callable[..., Scheduler], expr: str, tz: str, words: str
) -> None:
    s = make_scheduler()
    with pytest.raises(ValueError, match=words):
        s.schedule_cron(print, expr, tz)
    assert s.tasks() == []


def test_a_cron_schedule_message_is_taken_like_the_others(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]],
) -> None:
    s, clock = at_wall(utc(2026, 5, 1, 8, 59))
    log = WallLog(clock)
    assert s.ref.ask(Schedule(fn=log, trigger=Cron("@hourly"), task_id="hourly"), timeout=5) is True
    assert s.ref.ask(Schedule(fn=log, trigger=Cron("not cron")), timeout=5) is False
    s.advance(3600)
    assert log.times == [utc(2026, 5, 1, 9, 0)]
    assert s.info("hourly").trigger == Cron("@hourly", "UTC")


def test_late_slots_coalesce_into_one_run_and_misfire_grace_skips_them(
    at_wall: Callable[..., tuple[Scheduler, FakeClock]], recorder: EventRecorder
) -> None:
    s, clock = at_wall(utc(2026, 5, 1, 8, 30))
    s.subscribe(recorder, kinds={EventKind.MISSED, EventKind.COMPLETED})
    late = WallLog(clock)
    strict = WallLog(clock)
    s.schedule_cron(late, "0 * * * *", task_id="late")
    s.schedule_cron(strict, "0 * * * *", task_id="strict", misfire_grace=60.0)
    clock.advance(3 * 3600)  # a stall: 09:00, 10:00 and 11:00 all pass at once
    s.settle()
    assert late.times == [utc(2026, 5, 1, 11, 30)]  # one run for the three slots
    assert strict.times == []
    misses = sorted((e.task_id, e.reason) for e in recorder.events if e.kind is EventKind.MISSED)
    # 09:00 too late for strict (misfire); 10:00 and 11:00 passed while nothing ran, for both.
    assert misses == [("late", "catch_up")] * 2 + [("strict", "catch_up")] * 2 + [("strict", "misfire")]
    assert s.info("late").next_run_wall == s.info("strict").next_run_wall == utc(2026, 5, 1, 12, 0)
    s.advance(3600)
    assert late.times[1:] == strict.times == [utc(2026, 5, 1, 12, 0)]


def test_a_durable_cron_task_comes_back_after_a_restart(
    tmp_path: Path, make_scheduler: Callable[..., Scheduler]
) -> None:
    path = tmp_path / "cron.db"
    first = make_scheduler(clock=FakeClock(1000.0, wall_start=utc(2026, 4, 30, 8, 30)), store=path)
    first.schedule_cron("tests.durable.tasks:record", "0 9 * * MON-FRI", "Europe/Berlin", task_id="report")
    first.shutdown()
    clock = FakeClock(5.0, wall_start=utc(2026, 5, 4, 6, 0))  # Monday 08:00 Berlin, three days later
    again = make_scheduler(clock=clock, store=path)
    info = again.info("report")
    assert info.trigger == Cron("0 9 * * MON-FRI", "Europe/Berlin")
    # Friday's 09:00 slot was missed while down: it runs once, now; then Monday 09:00 Berlin.
    again.settle()
    assert again.info("report").run_count == 1
    assert again.info("report").next_run_wall == utc(2026, 5, 4, 7, 0)
