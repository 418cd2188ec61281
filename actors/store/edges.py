"""The edges of ``schedule_after`` as a store keeps them: part of the store's contract.

``TaskDefinition.after`` (``actors/store/protocol.py``) holds a new task's ``Dependency``
edges; a store that keeps them implements ``KeepsDependencies`` (both of ours do:
``actors/store/sqlite_after.py``, ``actors/store/postgres_after.py``). Plain data and one
protocol, free of any backend.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol, final, runtime_checkable

from messages.events import StoredStatus

__all__ = ["Dependency", "KeepsDependencies", "Waiting"]


def _check_time(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, float | int) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite number of seconds, got {value!r}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Dependency:
    """A stored task a new task waits for (``schedule_after``): one edge of ``TaskDefinition.after``.

    Attributes:
        seq: The incarnation waited for (``StoredTask.seq``): an id may be reused, a seq never.
        task_id: Its id, for the error that names it should it not complete.
        delay: The waiting task's delay: it is due this long after its last dependency completed.
    """

    seq: int
    task_id: str
    delay: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.seq, bool) or not isinstance(self.seq, int) or self.seq < 0:
            raise ValueError(f"seq must be an int >= 0, got {self.seq!r}")
        if not isinstance(self.task_id, str):
            raise TypeError(f"task_id must be a str, got {self.task_id!r}")
        _check_time("delay", self.delay)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Waiting:
    """A stored edge not yet met: the live row ``waiter`` waits for ``dependency`` (``KeepsDependencies``).

    Attributes:
        waiter: The waiting row's ``seq``.
        dependency: What it waits for.
        status: The dependency's stored status now, ``None`` if its row is gone (pruned).
    """

    waiter: int
    dependency: Dependency
    status: StoredStatus | None


@runtime_checkable
class KeepsDependencies(Protocol):
    """A store that keeps ``schedule_after``'s edges (``TaskDefinition.after``) with its rows.

    The store's part of the contract, the same for every backend: ``add`` writes a row's edges
    in the row's transaction (a row with edges has ``next_due`` ``None``: it is never due, and on
    a shared store never claimable, while it waits). A ``save`` or ``save_outcomes`` whose update
    ends a row ``completed`` deletes the edges to it in the same transaction, and a waiting row
    left with none is due ``delay`` after that commit (the store's clock). An update or cancel
    that ends a row otherwise leaves the edges to it: a waiting row is then ended ``cancelled``
    with a ``DependencyFailedError`` (how, and by whom, the backend documents). The edges of a
    row that ends are deleted with it.
    """

    def waiting(self) -> list[Waiting]:
        """Return every edge of a live row not met yet, in ``(waiter, dependency seq)`` order.

        Raises:
            StoreError: The store failed or is closed.
        """
