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
