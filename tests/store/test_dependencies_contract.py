"""``KeepsDependencies``: the edges of ``schedule_after``, the same contract on every backend."""

from __future__ import annotations

import threading
from collections.abc import Callable

from actors.store import Dependency, KeepsDependencies, PostgresStore, Store, StoredTask
from tests.store.helpers import definition, update


def _once(store: Store, task_id: str, *after: StoredTask, delay: float = 0.0) -> StoredTask:
    edges = tuple(Dependency(seq=d.seq, task_id=d.task_id, delay=delay) for d in after)
    added, _ = store.add(
        definition(task_id, trigger_json='{"once":true}', next_due=None if after else 1e9, after=edges)
    )
    return added


def _row(store: Store, task_id: str) -> StoredTask:
    row = store.get(task_id)
    assert row is not None
    return row


def _end(store: Store, task: StoredTask, status: str) -> None:
    store.save([update(_row(store, task.task_id), status=status, next_due=None, last_outcome=status)])


def test_a_waiting_row_has_no_due_time_and_its_last_completion_releases_it(store: Store) -> None:
    assert isinstance(store, KeepsDependencies)
    a, b = _once(store, "a"), _once(store, "b")
    c = _once(store, "c", a, b, delay=30.0)
    assert _row(store, "c").next_due is None
    assert [(w.waiter, w.dependency.task_id, w.status) for w in store.waiting()] == [
        (c.seq, "a", "scheduled"),
        (c.seq, "b", "scheduled"),
    ]
    _end(store, a, "completed")
    assert _row(store, "c").next_due is None  # b still runs
    assert [w.dependency.task_id for w in store.waiting()] == ["b"]
    _end(store, b, "completed")
    released = _row(store, "c")
    assert released.next_due is not None
    assert abs(released.next_due - (released.updated_at + 30.0)) < 1.0
    assert store.waiting() == []


def test_a_dependency_that_completed_already_is_met_at_add(store: Store) -> None:
    assert isinstance(store, KeepsDependencies)
    a = _once(store, "a")
    _end(store, a, "completed")
    _once(store, "b", a, delay=5.0)
    assert _row(store, "b").next_due is not None
    assert store.waiting() == []


def test_a_failure_or_a_cancel_cancels_everything_below_it_in_one_transaction(store: Store) -> None:
    assert isinstance(store, KeepsDependencies)
    a, other = _once(store, "a"), _once(store, "other")
    b = _once(store, "b", a)
    _once(store, "c", b, other)
    _end(store, a, "failed")
    rows = {t: _row(store, t) for t in ("b", "c", "other")}
    assert rows["b"].status == rows["c"].status == "cancelled"
    assert rows["other"].status == "scheduled"
    assert rows["b"].last_error == (
        "DependencyFailedError: task 'b' was cancelled: task 'a', which it waited for, "
        "ended FAILED instead of COMPLETED"
    )
    assert "task 'b', which it waited for, ended CANCELLED" in (rows["c"].last_error or "")
    assert store.waiting() == []

    x = _once(store, "x")
    _once(store, "y", x)
    assert store.cancel("x")
    assert _row(store, "y").status == "cancelled"


def test_waiting_for_a_failed_row_at_add_cancels_the_new_row_or_reports_it(store: Store) -> None:
    assert isinstance(store, KeepsDependencies)
    a = _once(store, "a")
    _end(store, a, "failed")
    _once(store, "b", a)
    row = _row(store, "b")
    # Either way a loader ends it CANCELLED: the store at once, or the edge reported as failed.
    assert row.status == "cancelled" or [w.status for w in store.waiting()] == ["failed"]


# -- PostgreSQL: several nodes at once ----------------------------------------------------------


def _end_at(barrier: threading.Barrier, store: Store, task: StoredTask, status: str) -> None:
    barrier.wait(5)
    _end(store, task, status)


def test_two_dependencies_completing_at_once_on_two_nodes_release_their_waiter(
    make_node: Callable[..., PostgresStore],
) -> None:
    a, b = make_node("a"), make_node("b")
    for round_ in range(10):
        first, second = _once(a, f"first-{round_}"), _once(a, f"second-{round_}")
        _once(a, f"joined-{round_}", first, second)
        barrier = threading.Barrier(2)

        threads = [
            threading.Thread(target=_end_at, args=(barrier, a, first, "completed")),
            threading.Thread(target=_end_at, args=(barrier, b, second, "completed")),
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        joined = _row(a, f"joined-{round_}")
        assert joined.next_due is not None, f"round {round_}: the waiter was never released"
    assert a.waiting() == []


def test_an_add_waiting_for_a_row_failing_at_the_same_moment_ends_cancelled(
    make_node: Callable[..., PostgresStore],
) -> None:
    a, b = make_node("a"), make_node("b")
    for round_ in range(10):
        dependency = _once(a, f"dep-{round_}")
        barrier = threading.Barrier(2)

        thread = threading.Thread(target=_end_at, args=(barrier, a, dependency, "failed"))
        thread.start()
        barrier.wait(5)
        _once(b, f"waiter-{round_}", dependency)
        thread.join(10)
        assert _row(a, f"waiter-{round_}").status == "cancelled", f"round {round_}: it waits for ever"
