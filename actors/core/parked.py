"""Parked tasks: one-time tasks scheduled in bulk, kept as plain data until they are needed.

Part of the pure core (see ``actors/core/timetable.py``).

A ``TaskRecord`` is an object the garbage collector tracks, and a full collection visits every
one: with a million pending records each collection stops every thread for longer than the
textbook heap's (docs/performance.md, "A million tasks in one process"). A task of
``Scheduler.schedule_many`` therefore waits as a *parked entry* instead, a tuple
``(seq, batch number, due_at, args)`` in ``ParkedTasks``. What its batch shares (function,
keyword arguments, name, options) is kept once, in its ``Batch``, which the entry names by
number. So an entry holds only numbers and the task's arguments: when those are plain data
too (numbers, strings, tuples of them) CPython stops tracking the tuple at its first
collection, and a million parked tasks cost the collector almost nothing and never start a
full collection as they are scheduled.

A store's one-time tasks are parked the same way as a scheduler starts (``actors/runtime/durable.py``,
``LoadedTasks``): their entries also carry what the store keeps of each, their arguments stay
JSON text until they get their record, and the loader builds the entries and their heap
entries itself, so that nothing is built twice (the ``Timetable`` is made with them).

A parked task becomes an ordinary record (``take``) when the core needs one: when it comes
due, when it is cancelled, when a caller asks for its handle, or at shutdown. To answer a
query the core builds a record to look at (``peek``) and leaves the task parked.

The due heap (``actors/core/due_heap.py``) holds parked tasks' entries beside the others; an entry
is live while the task is parked under the same ``seq``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, Final

from actors.core.task_record import TaskRecord, TaskSpec

__all__ = ["Batch", "Parcel", "ParkedTasks", "StandIn"]

ParkedEntry = tuple[Any, ...]
"""A parked task: ``(seq of its heap entry, its batch's number, due_at, args)``. A stored task's
has its arguments as JSON text, then ``store_seq, due_wall, run_count, last_outcome, kwargs_json``."""


class StandIn:
    """What a stored task whose arguments do not decode gets instead: a function that fails, and a spec.

    Built by the loader's ``Decode`` (``actors/runtime/durable.py``), which knows why; the core only
    puts it in the task's record, so the task is seen and each run fails with the reason.
    """

    __slots__ = ("fn", "spec")

    def __init__(self, fn: Callable[..., object], spec: TaskSpec) -> None:
        """Give the function the task's runs call, and its spec."""
        self.fn = fn
        self.spec = spec


Decode = Callable[[str, str, str], tuple[tuple[Any, ...], Mapping[str, Any]] | StandIn]
"""Turns a stored task's id, ``args_json`` and ``kwargs_json`` into its arguments (or a ``StandIn``)."""

_MEMORY_ENTRY: Final = 4
"""The length of a ``schedule_many`` task's entry (a stored task's is longer)."""


class Batch:
    """What the tasks of one ``schedule_many`` call share, or the stored tasks of one definition.

    Immutable once handed over. ``decode`` is set for stored tasks (their ``kwargs`` are their own).
    """

    __slots__ = ("decode", "fn", "kwargs", "name", "number", "parked", "spec")

    def __init__(
        self,
        fn: Callable[..., object],
        kwargs: Mapping[str, Any],
        name: str,
        spec: TaskSpec,
        decode: Decode | None = None,
    ) -> None:
        """Describe a batch (its creator, before handing it over); the core numbers it."""
        self.fn = fn
        self.kwargs = kwargs
        self.name = name
        self.spec = spec
        self.decode = decode
        self.number: int | None = None  # set by ParkedTasks when its first parcel arrives
        self.parked = 0  # its tasks still parked (the core's count); at 0 the batch is dropped


class Parcel:
    """Part of a ``schedule_many`` batch on its way to the core (an outbox item).

    ``args`` is ``None`` when every task of the parcel takes none. ``stored``: the tasks are
    committed to the store already (``durable=True``), and wait parked as a loaded store's
    do: ``args`` is then their JSON text, and ``stored`` is their rows' ``seq``, their due
    times on the wall clock and the batch's ``kwargs_json`` (its ``batch`` decodes them).
    """

    __slots__ = ("args", "batch", "due_at", "stored", "task_ids")

    def __init__(
        self,
        batch: Batch,
        task_ids: list[str],
        due_at: list[float],
        args: list[Any] | None,
        stored: tuple[list[int], list[float], str] | None = None,
    ) -> None:
        """Pack ``task_ids[i]`` due at ``due_at[i]`` with ``args[i]``; the lists are the parcel's own."""
        self.batch = batch
        self.task_ids = task_ids
        self.due_at = due_at
        self.args = args
        self.stored = stored


class ParkedTasks:
    """The parked tasks by id. Owned by the core's thread; not thread-safe."""

    __slots__ = ("_batches", "_numbers", "entries")

    def __init__(self) -> None:
        """Start with none."""
        self.entries: dict[str, ParkedEntry] = {}  # read by the due heap to tell live entries
        self._batches: dict[int, Batch] = {}
        self._numbers = itertools.count()

    def __len__(self) -> int:
        return len(self.entries)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self.entries

    def memory_ids(self) -> list[str]:
        """The ids of the parked tasks of ``schedule_many`` (not from a store), in parking order."""
        return [task_id for task_id, entry in self.entries.items() if len(entry) == _MEMORY_ENTRY]

    def register(self, batch: Batch) -> int:
        """Number ``batch`` (once) and keep it while it has parked tasks; return its number."""
        if batch.number is None:
            batch.number = next(self._numbers)
            self._batches[batch.number] = batch
        return batch.number

    def put(self, task_id: str, entry: ParkedEntry, batch: Batch) -> None:
        """Park one task of the registered ``batch`` (a store's loader: the entry is made, seq included)."""
        self.entries[task_id] = entry
        batch.parked += 1

    def clear(self) -> None:
        """Forget every parked task (they have ended without records)."""
        self.entries.clear()
        self._batches.clear()

    def park(self, parcel: Parcel, seqs: list[int]) -> None:
        """Park the tasks of ``parcel``, whose heap entries carry ``seqs`` (the ids are new)."""
        batch = parcel.batch
        number = self.register(batch)
        if parcel.stored is None:
            args = parcel.args if parcel.args is not None else itertools.repeat(())
            entries = zip(seqs, itertools.repeat(number), parcel.due_at, args, strict=False)
            self.entries.update(zip(parcel.task_ids, entries, strict=True))
        else:  # entries as the loader makes them: never run yet (run count 0, no last outcome)
            assert parcel.args is not None  # their JSON text
            store_seqs, due_walls, kwargs_json = parcel.stored
            rows = zip(parcel.task_ids, seqs, parcel.due_at, parcel.args, store_seqs, due_walls, strict=True)
            for task_id, seq, due_at, args_json, store_seq, due_wall in rows:
                entry = (seq, number, due_at, args_json, store_seq, due_wall, 0, None, kwargs_json)
                self.entries[task_id] = entry
        batch.parked += len(parcel.task_ids)

    def take(self, task_id: str, *, waiting: bool) -> TaskRecord | None:
        """Unpark a task: return its new record (``None`` if it is not parked).

        ``waiting``: its heap entry is still in the heap, and the record now waits on it; else
        the entry has just been taken out (it came due).
        """
        entry = self.entries.pop(task_id, None)
        if entry is None:
            return None
        task = self._shown(task_id, entry)
        task.heap_seq = entry[0] if waiting else None
        number = entry[1]
        batch = self._batches[number]
        batch.parked -= 1
        if not batch.parked:
            del self._batches[number]  # its function and arguments are let go
        return task

    def peek(self, task_id: str) -> TaskRecord | None:
        """A record showing the parked task ``task_id``, which stays parked (``None``: not parked)."""
        entry = self.entries.get(task_id)
        return None if entry is None else self._shown(task_id, entry)

    def peek_all(self, start: int = 0, stop: int | None = None) -> Iterator[TaskRecord]:
        """Records showing every parked task, in the order they were parked (``start:stop`` of them)."""
        entries: Iterable[tuple[str, ParkedEntry]] = self.entries.items()
        if start or stop is not None:
            entries = itertools.islice(entries, start, stop)
        for task_id, entry in entries:
            yield self._shown(task_id, entry)

    def _shown(self, task_id: str, entry: ParkedEntry) -> TaskRecord:
        """The record of a parked task, as it would be unparked now."""
        batch = self._batches[entry[1]]
        if len(entry) == _MEMORY_ENTRY:
            return TaskRecord(task_id, batch.fn, entry[3], batch.kwargs, entry[2], batch.name, batch.spec)
        _, _, due_at, args_json, store_seq, due_wall, run_count, last_outcome, kwargs_json = entry
        assert batch.decode is not None  # a stored task's batch decodes its arguments
        decoded = batch.decode(task_id, args_json, kwargs_json)
        if isinstance(decoded, StandIn):  # they do not decode: its runs fail, saying why
            task = TaskRecord(task_id, decoded.fn, (), batch.kwargs, due_at, batch.name, decoded.spec)
        else:
            task = TaskRecord(task_id, batch.fn, *decoded, due_at, batch.name, batch.spec)
        task.store_seq = store_seq
        task.due_wall = due_wall
        task.run_count = run_count
        task.last_outcome = last_outcome
        return task
