"""Pause, resume, run now and reschedule of durable (SQLite) tasks, and what a restart keeps of them.

A restart is a new ``Scheduler`` on the same file after the first one shut down; every change
is committed when its call returns.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from actors import Scheduler
from messages import Cron, FixedDelay, FixedRate, Once, TaskStatus
from tests.durable import tasks
from tests.durable.files import START, stored
from tests.shared import tasks as gates


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


def test_a_reschedule_survives_a_restart(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    s.schedule_at_fixed_rate(
        tasks.noop, 10.0, 10.0, task_id="moved", name="kept name", misfire_grace=5.0, overlap="queue"
    )
    s.schedule_with_fixed_delay(tasks.noop, 10.0, 10.0, task_id="cron")
    s.schedule_at_fixed_rate(tasks.noop, 10.0, 10.0, task_id="once")
    assert s.reschedule("moved", FixedRate(1000.0)) is True
    assert s.reschedule("cron", Cron("0 3 * * *", "UTC")) is True
    assert s.reschedule("once", Once(delay=500.0)) is True
    assert stored(path)["moved"].next_due == (START + timedelta(seconds=1000)).timestamp()  # committed
    s.shutdown(wait=True, timeout=10)

    again = start()
    moved = again.info("moved")
    assert moved.trigger == FixedRate(1000.0, 2000.0)  # its grid from the reschedule, not the old one
    assert moved.next_run_wall == START + timedelta(seconds=1000)
    assert moved.name == "kept name"  # its options kept
    assert json.loads(stored(path)["moved"].options_json)["overlap"] == "queue"
    cron = again.info("cron")
    assert isinstance(cron.trigger, Cron)
    assert cron.trigger.expr == "0 3 * * *"
    assert cron.next_run_wall == START + timedelta(hours=3)
    assert isinstance(again.info("once").trigger, Once)  # one-time now
    assert again.info("once").next_run_wall == START + timedelta(seconds=500)
    again.advance(100.0)
    assert again.info("moved").run_count == 0  # the old 10 s grid is gone
    again.advance(900.0)
    assert again.info("moved").run_count == 1
    assert again.info("once").run_count == 1


def test_a_reschedule_during_a_run_survives_a_restart(start: Callable[..., Scheduler], path: Path) -> None:
    gates.reset()
    s = start()
    s.schedule_at_fixed_rate(gates.gate, 10.0, 0.0, args=("busy",), task_id="busy")  # due now
    assert gates.entered("busy", 10.0)
    try:
        assert s.reschedule("busy", FixedDelay(300.0)) is True  # committed, its run in flight
        row = stored(path)["busy"]
        assert '"delay"' in row.trigger_json
        assert row.next_due == (START + timedelta(seconds=300)).timestamp()
    finally:
        gates.open_gate("busy")
    s.settle()
    assert s.info("busy").run_count == 1
    s.shutdown(wait=True, timeout=10)
    gates.reset()

    again = start()
    info = again.info("busy")
    assert isinstance(info.trigger, FixedDelay)
    assert info.trigger.delay == 300.0
    assert info.next_run_wall == START + timedelta(seconds=300)  # from the reschedule, as committed
