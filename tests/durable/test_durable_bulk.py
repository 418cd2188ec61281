"""``schedule_many(..., durable=True)`` on SQLite: committed in one go, run as usual, loaded on restart.

Real SQLite files and a FakeClock (``conftest.py``). Bad input commits nothing: every check
runs before the transaction.
"""

from __future__ import annotations

import gc
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from actors import FakeClock, Scheduler, SQLiteStore
from actors.errors import StoreError, UnknownTaskError
from messages import TaskStatus
from tests.durable import tasks
from tests.durable.files import START, stored

START_WALL = START.timestamp()


def _sorted_calls() -> list[tuple[object, ...]]:
    return sorted(call[1] for call in tasks.CALLS)


def test_the_tasks_are_committed_before_it_returns_with_store_ids(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    ids = s.schedule_many(tasks.record, [5.0, 1.0, 3.0], args=[(0,), (1, (2, 3)), ()], durable=True)

    rows = stored(path)  # read through a connection of the test's own: committed
    assert [rows[task_id].args_json for task_id in ids] == ["[0]", "[1, [2, 3]]", "[]"]
    assert all(task_id.startswith("task-") and task_id[5:].isdigit() for task_id in ids)
    assert [rows[task_id].next_due for task_id in ids] == [
        START_WALL + 5.0,
        START_WALL + 1.0,
        START_WALL + 3.0,
    ]
    assert {rows[task_id].fn_ref for task_id in ids} == {"tests.durable.tasks:record"}
    assert [s.info(task_id).status for task_id in ids] == [TaskStatus.SCHEDULED] * 3


def test_they_run_at_their_times_with_json_arguments_and_their_ends_are_stored(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    ids = s.schedule_many(tasks.echo, [2.0, 1.0], args=[(1, (2,)), ("x",)], kwargs={"k": (3,)}, durable=True)
    handles = [s.handle(task_id) for task_id in ids]

    s.advance(1.0)
    assert handles[1].result(timeout=5) == (("x",), {"k": [3]})  # what JSON gives back
    assert not handles[0].done()
    s.advance(1.0)
    assert handles[0].result(timeout=5) == ((1, [2]), {"k": [3]})
    s.settle()
    assert [stored(path)[task_id].status for task_id in ids] == ["completed", "completed"]


def test_a_restart_loads_the_pending_ones(start: Callable[..., Scheduler], path: Path) -> None:
    first = start()
    ids = first.schedule_many(tasks.record, [1.0, 10.0, 20.0], args=[(0,), (1,), (2,)], durable=True)
    first.advance(1.0)
    first.settle()
    assert _sorted_calls() == [(0,)]
    first.shutdown()

    second = start()
    assert [second.info(task_id).status for task_id in ids[1:]] == [TaskStatus.SCHEDULED] * 2
    assert second.info(ids[1]).next_run_at == 1010.0  # its wall-clock due time, on the new clock
    second.advance(20.0)
    second.settle()
    assert _sorted_calls() == [(0,), (1,), (2,)]
    assert {stored(path)[task_id].status for task_id in ids} == {"completed"}


def test_cancel_by_id_is_committed_and_options_are_stored(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    ids = s.schedule_many(tasks.record, [5.0, 5.0], name="bulk", timeout=3.0, misfire_grace=1.0, durable=True)
    assert s.cancel(ids[0]) is True
    assert stored(path)[ids[0]].status == "cancelled"
    assert s.info(ids[1]).name == "bulk"
    s.shutdown()

    again = start()
    info = again.info(ids[1])
    assert (info.status, info.name) == (TaskStatus.SCHEDULED, "bulk")
    with pytest.raises(UnknownTaskError):
        again.info(ids[0])


def test_default_and_false_stay_in_memory(start: Callable[..., Scheduler], path: Path) -> None:
    s = start()
    memory = s.schedule_many(tasks.record, [5.0]) + s.schedule_many(tasks.record, [5.0], durable=False)
    assert all(task_id.startswith("task-m") for task_id in memory)
    assert stored(path) == {}


@pytest.mark.parametrize(
    ("fn", "options", "error", "match"),
    [
        (lambda: None, {}, ValueError, "lambda"),
        (tasks.record, {"args": [(1,), ({1, 2},)]}, TypeError, r"args\[1\]"),
        (tasks.record, {"args": [(1,), ({1: 2},)]}, TypeError, "key"),
        (tasks.record, {"kwargs": {"k": object()}}, TypeError, "kwargs"),
        (tasks.record, {"delays": [1.0, float("nan")]}, ValueError, "delays"),
        (tasks.record, {"delays": [1.0, 1e300]}, ValueError, "latest"),
        (tasks.record, {"durable": "yes"}, TypeError, "durable"),
    ],
)
def test_bad_input_commits_nothing(
    start: Callable[..., Scheduler],
    path: Path,
    fn: Callable[..., object],
    options: dict[str, Any],
    error: type[Exception],
    match: str,
) -> None:
    s = start()
    options = {"delays": [1.0, 2.0], "durable": True, **options}
    with pytest.raises(error, match=match):
        s.schedule_many(fn, **options)
    assert stored(path) == {}
    assert s.tasks() == []


def test_durable_true_without_a_store_is_refused() -> None:
    with Scheduler(workers=1) as s, pytest.raises(ValueError, match="needs a store"):
        s.schedule_many(tasks.record, [1.0], durable=True)


class _FailingBulk(SQLiteStore):
    def add_many(self, tasks: object) -> list[int]:  # type: ignore[override]
        raise StoreError("the disk is full (a test's)")


def test_a_failed_commit_schedules_nothing(path: Path) -> None:
    with Scheduler(workers=1, clock=FakeClock(1000.0), store=_FailingBulk(path)) as s:
        with pytest.raises(StoreError, match="disk is full"):
            s.schedule_many(tasks.record, [1.0, 2.0], durable=True)
        assert s.tasks() == []
        s.advance(5.0)
    assert tasks.CALLS == []


def test_pending_bulk_tasks_wait_as_untracked_tuples(start: Callable[..., Scheduler]) -> None:
    s = start()
    gc.collect()
    before = len(gc.get_objects())
    s.schedule_many(tasks.record, [100.0] * 2000, args=[(n, "x") for n in range(2000)], durable=True)
    s.settle()
    gc.collect()
    assert len(gc.get_objects()) - before < 200  # not thousands of records, argument lists and dicts


def test_the_file_holds_them_in_one_transaction_s_worth_of_rows(
    start: Callable[..., Scheduler], path: Path
) -> None:
    s = start()
    ids = s.schedule_many(tasks.noop, [60.0] * 3000, durable=True)
    with sqlite3.connect(path) as db:
        seqs = [seq for (seq,) in db.execute("SELECT seq FROM task ORDER BY seq")]
    assert len(seqs) == len(ids) == 3000
    assert seqs == list(range(seqs[0], seqs[0] + 3000))  # one insert after another, in order
