"""The due heap on its own: order and ties, stale entries, the compaction bound, the live count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.core.due_heap import COMPACT_MIN_STALE, DueHeap


class Task:
    """What the heap needs of a task: its id and the ``seq`` of the entry it waits on."""

    __slots__ = ("heap_seq", "task_id")

    def __init__(self, task_id: str) -> None:
        self.task_id = task_id
        self.heap_seq: int | None = None


def setup(*ids: str) -> tuple[DueHeap, dict[str, Task]]:
    tasks = {task_id: Task(task_id) for task_id in ids}
    return DueHeap(tasks), tasks


def test_starts_empty() -> None:
    heap, _ = setup()
    assert (len(heap), heap.size, heap.next_due()) == (0, 0, None)
    assert list(heap.pop_due(1e300)) == []


def test_pops_what_is_due_earliest_first_ties_in_push_order() -> None:
    heap, tasks = setup("x", "y", "z", "w", "v")
    for task_id, at in [("x", 3.0), ("y", 1.0), ("z", 3.0), ("w", 2.0), ("v", 1.0)]:
        heap.push(tasks[task_id], at)
    assert (len(heap), heap.size, heap.next_due()) == (5, 5, 1.0)
    assert list(heap.pop_due(0.999)) == []
    assert list(heap.pop_due(2.0)) == ["y", "v", "w"]  # due exactly at now counts
    assert (len(heap), heap.size, heap.next_due()) == (2, 2, 3.0)
    assert [tasks[t].heap_seq for t in ("y", "v", "w")] == [None] * 3
    assert list(heap.pop_due(10.0)) == ["x", "z"]
    assert (len(heap), heap.next_due()) == (0, None)


def test_push_and_remove_keep_the_tasks_seq() -> None:
    heap, tasks = setup("a", "b")
    heap.push(tasks["a"], 1.0)
    heap.push(tasks["b"], 1.0)
    seq_a, seq_b = tasks["a"].heap_seq, tasks["b"].heap_seq
    assert seq_a is not None
    assert seq_b is not None
    assert seq_a < seq_b
    heap.remove(tasks["a"])
    assert tasks["a"].heap_seq is None


def test_a_removed_task_leaves_a_stale_entry_dropped_when_it_surfaces() -> None:
    heap, tasks = setup("a", "b", "c")
    for at, task in enumerate(tasks.values()):
        heap.push(task, float(at))
    heap.remove(tasks["a"])
    heap.remove(tasks["b"])
    assert (len(heap), heap.size) == (1, 3)  # removal is O(1): the entries stay, stale
    assert heap.next_due() == 2.0  # drops the stale entries on top
    assert heap.size == 1
    assert list(heap.pop_due(5.0)) == ["c"]


def test_a_task_pushed_again_waits_on_its_new_entry_only() -> None:
    heap, tasks = setup("a")
    heap.push(tasks["a"], 5.0)
    heap.remove(tasks["a"])
    heap.push(tasks["a"], 1.0)
    assert (len(heap), heap.size, heap.next_due()) == (1, 2, 1.0)
    assert list(heap.pop_due(10.0)) == ["a"]  # once, at its new time; the old entry is stale
    assert (len(heap), heap.size) == (0, 0)


def test_an_entry_whose_task_is_gone_is_stale() -> None:
    heap, tasks = setup("a", "b")
    heap.push(tasks["a"], 1.0)
    heap.push(tasks["b"], 2.0)
    del tasks["a"]
    assert heap.next_due() == 2.0
    assert list(heap.pop_due(5.0)) == ["b"]


def test_compacts_once_stale_entries_outnumber_live_ones_and_the_minimum() -> None:
    count = 2 * COMPACT_MIN_STALE + 72  # so the live ones still outnumber the minimum at compaction
    ids = [f"t{i}" for i in range(count)]
    heap, tasks = setup(*ids)
    for i, task_id in enumerate(ids):
        heap.push(tasks[task_id], float(i))
    rebuilt_at = count // 2 + 1  # the first removal after which stale > live (and > the minimum)
    for removed, task_id in enumerate(ids[:rebuilt_at], start=1):
        heap.remove(tasks[task_id])
        if removed < rebuilt_at:
            assert heap.size == count, removed
    assert heap.size == len(heap) == count - rebuilt_at
    assert heap.next_due() == float(rebuilt_at)


def test_few_stale_entries_are_not_worth_a_rebuild() -> None:
    ids = [f"t{i}" for i in range(COMPACT_MIN_STALE + 1)]
    heap, tasks = setup(*ids)
    for task_id in ids:
        heap.push(tasks[task_id], 1.0)
    for task_id in ids[:-1]:
        heap.remove(tasks[task_id])  # stale (64) outnumbers live (1), but not the minimum
    assert (len(heap), heap.size) == (1, COMPACT_MIN_STALE + 1)
    heap.remove(tasks[ids[-1]])
    assert (len(heap), heap.size) == (0, 0)  # 65 stale > 64: rebuilt


def test_compact_checks_the_live_count() -> None:
    heap, tasks = setup("a", "b")
    heap.push(tasks["a"], 1.0)
    heap.push(tasks["b"], 2.0)
    heap.compact()
    assert (len(heap), heap.size) == (2, 2)
    tasks["a"].heap_seq = None  # forgotten behind the heap's back: the count is now wrong
    with pytest.raises(AssertionError, match="heap lost count"):
        heap.compact()


def test_clear_forgets_everything() -> None:
    heap, tasks = setup("a", "b")
    heap.push(tasks["a"], 1.0)
    heap.push(tasks["b"], 2.0)
    for task in tasks.values():
        task.heap_seq = None  # the owner ends every waiting task
    heap.clear()
    assert (len(heap), heap.size, heap.next_due()) == (0, 0, None)
    heap.push(tasks["a"], 3.0)
    assert list(heap.pop_due(3.0)) == ["a"]


OPS = st.lists(
    st.one_of(
        st.tuples(st.just("push"), st.integers(0, 30), st.integers(0, 9)),
        st.tuples(st.just("remove"), st.integers(0, 30), st.just(0)),
        st.tuples(st.just("pop_due"), st.integers(0, 9), st.just(0)),
        st.tuples(st.just("next_due"), st.just(0), st.just(0)),
    ),
    max_size=300,
)


@given(OPS, st.integers(0, 200))
def test_matches_a_sorted_list_and_stays_bounded(ops: list[tuple[str, int, int]], extra: int) -> None:
    """Any mix of moves: a brute-force list gives the same answers; size <= 2 * live + the minimum."""
    ids = [f"t{i}" for i in range(31)]
    heap, tasks = setup(*ids)
    for i in range(extra):  # some that never move, so removals face a crowd as well as an empty heap
        tasks[f"keep{i}"] = Task(f"keep{i}")
        heap.push(tasks[f"keep{i}"], 100.0)
    model: dict[str, tuple[float, int]] = {f"keep{i}": (100.0, -extra + i) for i in range(extra)}
    order = 0
    for op, n, at in ops:
        task_id = ids[n % len(ids)]
        task = tasks[task_id]
        if op == "push" and task_id not in model:
            heap.push(task, float(at))
            model[task_id] = (float(at), order)
            order += 1
        elif op == "remove" and task_id in model:
            heap.remove(task)
            del model[task_id]
        elif op == "pop_due":
            due = sorted((key, t) for t, key in model.items() if key[0] <= n)
            assert list(heap.pop_due(float(n))) == [t for _, t in due]
            for _, t in due:
                del model[t]
        elif op == "next_due":
            assert heap.next_due() == min((key[0] for key in model.values()), default=None)
        assert len(heap) == len(model)
        assert {t for t, task in tasks.items() if task.heap_seq is not None} == set(model)
        assert heap.size <= 2 * len(heap) + COMPACT_MIN_STALE
    heap.compact()
    assert heap.size == len(model)


def test_runs_of_one_task_wait_beside_it_each_on_its_own_entry() -> None:
    heap, tasks = setup("a")
    first, second = Task("a"), Task("a")  # two runs of task "a" (overlap="allow"), not in tasks
    heap.push(tasks["a"], 10.0)  # the task's next slot
    heap.push_run(first, 5.0)
    heap.push_run(second, 6.0)
    assert (len(heap), heap.size, heap.next_due()) == (3, 3, 5.0)
    heap.remove(first)  # its run ended: the entry goes stale, and its run with it
    assert (len(heap), heap.next_due(), heap._runs) == (2, 6.0, {second.heap_seq: second})
    assert heap.take_due(6.0) == [second]
    assert (second.heap_seq, heap._runs) == (None, {})
    heap.push_run(second, 7.0)  # asked to stop: its grace
    heap.compact()
    assert heap.take_due(20.0) == [second, tasks["a"]]
    heap.push_run(first, 1.0)
    heap.clear()
    assert (first.heap_seq, len(heap), heap._runs) == (None, 0, {})
