"""Where a task is in its life, and the moves it may make: the table, written once, as data.

Part of the pure core (see ``actors/core/timetable.py``). Every change of a task's state goes
through ``move_to``, which refuses a move the table does not list: such a move is a bug in the
scheduler, never the user's doing, and failing loudly beats a task silently stuck.

The diagram (``TRANSITIONS`` below is the same, as data)::

    PENDING --due--> READY --dealt--> HANDED --recurring run reported--> PENDING
    HANDED --taken back (stolen, worker lost)--> READY
    HANDED --cancelled while its worker holds the run--> CANCELLING --worker reported--> CANCELLED
    HANDED --run reported--> COMPLETED | FAILED;  PENDING | READY | HANDED --cancelled--> CANCELLED
    READY --missed its run (misfire_grace)--> PENDING (recurring) | FAILED (one-time)
    READY --no worker of its kind exists (a process task, no processes)--> PENDING | FAILED, as above
    PENDING | READY | HANDED --the scheduler stopped, the task lives on in its store--> DETACHED
    HANDED --a run failed, and its Retry allows another attempt--> PENDING
    WAITING --every task it depends on completed--> PENDING
    WAITING --one of them failed or was cancelled, or it was cancelled--> CANCELLED
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol

from actors.errors import InvalidTransitionError
from messages import TaskStatus

__all__ = ["FINAL_STATES", "FINAL_STATUS", "TRANSITIONS", "WAITING", "State", "move_to"]


class State(enum.IntEnum):
    """A task's state in the core (an ``IntEnum``: hashed and compared in C on the hot path)."""

    PENDING = 0
    """In the due heap, waiting for its due time."""
    READY = 1
    """Due, in the ready FIFO, waiting for an idle worker."""
    HANDED = 2
    """In a worker's batch: its current run if first in the batch, else waiting its turn."""
    CANCELLING = 3
    """Cancelled while its worker holds the run: it ends when the worker reports."""
    COMPLETED = 4
    FAILED = 5
    CANCELLED = 6
    DETACHED = 7
    """The scheduler stopped; the task lives on in its store (final for this process)."""
    WAITING = 8
    """A task of ``schedule_after``, waiting for the tasks it depends on to complete."""


PENDING, READY, HANDED, CANCELLING, COMPLETED, FAILED, CANCELLED, DETACHED, WAITING = State

_LEGAL: Final[dict[State, frozenset[State]]] = {
    PENDING: frozenset({READY, CANCELLED, DETACHED}),  # due; or cancelled, shut down, detached
    READY: frozenset(
        {
            HANDED,  # dealt to a worker
            CANCELLED,
            PENDING,  # a recurring task that missed its slot (misfire_grace) waits for the next
            FAILED,  # a one-time task that missed its run
            DETACHED,
        }
    ),
    HANDED: frozenset(
        {
            PENDING,  # a recurring run reported: waits for its next slot
            READY,  # taken back before it started (stolen, or its worker was lost)
            CANCELLING,  # cancelled while its worker holds it
            COMPLETED,
            FAILED,
            CANCELLED,  # taken back and cancelled, or its worker skipped it
            DETACHED,  # taken back at shutdown, or its run reported after shutdown
        }
    ),
    CANCELLING: frozenset({CANCELLED}),  # its worker reported (ran it, or skipped it)
    WAITING: frozenset({PENDING, CANCELLED}),  # its dependencies completed; or one did not, or cancelled
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
    DETACHED: frozenset(),
}
TRANSITIONS: Final[Mapping[State, frozenset[State]]] = MappingProxyType(_LEGAL)
"""``state -> the states it may move to``. The four with none are final."""

FINAL_STATUS: Final[Mapping[State, TaskStatus]] = MappingProxyType(
    {
        COMPLETED: TaskStatus.COMPLETED,
        FAILED: TaskStatus.FAILED,
        CANCELLED: TaskStatus.CANCELLED,
        DETACHED: TaskStatus.SCHEDULED,  # still scheduled, in the store
    }
)
"""The status a task shows once it has left this scheduler."""

FINAL_STATES: Final = frozenset(FINAL_STATUS)
"""The states a task never leaves (here)."""


class HasState(Protocol):
    """Anything with a ``state`` (a ``TaskRecord``)."""

    task_id: str
    state: State


def move_to(task: HasState, new: State) -> None:
    """Move ``task`` to ``new``.

    Raises:
        InvalidTransitionError: the table has no such move (a scheduler bug).
    """
    if new not in _LEGAL[task.state]:
        raise InvalidTransitionError(
            f"task {task.task_id!r} cannot move from {task.state.name} to {new.name}"
        )
    task.state = new
