"""Where a task is in its life, and the moves it may make: the table, written once, as data.

Part of the pure core (see ``actors/timetable.py``). Every change of a task's state goes
through ``move_to``, which refuses a move the table does not list: such a move is a bug in the
scheduler, never the user's doing, and failing loudly beats a task silently stuck.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol

from actors.errors import InvalidTransitionError
from messages import TaskStatus

__all__ = ["FINAL_STATES", "FINAL_STATUS", "TRANSITIONS", "State", "move_to"]


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


PENDING, READY, HANDED, CANCELLING, COMPLETED, FAILED, CANCELLED = State

_LEGAL: Final[dict[State, frozenset[State]]] = {
    PENDING: frozenset({READY, CANCELLED}),  # due; or cancelled, shut down
    READY: frozenset({HANDED, CANCELLED}),  # dealt to a worker; or cancelled
    HANDED: frozenset(
        {
            PENDING,  # a recurring run reported: waits for its next slot
            READY,  # taken back before it started (stolen, or its worker was lost)
            CANCELLING,  # cancelled while its worker holds it
            COMPLETED,
            FAILED,
            CANCELLED,  # taken back and cancelled, or its worker skipped it
        }
    ),
    CANCELLING: frozenset({CANCELLED}),  # its worker reported (ran it, or skipped it)
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
}
TRANSITIONS: Final[Mapping[State, frozenset[State]]] = MappingProxyType(_LEGAL)
"""``state -> the states it may move to``. The last three are final."""

FINAL_STATUS: Final[Mapping[State, TaskStatus]] = MappingProxyType(
    {COMPLETED: TaskStatus.COMPLETED, FAILED: TaskStatus.FAILED, CANCELLED: TaskStatus.CANCELLED}
)
"""The status a finished task shows."""

FINAL_STATES: Final = frozenset(FINAL_STATUS)
"""The states a task never leaves."""


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
