"""A task's states, the moves between them, and what each state is called elsewhere: all here.

Rule 1 (after h11's ``_state.py``): the task's states, their moves, and how every other word for
a task's state relates to them live in this module, as data.
A task's life is told in four words, each for one reader, and this module relates them:

- ``State`` (this module, internal): where the core has a task. Only the core's thread moves
  it, through ``move_to`` and the ``TRANSITIONS`` table below.
- ``TaskStatus`` (``messages.events``, public): what a snapshot shows (``STATUS``, below:
  several states show as one status).
- ``StoredStatus`` (``messages.events``, written by every store): what a store keeps of a
  task's status (``STORED_STATUS``, below). A store never holds a run in flight, so all the live
  states are ``"scheduled"`` there.
- ``TokenState`` (``actors.sync.token``): not a second account of the task's state but a
  machine of its own, the token: a few bytes that decide, atomically across threads, whether a
  run may still start or a cancel wins. The two are not in step (a cancel moves the token at
  once and the ``State`` when the scheduler hears of it; an end moves the ``State`` first and
  the token when the scheduler carries out its effects), and they meet where a task ends: a
  task in a final state has, once those effects are carried out, the token state
  ``TOKEN_AT_END`` gives; a live task's token is never in one of those.

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
    PENDING | READY | HANDED | WAITING --the scheduler stopped, the task lives on in its store--> DETACHED
    HANDED --a run failed, and its Retry allows another attempt--> PENDING
    WAITING --every task it depends on completed--> PENDING
    WAITING --one of them failed or was cancelled, or it was cancelled--> CANCELLED
    PENDING | READY | HANDED (taken back, or its run reported) | WAITING (released) --paused--> PAUSED
    PAUSED --resumed--> PENDING;  PAUSED --run now--> READY;  PAUSED --> CANCELLED | DETACHED
    PENDING | PAUSED --an overlap="allow" task cancelled while runs of it go--> CANCELLING
    PENDING | PAUSED --an overlap="allow" task's run reached its failure limit--> FAILED
    PENDING | PAUSED --an overlap="allow" task's last run ended, its calendar done--> COMPLETED
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, Protocol

from actors.errors import InvalidTransitionError
from actors.sync.token import TokenState
from messages import TaskStatus
from messages.events import StoredStatus

__all__ = [
    "FINAL_STATES",
    "FINAL_STATUS",
    "PAUSED",
    "STATUS",
    "STORED_FOR_STATUS",
    "STORED_STATUS",
    "TOKEN_AT_END",
    "TRANSITIONS",
    "WAITING",
    "State",
    "move_to",
    "status_of",
]


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
    PAUSED = 9
    """Paused (``Scheduler.pause``): out of the heap; ``due_at`` is the due time it missed or will
    have, which ``resume`` hands to its catch-up policy (``actors/core/operations.py``)."""


PENDING, READY, HANDED, CANCELLING, COMPLETED, FAILED, CANCELLED, DETACHED, WAITING, PAUSED = State

_LEGAL: Final[dict[State, frozenset[State]]] = {
    # due; cancelled, shut down, detached; paused; and an overlap="allow" task (it never runs itself)
    # cancelled while its runs go, ended by one of them (failure limit), or by its calendar's end
    PENDING: frozenset({READY, CANCELLED, DETACHED, PAUSED, CANCELLING, FAILED, COMPLETED}),
    READY: frozenset(
        {
            HANDED,  # dealt to a worker
            CANCELLED,
            PENDING,  # a recurring task that missed its slot (misfire_grace) waits for the next
            FAILED,  # a one-time task that missed its run
            DETACHED,
            PAUSED,  # paused while it waited for a worker
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
            PAUSED,  # taken back as it was paused, or a paused task's run (or attempt) reported
        }
    ),
    CANCELLING: frozenset({CANCELLED}),  # its worker reported (ran it, or skipped it)
    # its dependencies completed; one did not; paused while it waited; stored at shutdown
    WAITING: frozenset({PENDING, CANCELLED, PAUSED, DETACHED}),
    PAUSED: frozenset(
        {
            PENDING,  # resumed
            READY,  # run now (it stays paused: the run's end brings it back here)
            CANCELLED,
            DETACHED,  # the scheduler stopped; it stays paused in its store
            CANCELLING,  # an overlap="allow" task cancelled while its runs go (they end it)
            FAILED,  # an overlap="allow" task's run reached its failure limit
            COMPLETED,  # an overlap="allow" task's last run ended, its calendar firing no more
        }
    ),
    COMPLETED: frozenset(),
    FAILED: frozenset(),
    CANCELLED: frozenset(),
    DETACHED: frozenset(),
}
TRANSITIONS: Final[Mapping[State, frozenset[State]]] = MappingProxyType(_LEGAL)
"""``state -> the states it may move to``. The four with none are final."""

FINAL_STATES: Final = frozenset(state for state, targets in _LEGAL.items() if not targets)
"""The states a task never leaves (here): those the table gives no move out of."""

STATUS: Final[Mapping[State, TaskStatus]] = MappingProxyType(
    {
        PENDING: TaskStatus.SCHEDULED,
        READY: TaskStatus.SCHEDULED,  # due, waiting for a worker
        HANDED: TaskStatus.SCHEDULED,  # waiting its turn in a batch; RUNNING once its worker is on it
        CANCELLING: TaskStatus.RUNNING,  # its worker still holds the run
        COMPLETED: TaskStatus.COMPLETED,
        FAILED: TaskStatus.FAILED,
        CANCELLED: TaskStatus.CANCELLED,
        DETACHED: TaskStatus.SCHEDULED,  # still scheduled, in the store
        WAITING: TaskStatus.WAITING,
        PAUSED: TaskStatus.PAUSED,
    }
)
"""``state -> the status a snapshot shows``; ``status_of`` adds the one case a state alone cannot
say (a ``HANDED`` task whose worker is on its run now is ``RUNNING``)."""

FINAL_STATUS: Final[Mapping[State, TaskStatus]] = MappingProxyType(
    {state: STATUS[state] for state in FINAL_STATES}
)
"""The status a task shows once it has left this scheduler (``STATUS`` of the final states)."""

STORED_FOR_STATUS: Final[Mapping[TaskStatus, StoredStatus]] = MappingProxyType(
    {
        TaskStatus.SCHEDULED: "scheduled",
        TaskStatus.RUNNING: "scheduled",  # a run in flight is not stored: live after a restart
        TaskStatus.WAITING: "scheduled",
        TaskStatus.PAUSED: "scheduled",  # live; the store keeps the paused flag beside it
        TaskStatus.COMPLETED: "completed",
        TaskStatus.FAILED: "failed",
        TaskStatus.CANCELLED: "cancelled",
    }
)
"""``status -> what a store writes``: a terminal status as itself, a live one as ``"scheduled"``
(a store reads a stored status back as ``TaskStatus(stored)``)."""

STORED_STATUS: Final[Mapping[State, StoredStatus]] = MappingProxyType(
    {state: STORED_FOR_STATUS[status] for state, status in STATUS.items()}
)
"""``state -> what a store writes`` (a detached task is live, in its store)."""

TOKEN_AT_END: Final[Mapping[State, TokenState]] = MappingProxyType(
    {
        COMPLETED: TokenState.FINISHED,  # Token.finish, with the run's outcome
        FAILED: TokenState.FINISHED,
        CANCELLED: TokenState.FINISHED,
        DETACHED: TokenState.DETACHED,  # Token.detach: the task lives on in its store
    }
)
"""``final state -> its token's state`` once the scheduler has carried out the task's last effects.

The token's two ending states (those its table gives no move out of) are exactly these values: a
task's token is in one of them if and only if the task is in a final state, which is how a caller
on another thread learns that a task has ended without reading the core's ``State``."""


def status_of(state: State, *, running: bool) -> TaskStatus:
    """The status a task in ``state`` shows; ``running``: whether a worker is on its run now."""
    if running and state is HANDED:
        return TaskStatus.RUNNING
    return STATUS[state]


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
