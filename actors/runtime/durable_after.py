"""Durable ``schedule_after`` tasks: the edges a store keeps, and how a waiting task comes back.

A durable task that waits keeps one edge per dependency not completed yet
(``actors.store.Dependency``: the dependency's ``seq``, its id, the waiter's delay), written
with its row (``TaskDefinition.after``); its row has no due time while it waits. The store
releases it when its last dependency's completion commits (``KeepsDependencies``). When a
scheduler starts on the store, ``Waits`` (from ``KeepsDependencies.waiting``) turns each
waiting row back into a ``WAITING`` record whose ``spec.after`` are the records of what it
still waits for: a live dependency's own loaded record; one that ended ``FAILED`` or
``CANCELLED`` (or whose row is gone) a stand-in record in that final state, so the core ends
the waiter ``CANCELLED`` with a ``DependencyFailedError`` naming it, down the graph, as it
does in memory; one that completed counts as done.

Nothing here reads a clock or runs user code. Threads: the caller's (the facade's, before the
scheduler starts; ``edges`` on the thread that schedules the task).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from actors.core.task_record import TaskRecord
from actors.core.task_state import COMPLETED, State
from actors.store.protocol import Dependency, KeepsDependencies, Waiting
from messages.commands import EMPTY_KWARGS

__all__ = ["Waits", "durable_after", "edges", "read_waits"]

_ENDED: Final = {"failed": State.FAILED, "cancelled": State.CANCELLED}


def edges(task: TaskRecord) -> tuple[Dependency, ...]:
    """The edges a durable waiting ``task`` is stored with: one per dependency.

    The store judges each under its own lock (one that has completed by then is met already:
    no edge is kept for it), since a dependency may end on another thread, or node, meanwhile.
    """
    spec = task.spec
    return tuple(
        Dependency(seq=dependency.store_seq, task_id=dependency.task_id, delay=spec.delay)
        for dependency in spec.after
        if dependency.store_seq is not None
    )


def durable_after(durable: object, store: object, after: Iterable[TaskRecord]) -> bool:
    """Whether a ``schedule_after`` task waiting for ``after`` is durable (``durable``: as given).

    ``None``: durable if the scheduler's ``store`` keeps edges (``KeepsDependencies``: both of
    ours do) and every task it waits for is durable (so a task waiting for a memory-only one
    stays in memory, as before). ``True`` with a memory-only dependency, or without such a
    store: ``ValueError`` naming it. ``False``: memory only.
    """
    if durable is not None and not isinstance(durable, bool):
        raise TypeError(f"durable must be a bool or None, got {durable!r}")
    keeps = isinstance(store, KeepsDependencies)
    memory = next((task for task in after if task.store_seq is None), None)
    if durable is None:
        return keeps and memory is None
    if durable and not keeps:
        raise ValueError(
            "durable=True needs a scheduler with a store"
            if store is None
            else "durable=True needs a store that keeps schedule_after's edges (KeepsDependencies)"
        )
    if durable and memory is not None:
        raise ValueError(
            f"durable=True, but task {memory.task_id!r}, which it would wait for, lives in memory only: "
            "a durable task can only wait for durable ones"
        )
    return durable


def read_waits(store: object) -> Waits:
    """The waiting rows of ``store`` (none if it keeps no edges), read on the caller's thread."""
    return Waits(store.waiting() if isinstance(store, KeepsDependencies) else [])


class _Ended:
    """The function of a stand-in for a dependency that ended: never run (it is final already)."""

    def __call__(self) -> None:  # pragma: no cover - a final record is never handed to a worker
        raise AssertionError("a stand-in for an ended dependency never runs")


class Waits:
    """A store's unmet edges as a scheduler loads its rows (``LoadedTasks`` asks, row by row)."""

    __slots__ = ("_by_waiter", "_loaded", "depended")

    def __init__(self, edges: list[Waiting]) -> None:
        """Take the edges ``KeepsDependencies.waiting`` returned."""
        self._by_waiter: dict[int, list[Waiting]] = {}
        for edge in edges:
            self._by_waiter.setdefault(edge.waiter, []).append(edge)
        # The live rows some waiter waits for: loaded as records (not parked), kept here by seq.
        self.depended: frozenset[int] = frozenset(
            edge.dependency.seq for edge in edges if edge.status == "scheduled"
        )
        self._loaded: dict[int, TaskRecord] = {}

    def __bool__(self) -> bool:
        return bool(self._by_waiter)

    def must_load(self, seq: int) -> bool:
        """Whether the row ``seq`` must come back as a record: it waits, or something waits for it."""
        return seq in self._by_waiter or seq in self.depended

    def took(self, task: TaskRecord) -> None:
        """A row came back as ``task``; if it waits, give it what it waits for (rows load in seq order).

        A dependency's row was written before its waiter's, so it has a lower ``seq`` and is
        loaded first.
        """
        seq = task.store_seq
        assert seq is not None
        if seq in self.depended:
            self._loaded[seq] = task
        waits = self._by_waiter.get(seq)
        if waits is None:
            return
        after: list[TaskRecord] = []
        for edge in waits:
            dependency = edge.dependency
            found = self._loaded.get(dependency.seq)
            if found is not None:
                after.append(found)
            elif edge.status != "completed":  # completed: done already (the store releases it)
                after.append(_stand_in(dependency, _ENDED.get(edge.status or "", State.CANCELLED)))
        if not after:  # every edge was to a completed row: due delay from its load
            after.append(_stand_in(waits[0].dependency, COMPLETED))
        spec = task.spec
        task.spec = spec.replace(after=tuple(after), delay=waits[0].dependency.delay)
        task.due_wall = None  # due once released (the core plans it then)


def _stand_in(dependency: Dependency, state: State) -> TaskRecord:
    """A record standing for a dependency that is not live: it ended in ``state`` (or is gone)."""
    task = TaskRecord(dependency.task_id, _Ended(), (), EMPTY_KWARGS, 0.0, dependency.task_id)
    task.store_seq = dependency.seq
    task.state = state
    return task
