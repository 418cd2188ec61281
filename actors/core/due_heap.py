"""The due times of pending tasks: a binary heap with lazy deletion, after trio's ``Deadlines``.

Part of the pure core (see ``actors/core/timetable.py``).

Entries are ``(due_at, seq, task_id)``. ``seq`` comes from one counter, so tasks due at the same
instant come out in the order they went in and the heap never compares two tasks, and it
names the entry: a task waits on exactly the entry whose ``seq`` it holds in ``heap_seq``. A
tuple of a float, an int and a str holds nothing the garbage collector follows (CPython stops
tracking such tuples), so a million pending entries cost the collector nothing.

Tasks parked in bulk (``actors/core/parked.py``) have entries here too, though they have no
record yet: such an entry is live while ``parked`` holds the task under the same ``seq``.

A run of an ``overlap="allow"`` task (``RunInstance``) shares its task's id, while its task waits
here for its next slot: its entries (a deadline, a retry) are keyed by their ``seq``, an ``int``
that no task id equals (``push_run``), and live while ``runs`` holds the run under that ``seq``
and the run holds it in ``heap_seq``. Plain entries never look there: it is asked only for an
entry no task or parked task claims.

Removing a task is O(1): it forgets its ``seq`` and the heap counts one stale entry. A stale
entry is dropped when it reaches the top, or all of them at once when they outnumber the live
ones: amortised O(1) per removal, and the heap never grows past twice the live tasks (plus a
little). This is the only module that keeps those counts.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final, Protocol, cast

__all__ = ["COMPACT_MIN_STALE", "DueHeap"]

COMPACT_MIN_STALE: Final = 64
"""Below this many stale entries a rebuild is not worth it."""


class Waiting(Protocol):
    """A task as the heap sees it: the ``seq`` of the entry it waits on, or ``None``."""

    task_id: str
    heap_seq: int | None


class DueHeap:
    """Pending tasks by due time. Owned by one thread (the core's); not thread-safe."""

    def __init__(
        self, tasks: Mapping[str, Waiting], parked: Mapping[str, tuple[Any, ...]] | None = None
    ) -> None:
        """Use ``tasks`` (the live tasks by id) and ``parked`` to tell live entries from stale ones.

        ``parked``: the parked tasks by id, each a tuple whose first item is its entry's ``seq``.
        """
        self._tasks = tasks
        self._parked: Mapping[str, tuple[Any, ...]] = parked if parked is not None else {}
        self._heap: list[tuple[float, int, str | int]] = []
        # Run instances with an entry, by the entry's seq (its key): stale ones go with their entry.
        self._runs: dict[int, Waiting] = {}
        self._seq = itertools.count()
        self._live = 0  # entries some task waits on; the rest of the heap is stale

    def __len__(self) -> int:
        """Live entries: tasks waiting in the heap."""
        return self._live

    @property
    def size(self) -> int:
        """Entries, stale ones included."""
        return len(self._heap)

    def push(self, task: Waiting, due_at: float) -> None:
        """Make ``task`` wait until ``due_at`` (it must not be waiting already)."""
        seq = next(self._seq)
        task.heap_seq = seq
        heapq.heappush(self._heap, (due_at, seq, task.task_id))
        self._live += 1

    def push_run(self, run: Waiting, due_at: float) -> None:
        """Make a run of an ``overlap="allow"`` task wait until ``due_at``: keyed by its entry, not its id."""
        seq = next(self._seq)
        run.heap_seq = seq
        self._runs[seq] = run
        heapq.heappush(self._heap, (due_at, seq, seq))
        self._live += 1

    def push_many(self, tasks: list[Waiting], due_at: list[float]) -> None:
        """Make many tasks wait at once (a store's load): one O(n) heapify instead of n pushes."""
        seq = self._seq
        heap = self._heap
        for task, due in zip(tasks, due_at, strict=True):
            number = next(seq)
            task.heap_seq = number
            heap.append((due, number, task.task_id))
        heapq.heapify(heap)
        self._live += len(tasks)

    def push_parked(self, task_ids: Sequence[str], due_at: Sequence[float]) -> list[int]:
        """Add entries for tasks about to be parked (``actors/core/parked.py``); return their ``seq``s."""
        seqs = list(itertools.islice(self._seq, len(task_ids)))
        heap = self._heap
        entries = zip(due_at, seqs, task_ids, strict=True)
        if len(task_ids) * 8 >= len(heap):  # few entries yet: one O(n) heapify beats the pushes
            heap.extend(entries)
            heapq.heapify(heap)
        else:
            push = heapq.heappush
            for entry in entries:
                push(heap, entry)
        self._live += len(seqs)
        return seqs

    def adopt(self, entries: list[tuple[float, int, str]]) -> None:
        """Take ``entries`` made elsewhere, with seqs ``0 .. len-1`` (a store's load, before any push).

        ``entries`` is in heap order already (``heapq.heappush``: a heapify of a million here
        would hold the GIL for a tenth of a second). Every entry is live: its task is parked
        (``actors/core/parked.py``). The list becomes the heap.
        """
        assert not self._heap, "entries are adopted into an empty heap only"
        self._heap = cast("list[tuple[float, int, str | int]]", entries)  # (no copy: no run's entry yet)
        self._live += len(entries)
        self._seq = itertools.count(len(entries))

    def remove(self, task: Waiting) -> None:
        """Stop ``task`` waiting (its entry goes stale); rebuild if stale entries now dominate."""
        task.heap_seq = None
        self._live -= 1
        stale = len(self._heap) - self._live
        if stale > COMPACT_MIN_STALE and stale > self._live:
            self.compact()

    def pop_due(self, now: float) -> Iterator[str]:
        """Take out every task due at ``now``, earliest first (ties in push order); yield its id.

        A parked task's id is yielded as it is: the caller unparks it.
        """
        for item in self.take_due(now):
            yield item if type(item) is str else item.task_id

    def take_due(self, now: float) -> list[Any]:
        """Take out every task due at ``now``, earliest first (ties in push order), as a list.

        Each item is the task itself (from ``tasks``), or the id (a ``str``) of a parked task,
        which the caller unparks. The core's release path: a list built in one loop, and no
        second lookup of each task by id (``pop_due`` is the same, by id).
        """
        heap, tasks = self._heap, self._tasks
        pop = heapq.heappop
        due: list[Any] = []
        while heap and heap[0][0] <= now:
            _, seq, task_id = pop(heap)
            task = tasks.get(task_id)  # type: ignore[arg-type]  # (an int key finds nothing)
            if task is None:
                if type(task_id) is int:  # a run instance's entry (push_run)
                    task = self._runs.pop(seq)
                    if task.heap_seq != seq:
                        continue  # stale
                    task.heap_seq = None
                    due.append(task)
                    continue
                parked = self._parked.get(task_id)  # type: ignore[arg-type]
                if parked is not None and parked[0] == seq:
                    due.append(task_id)
                continue  # else stale
            if task.heap_seq != seq:
                continue  # stale
            task.heap_seq = None
            due.append(task)
        self._live -= len(due)
        return due

    def due_by(self, at: float) -> bool:
        """Whether an entry due at ``at`` or before may be waiting (a stale one on top counts too).

        ``False`` means a task due at ``at`` would come out of the heap before every entry in
        it: the core then queues such a task without pushing it (``Timetable.add``).
        """
        heap = self._heap
        return bool(heap) and heap[0][0] <= at

    def next_due(self) -> float | None:
        """The earliest due time of a waiting task, or ``None``; drops stale entries on top."""
        heap = self._heap
        while heap:
            _, seq, task_id = heap[0]
            if self._is_live(seq, task_id):
                return heap[0][0]
            heapq.heappop(heap)
            if type(task_id) is int:
                del self._runs[seq]
        return None

    def compact(self) -> None:
        """Rebuild the heap from its live entries in O(n)."""
        is_live = self._is_live
        self._heap = [entry for entry in self._heap if is_live(entry[1], entry[2])]
        heapq.heapify(self._heap)
        runs = self._runs
        if runs:
            self._runs = {seq: run for seq, run in runs.items() if run.heap_seq == seq}
        assert len(self._heap) == self._live, f"heap lost count: {len(self._heap)} entries, {self._live} live"

    def _is_live(self, seq: int, task_id: str | int) -> bool:
        task = self._tasks.get(task_id)  # type: ignore[arg-type]  # (an int key finds nothing)
        if task is not None:
            return task.heap_seq == seq
        if type(task_id) is int:
            run = self._runs.get(seq)
            return run is not None and run.heap_seq == seq
        parked = self._parked.get(task_id)  # type: ignore[arg-type]
        return parked is not None and parked[0] == seq

    def clear(self) -> None:
        """Forget every entry (the caller has ended every waiting task; the runs' entries end here)."""
        for seq, run in self._runs.items():
            if run.heap_seq == seq:
                run.heap_seq = None
        self._runs.clear()
        self._heap.clear()
        self._live = 0
