"""Pause, resume, run now and reschedule of durable (SQLite) tasks, within one process.

The paused flag is not stored yet (issue 24's durable part): these tests hold that the
operations work on a durable task, and that what the store keeps stays right meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from actors import Scheduler
from messages import FixedRate, TaskStatus
from tests.durable import tasks
from tests.durable.files import START, stored


def test_operations_on_a_durable_task(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.noop, 10.0, 10.0, task_id="stored")
    assert s.pause("stored") is True
    assert s.info("stored").status is TaskStatus.PAUSED
    s.advance(25.0)
    assert s.run_now("stored") is True
    s.settle()
    assert s.info("stored").run_count == 1  # the run now stood for the slots it missed
    assert stored(path)["stored"].run_count == 1
    assert s.resume("stored") is True
    assert s.info("stored").next_run_wall == START + timedelta(seconds=30)
    assert s.reschedule("stored", FixedRate(60.0)) is True  # committed when it returns
    assert s.info("stored").next_run_wall == START + timedelta(seconds=85)
    assert stored(path)["stored"].next_due == (START + timedelta(seconds=85)).timestamp()


def test_a_paused_task_stays_paused_after_a_restart(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    s.schedule_at_fixed_rate(tasks.noop, 10.0, 10.0, task_id="kept")
    s.schedule_many(tasks.noop, [30.0])  # memory-only: not in the store
    once = s.schedule_once(tasks.noop, 20.0, task_id="once")
    assert s.pause("kept") is True
    assert s.pause(once.task_id) is True
    assert stored(path)["kept"].status == "scheduled"  # committed as it returned: a kill -9 keeps it
    s.shutdown(wait=True, timeout=10)

    again = start()
    assert again.info("kept").status is TaskStatus.PAUSED
    assert again.info("once").status is TaskStatus.PAUSED
    again.advance(65.0)  # off its grid
    assert again.info("kept").run_count == 0
    assert again.resume("kept") is True
    again.settle()
    assert again.info("kept").run_count == 1  # one late run ("latest")
    again.shutdown(wait=True, timeout=10)

    third = start()
    assert third.info("kept").status is TaskStatus.SCHEDULED  # the resume was committed too
    assert third.info("once").status is TaskStatus.PAUSED
