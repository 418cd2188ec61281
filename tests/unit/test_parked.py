"""Parked tasks in the pure core: a ``Parcel`` becomes tasks that live as plain data until needed."""

from __future__ import annotations

import gc
import json

import pytest

from actors.core.due_heap import DueHeap
from actors.core.parked import Batch, Parcel, ParkedTasks
from actors.core.task_record import PLAIN, TaskRecord, TaskSpec
from actors.errors import DuplicateTaskError, SchedulerShutdownError
from messages import EventKind, TaskStatus
from tests.unit.helpers import ALL_KINDS, Pool, dispatched, events, noop, take, timetable


def parcel(
    ids: list[str], due_at: list[float], args: list[tuple[object, ...]] | None = None, spec: TaskSpec = PLAIN
) -> Parcel:
    return Parcel(Batch(noop, {}, "bulk", spec), ids, due_at, args)


def test_parked_tasks_run_at_their_due_times_in_order() -> None:
    table = timetable(workers=1)
    table.park(parcel(["a", "b", "c"], [3.0, 1.0, 3.0]), now=0.0)
    assert (table.live_count, dict(table.tasks)) == (3, {})
    assert table.next_due() == 1.0
    table.tick(now=1.0)
    assert dispatched(take(table)) == [(0, "b", 1)]
    assert list(table.tasks) == ["b"]  # it has its record now; the others stay parked
    assert table.live_count == 3


def test_equal_due_times_keep_parcel_order_ahead_of_later_tasks() -> None:
    table = timetable(workers=1)
    table.park(parcel(["a", "b"], [1.0, 1.0]), now=0.0)
    table.add(TaskRecord("c", noop, (), {}, 1.0, "c"), now=0.0)
    pool = Pool(table)
    table.tick(now=1.0)
    pool.take()
    ran = []
    for _ in range(3):
        run = pool.start(0, now=1.0)
        assert run is not None
        ran.append(run.task_id)
        pool.finish(0, at=1.0, start_next=False)
    assert ran == ["a", "b", "c"]


def test_a_run_carries_its_own_arguments_and_the_batch_s_function() -> None:
    table = timetable(workers=1)
    table.park(parcel(["a"], [0.0], [(1, "x")]), now=0.0)
    (worker, run), *_ = take(table).dispatches
    assert (worker, run.task_id, run.fn, run.args) == (0, "a", noop, (1, "x"))


def test_a_parcel_already_due_is_handed_out_at_once() -> None:
    table = timetable(workers=2)
    table.park(parcel(["a", "b"], [5.0, -1.0]), now=0.0)
    assert dispatched(take(table)) == [(0, "b", 1)]


def test_cancel_by_id_ends_a_parked_task_and_its_entry_goes_stale() -> None:
    table = timetable(workers=1)
    table.park(parcel(["a", "b"], [1.0, 2.0]), now=0.0)
    assert table.cancel("a", now=0.5) is True
    effects = take(table)
    assert events(effects) == [(EventKind.CANCELLED, "a", None)]
    assert table.info("a").status is TaskStatus.CANCELLED
    assert (table.live_count, table.next_due()) == (1, 2.0)
    assert table.cancel("a", now=0.5) is False
    table.tick(now=5.0)
    assert dispatched(take(table)) == [(0, "b", 1)]


def test_queries_look_without_unparking() -> None:
    table = timetable()
    table.park(parcel(["a", "b"], [1.0, 2.0]), now=0.0)
    info = table.info("b")
    assert (info.status, info.name, info.next_run_at) == (TaskStatus.SCHEDULED, "bulk", 2.0)
    assert [i.task_id for i in table.infos()] == ["a", "b"]
    assert dict(table.tasks) == {}
    assert table.has("a")
    assert not table.has("z")


def test_record_unparks_for_good_and_the_record_waits_on_the_same_entry() -> None:
    table = timetable()
    table.park(parcel(["a", "b"], [1.0, 2.0]), now=0.0)
    record = table.record("b")
    assert record is not None
    assert table.record("b") is record
    assert list(table.tasks) == ["b"]
    assert (table.live_count, table.heap_size) == (2, 2)
    table.tick(now=3.0)
    assert dispatched(take(table)) == [(0, "a", 1), (0, "b", 1)]  # a batch, in due order


def test_an_id_in_use_by_a_parked_task_is_refused() -> None:
    table = timetable()
    table.park(parcel(["a"], [1.0]), now=0.0)
    with pytest.raises(DuplicateTaskError):
        table.add(TaskRecord("a", noop, (), {}, 1.0, "a"), now=0.0)
    with pytest.raises(DuplicateTaskError):
        table.add_many([TaskRecord("a", noop, (), {}, 1.0, "a")], now=0.0)


def test_a_closed_timetable_refuses_a_parcel() -> None:
    table = timetable()
    table.shut_down(now=0.0)
    with pytest.raises(SchedulerShutdownError):
        table.park(parcel(["a"], [1.0]), now=0.0)
    assert table.live_count == 0


def test_shutdown_publishes_every_parked_task_s_end_when_someone_listens() -> None:
    table = timetable(history=1)
    table.park(parcel(["a", "b", "c"], [1.0, 2.0, 3.0]), now=0.0)
    table.shut_down(now=0.5)
    assert events(take(table)) == [(EventKind.CANCELLED, task_id, None) for task_id in "abc"]
    assert table.live_count == 0


