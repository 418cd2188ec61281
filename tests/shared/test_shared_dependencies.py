"""``schedule_after`` on a shared store: a dependent runs on whichever node claims it, once released."""

from __future__ import annotations

import pytest

from actors import DependencyFailedError
from actors.store import PostgresStore
from messages import TaskStatus
from tests.shared import tasks
from tests.shared.conftest import Node

WAIT = 20.0


def _ledger(reader: PostgresStore, task_id: str) -> list[object]:
    return list(reversed(reader.runs(task_id)))


def test_a_dependent_runs_once_its_dependency_committed_on_another_node(
    node: Node, reader: PostgresStore
) -> None:
    a, b = node("a"), node("b")
    dependency = a.schedule_once(tasks.gate, 0.0, args=("dep",), task_id="dep")
    dependent = b.schedule_after(tasks.record, dependency, args=("after",), task_id="after")
    assert tasks.entered("dep")  # the dependency runs on some node...
    row = reader.get("after")
    assert row is not None
    assert (row.status, row.next_due) == ("scheduled", None)  # ...and the dependent is not claimable
    assert [w.dependency.task_id for w in reader.waiting()] == ["dep"]
    info = a.info("after")  # any node shows it waiting
    assert (info.status, info.waiting_for, info.next_run_at) == (TaskStatus.WAITING, ("dep",), None)
    assert [i.status for i in b.tasks() if i.task_id == "after"] == [TaskStatus.WAITING]
    tasks.open_gate("dep")
    dependency.result(timeout=WAIT)
    dependent.result(timeout=WAIT)
    [dep_run] = reader.runs("dep")
    [after_run] = reader.runs("after")
    assert after_run.started is not None
    assert after_run.started >= dep_run.finished  # on the database's clock
    assert a.info("after").status is TaskStatus.COMPLETED
    assert reader.waiting() == []


def test_a_failed_dependency_cancels_the_dependents_down_the_graph(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    a.schedule_once(tasks.gate, 0.0, args=("bad",), task_id="gated")
    bad = a.schedule_after(tasks.fail, "gated", task_id="bad")
    below = b.schedule_after(tasks.record, bad, task_id="below")
    further = b.schedule_after(tasks.record, "below", task_id="further")
    tasks.open_gate("bad")
    with pytest.raises(DependencyFailedError) as caught:
        below.result(timeout=WAIT)
    assert caught.value.dependency == "bad"
    with pytest.raises(DependencyFailedError) as caught:
        further.result(timeout=WAIT)
    assert caught.value.dependency == "below"
    assert reader.runs("below") == []
    info = a.info("further")
    assert info.status is TaskStatus.CANCELLED
    assert isinstance(info.last_error, DependencyFailedError)


def test_waiting_for_a_task_that_failed_already_cancels_at_once(node: Node, reader: PostgresStore) -> None:
    a = node("a")
    with pytest.raises(RuntimeError, match="always fails"):
        a.schedule_once(tasks.fail, 0.0, task_id="bad").result(timeout=WAIT)
    with pytest.raises(DependencyFailedError):
        a.schedule_after(tasks.record, "bad", task_id="late").result(timeout=WAIT)


def test_a_restart_of_every_node_keeps_the_graph(node: Node, reader: PostgresStore) -> None:
    a, b = node("a"), node("b")
    a.schedule_once(tasks.record, 2.0, args=("first",), task_id="first")
    b.schedule_after(tasks.record, "first", args=("second",), task_id="second")
    a.schedule_after(tasks.record, "second", delay=0.5, args=("third",), task_id="third")
    a.shutdown()
    b.shutdown()
    assert {w.dependency.task_id for w in reader.waiting()} == {"first", "second"}
    c = node("c")
    c.handle("third").result(timeout=WAIT)
    ran = [args[0] for _, args in tasks.CALLS]
    assert ran == ["first", "second", "third"]
    second, third = reader.runs("second")[0], reader.runs("third")[0]
    assert third.started is not None
    assert third.started >= second.finished + 0.5  # delay after the last one
