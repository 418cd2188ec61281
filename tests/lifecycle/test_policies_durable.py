"""A stored task's policies survive a restart, whose catch-up follows them (SQLite file, FakeClock).

The first scheduler runs the task at ``START`` and stops; the second starts on the same file
5.5 minutes later on the wall clock, so the slots at +1..+5 minutes passed while nothing ran.
The misses of a restart are decided as the store loads: ``Scheduler(listeners=...)`` sees them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from actors import FakeClock, Scheduler
from messages import EventKind
from tests.conftest import EventRecorder
from tests.durable import tasks
from tests.durable.files import START, stored

LATER = START + timedelta(minutes=5, seconds=30)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "schedule.db"


@pytest.fixture
def start(path: Path) -> Iterator[Callable[..., Scheduler]]:
    made: list[Scheduler] = []

    def make(wall: datetime = START, **kwargs: Any) -> Scheduler:
        scheduler = Scheduler(workers=2, clock=FakeClock(1000.0, wall_start=wall), store=path, **kwargs)
        made.append(scheduler)
        return scheduler

    tasks.CALLS.clear()
    yield make
    for scheduler in made:
        scheduler.shutdown(timeout=10)
    tasks.CALLS.clear()


def first_run_then_restart(
    start: Callable[..., Scheduler], recorder: EventRecorder, **options: Any
) -> Scheduler:
    first = start()
    first.schedule_at_fixed_rate(tasks.record, 60.0, task_id="minutely", **options)
    first.settle()
    first.shutdown(timeout=10)
    tasks.CALLS.clear()
    again = start(wall=LATER, listeners=[recorder])  # subscribed before the load
    again.settle()
    return again


def missed(recorder: EventRecorder) -> list[tuple[str | None, float | None]]:
    return [(e.reason, e.due_at) for e in recorder.events if e.kind is EventKind.MISSED]


def run_minutes() -> list[str]:
    return [key.split("T")[1][:5] for key, _, _ in tasks.CALLS]


def test_the_options_are_stored_as_json(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    s.schedule_at_fixed_rate(
        tasks.record, 60.0, task_id="minutely", catch_up="all", max_catch_up=3, jitter=0.5
    )
    s.shutdown(timeout=10)
    options = json.loads(stored(path)["minutely"].options_json)
    assert {key: options[key] for key in ("catch_up", "max_catch_up", "jitter")} == {
        "catch_up": "all",
        "max_catch_up": 3,
        "jitter": 0.5,
    }


def test_after_a_restart_catch_up_none_skips_what_passed(start: Callable[..., Scheduler]) -> None:
    recorder = EventRecorder()
    s = first_run_then_restart(start, recorder, catch_up="none")
    assert run_minutes() == []
    assert missed(recorder) == [("catch_up", 670.0 + 60.0 * k) for k in range(1, 6)]
    info = s.info("minutely")
    assert (info.missed_count, info.next_run_at) == (5, 1030.0)  # +6 minutes, 30 s from now


def test_after_a_restart_catch_up_all_runs_the_newest_max_catch_up(start: Callable[..., Scheduler]) -> None:
    recorder = EventRecorder()
    s = first_run_then_restart(start, recorder, catch_up="all", max_catch_up=2)
    assert run_minutes() == ["00:04", "00:05"]
    assert missed(recorder) == [("catch_up", 730.0), ("catch_up", 790.0), ("catch_up", 850.0)]
    info = s.info("minutely")
    assert (info.missed_count, info.next_run_at) == (3, 1030.0)


def test_after_a_restart_catch_up_latest_runs_once_late(start: Callable[..., Scheduler]) -> None:
    recorder = EventRecorder()
    s = first_run_then_restart(start, recorder)
    assert run_minutes() == ["00:01"]
    assert [reason for reason, _ in missed(recorder)] == ["catch_up"] * 4
    assert s.info("minutely").missed_count == 4
    assert s.info("minutely").next_run_at == 1030.0
