"""A task's states in the core, the table of moves between them, and what each state shows."""

from __future__ import annotations

from typing import get_args

import pytest

from actors.core.task_record import TaskRecord
from actors.core.task_state import (
    FINAL_STATES,
    FINAL_STATUS,
    STATUS,
    STORED_FOR_STATUS,
    STORED_STATUS,
    TOKEN_AT_END,
    TRANSITIONS,
    State,
    move_to,
    status_of,
)
from actors.errors import InvalidTransitionError
from actors.store import LIVE_STATUS, STATUSES, TERMINAL_STATUSES, StoredStatus
from actors.sync import token
from messages import TERMINAL_STATUSES as TERMINAL_TASK_STATUSES
from messages import TaskStatus
from tests.unit.helpers import noop

PENDING, READY, HANDED, CANCELLING, COMPLETED, FAILED, CANCELLED, DETACHED, WAITING, PAUSED = State

DIAGRAM = {
    PENDING: {READY, CANCELLED, DETACHED, PAUSED, CANCELLING, FAILED, COMPLETED},
    READY: {HANDED, CANCELLED, PENDING, FAILED, DETACHED, PAUSED},
    HANDED: {PENDING, READY, CANCELLING, COMPLETED, FAILED, CANCELLED, DETACHED, PAUSED},
    CANCELLING: {CANCELLED},
    WAITING: {PENDING, CANCELLED, PAUSED, DETACHED},
    PAUSED: {PENDING, READY, CANCELLED, DETACHED, CANCELLING, FAILED, COMPLETED},
    COMPLETED: set(),
    FAILED: set(),
    CANCELLED: set(),
    DETACHED: set(),
}
"""The state diagram, edge by edge (``actors/core/task_state.py`` describes each edge in a comment):

    PENDING --due--> READY --dealt--> HANDED --recurring run reported--> PENDING
    HANDED --taken back (stolen, worker lost)--> READY
    HANDED --cancelled while its worker holds the run--> CANCELLING --worker reported--> CANCELLED
    HANDED --run reported--> COMPLETED | FAILED;  PENDING | READY | HANDED --cancelled--> CANCELLED
    READY --missed its run (misfire_grace)--> PENDING (recurring) | FAILED (one-time)
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


def test_every_state_is_a_key() -> None:
    assert set(TRANSITIONS) == set(State)


def test_the_table_is_the_diagram() -> None:
    assert {state: set(targets) for state, targets in TRANSITIONS.items()} == DIAGRAM


def test_final_states_are_those_without_a_way_out() -> None:
    assert set(FINAL_STATUS) == {state for state, targets in TRANSITIONS.items() if not targets}
    assert FINAL_STATUS == {
        COMPLETED: TaskStatus.COMPLETED,
        FAILED: TaskStatus.FAILED,
        CANCELLED: TaskStatus.CANCELLED,
        DETACHED: TaskStatus.SCHEDULED,
    }


def reachable(start: State) -> set[State]:
    seen, todo = {start}, [start]
    while todo:
        for target in TRANSITIONS[todo.pop()]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


def test_every_state_is_reachable_and_every_live_one_can_end() -> None:
    assert reachable(PENDING) | reachable(WAITING) == set(State)  # the two ways a task starts
    for state in set(State) - set(FINAL_STATUS):
        assert reachable(state) & set(FINAL_STATUS), state
        assert CANCELLED in TRANSITIONS[state]  # a live task can always be cancelled


def record_in(state: State) -> TaskRecord:
    record = TaskRecord("t", noop, (), {}, due_at=0.0)
    record.state = state
    return record


PAIRS = [(old, new) for old in State for new in State]


@pytest.mark.parametrize(("old", "new"), PAIRS, ids=[f"{old.name}->{new.name}" for old, new in PAIRS])
def test_move_to_follows_the_table(old: State, new: State) -> None:
    record = record_in(old)
    if new in TRANSITIONS[old]:
        move_to(record, new)
        assert record.state is new
    else:
        with pytest.raises(InvalidTransitionError, match=f"'t' cannot move from {old.name} to {new.name}"):
            move_to(record, new)
        assert record.state is old  # refused: nothing changed


@pytest.mark.parametrize(
    ("state", "running", "shown"),
    [
        (PENDING, False, TaskStatus.SCHEDULED),
        (READY, False, TaskStatus.SCHEDULED),
        (HANDED, False, TaskStatus.SCHEDULED),  # waiting its turn in a batch
        (HANDED, True, TaskStatus.RUNNING),  # its worker's current run
        (CANCELLING, False, TaskStatus.RUNNING),
        (COMPLETED, False, TaskStatus.COMPLETED),
        (FAILED, False, TaskStatus.FAILED),
        (CANCELLED, True, TaskStatus.CANCELLED),
        (DETACHED, False, TaskStatus.SCHEDULED),
    ],
)
def test_what_each_state_shows(state: State, running: bool, shown: TaskStatus) -> None:
    info = record_in(state).snapshot(running=running)
    assert info.status is shown
    assert info.next_run_at == (0.0 if shown is TaskStatus.SCHEDULED else None)  # detached: in the store
    assert (info.end_reason is None) is (state not in FINAL_STATUS)


def test_every_state_shows_exactly_one_status() -> None:
    assert set(STATUS) == set(State)
    assert set(STATUS.values()) == set(TaskStatus)  # RUNNING: CANCELLING, or HANDED with its worker on it
    for state in State:
        assert status_of(state, running=False) is STATUS[state]
        assert status_of(state, running=True) is (TaskStatus.RUNNING if state is HANDED else STATUS[state])


def test_the_final_states_show_the_terminal_statuses_and_detached() -> None:
    assert set(FINAL_STATES) == set(FINAL_STATUS)
    assert {state: STATUS[state] for state in FINAL_STATES} == FINAL_STATUS
    assert {STATUS[s] for s in FINAL_STATES - {DETACHED}} == TERMINAL_TASK_STATUSES
    assert not {STATUS[s] for s in set(State) - FINAL_STATES} & TERMINAL_TASK_STATUSES


def test_every_state_is_stored_as_its_status() -> None:
    assert set(STORED_FOR_STATUS) == set(TaskStatus)
    for status, stored in STORED_FOR_STATUS.items():
        assert stored in STATUSES
        assert stored == (status.value if status in TERMINAL_TASK_STATUSES else LIVE_STATUS)
        assert TaskStatus(stored) is (status if status in TERMINAL_TASK_STATUSES else TaskStatus.SCHEDULED)
    assert {state: STORED_FOR_STATUS[STATUS[state]] for state in State} == STORED_STATUS
    assert {STORED_STATUS[s] for s in FINAL_STATES - {DETACHED}} == TERMINAL_STATUSES


def test_the_stored_statuses_are_defined_once() -> None:
    assert set(get_args(StoredStatus)) == STATUSES == TERMINAL_STATUSES | {LIVE_STATUS}
    assert {status.value for status in TERMINAL_TASK_STATUSES} == TERMINAL_STATUSES
    assert set(STORED_FOR_STATUS.values()) == STATUSES


def test_a_final_state_has_an_ended_token_and_a_live_one_never() -> None:
    ended = {s for s in token.TokenState if not any((s, move) in token.TRANSITIONS for move in token.Move)}
    assert set(TOKEN_AT_END) == FINAL_STATES
    assert set(TOKEN_AT_END.values()) == ended == {token.FINISHED, token.DETACHED}
