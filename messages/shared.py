"""Messages of a shared store's node: between its lease loop, its facade and its scheduler actor.

Sent only by the library (``actors/shared/node.py``), never by users: a node of a shared store
claims runs on its own thread and hands them to its scheduler actor, and tells it about
cancels it committed to the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from messages.events import TaskId

__all__ = ["CancelledInStore", "Claimed", "OutcomesSaved", "RetrySaves"]


@final
@dataclass(frozen=True, slots=True)
class Claimed:
    """Lease loop -> scheduler: due runs this node has just leased (``Lease`` objects): run them."""

    leases: tuple[object, ...]


@final
@dataclass(frozen=True, slots=True)
class CancelledInStore:
    """Facade -> scheduler: this node cancelled a durable task in the shared store (committed).

    The scheduler stops a claimed run of it that has not started (and asks one in progress to
    stop, with ``interrupt``), and publishes ``CANCELLED`` (on a shared store, the node whose
    cancel won publishes it). ``name`` is the task's name if the caller knew it.
    ``elsewhere``: the cancel was another node's, seen by this node's lease keeper (a cancel with
    ``interrupt`` of an ``overlap="allow"`` task whose runs go on here): stop them, publish nothing.
    """

    task_id: TaskId
    name: str | None = None
    interrupt: bool = False
    elsewhere: bool = False


@final
@dataclass(frozen=True, slots=True)
class RetrySaves:
    """Anyone -> scheduler: try again now to save outcomes the store could not take."""


@final
@dataclass(frozen=True, slots=True)
class OutcomesSaved:
    """Outcome saver -> scheduler: outcomes were committed; publish these events (``TaskEvent``).

    The events of the runs whose outcomes stand, in their order; sent after every commit, so
    the scheduler also learns that it may now be settled or drained.
    """

    events: tuple[object, ...]
