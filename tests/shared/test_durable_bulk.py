"""``schedule_many(..., durable=True)`` on a shared PostgreSQL store: committed at once, run by any node.

Time is real and the database's; nodes are schedulers in this process (``conftest.py``).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import CancelledError, ThreadPoolExecutor
from typing import Any

import pytest

from actors import Scheduler
from actors.store import PostgresStore, TaskDefinition
from messages import TaskStatus
from tests.shared import tasks
from tests.shared.conftest import Node
from tests.store.pg import DSN


def _wait_for(predicate: Callable[[], bool], timeout: float = 15.0, what: str = "the condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what} never came true"
        time.sleep(0.02)


def _runs(reader: PostgresStore) -> list[Any]:
    return list(reversed(reader.runs(limit=100_000)))


def test_the_rows_are_committed_when_it_returns_with_ids_of_the_store(
    node: Node, reader: PostgresStore
) -> None:
    a, b = node("a"), node("b")
    first = a.schedule_many(tasks.record, [60.0, 61.0], args=[(1, (2,)), ("x",)], name="bulk", durable=True)
    second = b.schedule_many(tasks.noop, [60.0] * 3, durable=True)

    ids = first + second
    assert len(set(ids)) == 5
    assert all(task_id.startswith("task-") and task_id[5:].isdigit() for task_id in ids)
    rows = {row.task_id: row for row in reader.tasks()}
    assert set(rows) == set(ids)
    assert [rows[task_id].args_json for task_id in first] == ["[1, [2]]", '["x"]']
    assert {rows[task_id].fn_ref for task_id in first} == {"tests.shared.tasks:record"}
    assert rows[first[1]].next_due - rows[first[0]].next_due == pytest.approx(1.0, abs=0.01)
    assert all(row.status == "scheduled" for row in rows.values())
    info = b.info(first[0])  # any node knows them: they are in the store
    assert (info.status, info.name) == (TaskStatus.SCHEDULED, "bulk")


def test_each_runs_once_on_whichever_node_claims_it(node: Node, reader: PostgresStore) -> None:
    a, b = node("a", workers=3), node("b", workers=3)
    ids = a.schedule_many(
        tasks.record, [0.05 * (i % 4) for i in range(120)], args=[(i,) for i in range(120)], durable=True
    )

    _wait_for(lambda: len(_runs(reader)) == 120, what="120 runs")
    assert Counter(run.task_id for run in _runs(reader)) == Counter(dict.fromkeys(ids, 1))
    with tasks.LOCK:
        assert sorted(args for _, args in tasks.CALLS) == [(i,) for i in range(120)]
    _wait_for(lambda: all(row.status == "completed" for row in reader.tasks()), what="all completed")
    assert b.info(ids[0]).status is TaskStatus.COMPLETED


def test_another_node_runs_them_after_the_one_that_scheduled_them_stopped(
    node: Node, reader: PostgresStore
) -> None:
    a = node("a")
    ids = a.schedule_many(tasks.record, [0.5, 0.5], args=[("one",), ("two",)], durable=True)
    a.shutdown()
    node("b")

    _wait_for(lambda: len(_runs(reader)) == 2, what="both runs")
    assert {run.task_id for run in _runs(reader)} == set(ids)


def test_a_cancel_from_another_node_is_committed_and_the_run_never_happens(
    node: Node, reader: PostgresStore
) -> None:
    a, b = node("a"), node("b")
    kept, cancelled = a.schedule_many(
        tasks.record, [1.0, 1.0], args=[("kept",), ("cancelled",)], durable=True
    )
    handle = a.handle(cancelled)

    assert b.cancel(cancelled) is True
    assert reader.get(cancelled).status == "cancelled"  # type: ignore[union-attr]
    with pytest.raises(CancelledError):
        handle.result(timeout=10)
    _wait_for(lambda: len(_runs(reader)) == 1, what="the kept run")
    assert [run.task_id for run in _runs(reader)] == [kept]


def test_bad_input_commits_nothing(node: Node, reader: PostgresStore) -> None:
    a = node("a")
    with pytest.raises(ValueError, match="lambda"):
        a.schedule_many(lambda: None, [1.0], durable=True)
    with pytest.raises(TypeError, match=r"args\[1\]"):
        a.schedule_many(tasks.record, [1.0, 2.0], args=[(1,), (object(),)], durable=True)
    assert reader.tasks() == []


def test_without_durable_they_stay_on_the_node(node: Node, reader: PostgresStore) -> None:
    a: Scheduler = node("a")
    [task_id] = a.schedule_many(tasks.noop, [60.0])
    assert task_id.startswith("task-m")
    assert reader.tasks() == []


def test_concurrent_bulk_adds_on_two_nodes_each_get_their_own_rows_seqs(
    reader: PostgresStore, schema: str
) -> None:
    other = PostgresStore(DSN, schema=schema, node="other")
    other.open()
    try:
        batches = {
            name: [
                TaskDefinition(
                    task_id=f"{name}-{i}",
                    fn_ref="tests.shared.tasks:noop",
                    args_json=f"[{i}]",
                    kwargs_json="{}",
                    trigger_json='{"once":true}',
                    options_json="{}",
                    next_due=2e9,
                )
                for i in range(3000)
            ]
            for name in ("a", "b")
        }
        with ThreadPoolExecutor(2) as pool:
            futures = {
                name: pool.submit(store.add_many, batches[name])
                for name, store in zip("ab", (reader, other), strict=True)
            }
            seqs = {name: future.result(timeout=60) for name, future in futures.items()}
    finally:
        other.close()

    rows = {row.task_id: row.seq for row in reader.tasks()}
    for name, batch in batches.items():
        assert seqs[name] == [rows[task.task_id] for task in batch]
    assert len(set(seqs["a"]) | set(seqs["b"])) == 6000