def test_shutdown_without_listeners_keeps_only_what_the_history_shows() -> None:
    table = timetable(history=2, wanted=frozenset())
    table.park(parcel(["a", "b", "c"], [1.0, 2.0, 3.0]), now=0.0)
    table.shut_down(now=0.5)
    assert [record.task_id for record, _ in take(table).finished] == ["b", "c"]
    assert table.info("c").status is TaskStatus.CANCELLED
    assert table.find("a") is None
    assert (table.live_count, table.next_due()) == (0, None)


def test_abandon_ends_parked_tasks_too() -> None:
    table = timetable()
    table.park(parcel(["a", "b"], [1.0, 2.0]), now=0.0)
    assert table.abandon(RuntimeError("stopped by force"), now=0.5) == 2
    assert {record.task_id for record, _ in take(table).finished} == {"a", "b"}


def test_a_batch_is_let_go_once_its_last_task_is_unparked() -> None:
    parked = ParkedTasks()
    batch = Batch(noop, {}, "bulk", PLAIN)
    parked.park(Parcel(batch, ["a", "b"], [1.0, 2.0], None), [0, 1])
    assert batch.parked == 2
    first = parked.take("a", waiting=False)
    assert first is not None
    assert (first.task_id, first.due_at, first.heap_seq) == ("a", 1.0, None)
    waiting = parked.take("b", waiting=True)
    assert waiting is not None
    assert waiting.heap_seq == 1
    assert batch.parked == 0
    assert parked.peek("b") is None
    assert parked.take("b", waiting=True) is None
    assert parked._batches == {}


def test_the_heap_tells_parked_entries_live_by_seq() -> None:
    parked: dict[str, tuple[int, ...]] = {}
    heap = DueHeap({}, parked)
    seqs = heap.push_parked(["a", "b"], [1.0, 2.0])
    parked.update({"a": (seqs[0],), "b": (seqs[1],)})
    assert (len(heap), heap.next_due()) == (2, 1.0)
    del parked["a"]  # no longer parked under that seq: its entry is stale
    assert heap.next_due() == 2.0
    parked["b"] = (seqs[1] + 100,)  # parked again under another entry: this one is stale too
    assert list(heap.pop_due(10.0)) == []
    assert heap.size == 0


def test_pushes_into_a_big_heap_one_by_one_and_keep_order() -> None:
    parked: dict[str, tuple[int, ...]] = {}
    heap = DueHeap({}, parked)
    ids = [f"t{i}" for i in range(100)]
    due = [float((i * 37) % 100) for i in range(100)]
    for start in (0, 90, 99):  # a first big part (heapify), then small ones (pushes)
        part = slice(start, {0: 90, 90: 99, 99: 100}[start])
        for task_id, seq in zip(ids[part], heap.push_parked(ids[part], due[part]), strict=True):
            parked[task_id] = (seq,)
    assert [due[int(t[1:])] for t in heap.pop_due(1000.0)] == sorted(due)


def test_parked_entries_of_plain_data_are_not_tracked_by_the_collector() -> None:
    table = timetable(wanted=ALL_KINDS)
    n = 5_000
    ids = [f"t{i}" for i in range(n)]
    gc.collect()
    before = len(gc.get_objects())
    table.park(parcel(ids, [float(i + 1) for i in range(n)], [(i, "x") for i in range(n)]), now=0.0)
    gc.collect()
    assert len(gc.get_objects()) - before < n * 0.01


def test_a_heap_adopts_entries_in_heap_order_and_counts_on_from_them() -> None:
    parked: dict[str, tuple[int, ...]] = {"a": (0,), "b": (1,)}
    tasks: dict[str, Task] = {}
    heap = DueHeap(tasks, parked)
    heap.adopt([(1.0, 1, "b"), (2.0, 0, "a")])  # a valid heap: b is due first
    assert (len(heap), heap.next_due()) == (2, 1.0)
    tasks["c"] = Task("c")
    heap.push(tasks["c"], 1.0)
    assert tasks["c"].heap_seq == 2  # after the adopted seqs: it comes after b at the same time
    assert list(heap.pop_due(5.0)) == ["b", "c", "a"]


class Task:
    __slots__ = ("heap_seq", "task_id")

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.heap_seq: int | None = None


def test_a_stored_parcel_parks_its_tasks_as_a_restart_loads_them() -> None:
    def decode(
        task_id: str, args_json: str, kwargs_json: str
    ) -> tuple[tuple[object, ...], dict[str, object]]:
        return tuple(json.loads(args_json)), json.loads(kwargs_json)

    batch = Batch(noop, {}, "bulk", PLAIN, decode)
    stored = Parcel(
        batch, ["task-1", "task-2"], [5.0, 3.0], ["[1, [2]]", "[]"], ([11, 12], [105.0, 103.0], '{"k": 3}')
    )
    table = timetable(workers=1)
    table.park(stored, now=0.0)
    assert (table.live_count, dict(table.tasks)) == (2, {})

    table.tick(now=3.0)
    assert dispatched(take(table)) == [(0, "task-2", 1)]
    second = table.tasks["task-2"]
    assert (second.args, dict(second.kwargs), second.store_seq, second.due_wall) == ((), {"k": 3}, 12, 103.0)
    assert (second.run_count, second.last_outcome) == (0, None)
    first = table.record("task-1")  # a record of its own, as cancel or a handle would need
    assert first is not None
    assert (first.args, first.store_seq, first.due_wall, first.due_at) == ((1, [2]), 11, 105.0, 5.0)
