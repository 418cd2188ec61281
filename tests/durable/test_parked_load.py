"""A restart parks the store's one-time tasks (untracked tuples) until they need a record.

Real SQLite files and a FakeClock, as in ``test_durable_scheduler.py``: what the user sees of a
parked task (runs, arguments, counters, cancel, handles, shutdown) is what a loaded record shows.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from concurrent.futures import CancelledError
from datetime import timedelta
from pathlib import Path

import pytest

from actors import Scheduler, SQLiteStore
from actors.cli.holdback import FAR_AWAY, HoldBackStore
from actors.store import LoadsInParts, StoredTask
from messages import EventKind, TaskStatus
from tests.conftest import EventRecorder
from tests.durable import tasks
from tests.durable.files import START, stored


def test_a_parked_stored_task_runs_with_its_json_arguments_at_its_time(
    start: Callable[..., Scheduler],
) -> None:
    first = start()
    first.schedule_once(tasks.echo, delay=30.0, args=(1, (2, 3)), kwargs={"t": (4,)}, task_id="job")
    first.shutdown()
    s = start()
    info = s.info("job")
    assert (info.status, info.name, info.next_run_at) == (TaskStatus.SCHEDULED, "echo", 1030.0)
    handle = s.handle("job")
    s.advance(30.0)
    assert handle.result(timeout=5) == ((1, [2, 3]), {"t": [4]})


def test_parked_tasks_come_due_in_order_and_their_ends_are_stored(
    start: Callable[..., Scheduler], path: Path
) -> None:
    first = start()
    for n, delay in enumerate([3.0, 1.0, 2.0]):
        first.schedule_once(tasks.record, delay=delay, args=(n,), task_id=f"t{n}")
    first.shutdown()
    s = start()
    s.advance(5.0)
    assert [call[1] for call in tasks.CALLS] == [(1,), (2,), (0,)]
    assert {task_id: row.status for task_id, row in stored(path).items()} == dict.fromkeys(
        ["t0", "t1", "t2"], "completed"
    )


def test_cancel_by_id_of_a_parked_task_is_committed(
    start: Callable[..., Scheduler], path: Path, recorder: EventRecorder
) -> None:
    first = start()
    first.schedule_once(tasks.record, delay=10.0, task_id="job")
    first.shutdown()
    s = start()
    s.subscribe(recorder)
    assert s.cancel("job") is True
    assert stored(path)["job"].status == "cancelled"
    s.advance(20.0)
    assert tasks.CALLS == []
    recorder.wait_for(lambda events: [e.kind for e in events] == [EventKind.CANCELLED])


def test_shutdown_leaves_parked_tasks_in_the_store(start: Callable[..., Scheduler], path: Path) -> None:
    first = start()
    first.schedule_once(tasks.record, delay=10.0, task_id="kept")
    first.shutdown()
    second = start()
    held = second.handle("kept")  # unparked: its handle sees it detach
    second.schedule_once(tasks.record, delay=10.0, task_id="other")
    second.shutdown()
    with pytest.raises(Exception, match="stays in the store"):
        held.result(timeout=5)
    assert {row.task_id for row in stored(path).values() if row.status == "scheduled"} == {"kept", "other"}
    third = start()
    assert sorted(info.task_id for info in third.tasks()) == ["kept", "other"]


def test_a_due_parked_task_runs_as_the_scheduler_starts(
    start: Callable[..., Scheduler], recorder: EventRecorder
) -> None:
    first = start()
    first.schedule_once(tasks.record, delay=5.0, task_id="due")
    first.shutdown()
    s = start(wall=START + timedelta(seconds=10), listeners=[recorder])  # it is overdue as the store loads
    s.settle()
    recorder.wait_for(lambda events: EventKind.COMPLETED in [e.kind for e in events])
    assert s.info("due").status is TaskStatus.COMPLETED


def test_recurring_and_failed_tasks_load_as_records_beside_parked_ones(
    start: Callable[..., Scheduler], path: Path
) -> None:
    first = start()
    first.schedule_at_fixed_rate(tasks.record, 10.0, task_id="rate")
    first.schedule_once(tasks.record, delay=5.0, task_id="once")
    first.shutdown()
    s = start()
    s.advance(10.0)
    ran = [key.split("@")[0] for key, _, _ in tasks.CALLS]
    assert ran.count("once") == 1
    assert s.info("rate").run_count == ran.count("rate") >= 1
    assert s.info("rate").status is TaskStatus.SCHEDULED


def test_a_load_of_one_time_tasks_leaves_the_collector_almost_nothing(
    start: Callable[..., Scheduler],
) -> None:
    n = 10_000
    first = start()
    for i in range(n):
        first.schedule_once(tasks.record, delay=600.0 + i, args=(i, "x"))
    first.shutdown()
    gc.collect()
    before = len(gc.get_objects())
    s = start()
    gc.collect()
    assert s.stats().live_tasks == n
    assert len(gc.get_objects()) - before < n * 0.1  # a record each would be n at least


def test_sqlite_stores_load_in_parts_and_the_hold_back_store_holds_back_there_too(path: Path) -> None:
    with Scheduler(workers=1, store=path) as s:
        for i in range(3):
            s.schedule_once(tasks.record, delay=60.0, task_id=f"t{i}")
    store = HoldBackStore(path, hold={"t1"})
    store.open()
    try:
        assert isinstance(store, LoadsInParts)
        parts: list[list[StoredTask]] = []
        store.load_parts(parts.append)
        loaded = [task for part in parts for task in part]
        assert [task.task_id for task in loaded] == ["t0", "t1", "t2"]
        assert [task.next_due == FAR_AWAY for task in loaded] == [False, True, False]
        assert store.load() == loaded
    finally:
        store.close()


def test_a_parked_task_whose_function_no_longer_imports_fails_when_it_runs(
    start: Callable[..., Scheduler], path: Path
) -> None:
    first = start()
    first.schedule_once(tasks.record, delay=1.0, task_id="gone")
    first.shutdown()
    db = SQLiteStore(path)
    db.open()
    try:
        with db._connection() as conn:  # the module was renamed since: the stored reference is stale
            conn.execute("UPDATE task SET fn_ref = 'tests.durable.no_such_module:record'")
    finally:
        db.close()
    s = start()
    handle = s.handle("gone")
    s.advance(1.0)
    with pytest.raises(ImportError):
        handle.result(timeout=5)


def test_a_handle_of_a_cancelled_parked_task_says_cancelled(start: Callable[..., Scheduler]) -> None:
    first = start()
    first.schedule_once(tasks.record, delay=1.0, task_id="job")
    first.shutdown()
    s = start()
    handle = s.handle("job")
    assert handle.cancel() is True
    with pytest.raises(CancelledError):
        handle.result(timeout=5)
