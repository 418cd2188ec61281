"""A task's token and a run's claim: the atomic moves that threads race on.

This is the one module of ``tests/unit`` that starts threads: the races are the point. They are
kept short (``ROUNDS`` rounds) and bounded (every wait has a timeout, and every thread is
joined with one).
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

import actors.sync.token as token_module
from actors.core.task_record import TaskRecord
from actors.sync.claim import INTERRUPTED, NOT_STOPPED, Claim
from actors.sync.token import (
    DONE,
    REFUSED,
    START_HELD,
    STARTED,
    STARTED_CLAIMED,
    TRANSITIONS,
    UNSURE,
    Move,
    Token,
    TokenState,
)
from tests.unit.helpers import noop

FREE, RUNNING, RAN, TAKEN, REVOKED, FINISHED, DETACHED = TokenState
ROUNDS = 2_000
TIMEOUT = 10.0  # seconds any thread or wait may take before the test fails


def token_in(state: TokenState) -> Token:
    """A fresh token brought to ``state`` by legal moves only."""
    token = Token()
    if state is RUNNING:
        assert token.try_start(False)
    elif state is RAN:
        assert token.try_start(False)
        token.end_run()
    elif state is TAKEN:
        assert token.take()
    elif state is REVOKED:
        assert token.revoke() is FREE
    elif state is FINISHED:
        token.finish("outcome")
    elif state is DETACHED:
        assert token.detach()
    assert token.token_state is state
    return token


def finish_new(token: Token) -> RuntimeError | None:
    try:
        token.finish("new outcome")
    except RuntimeError as error:
        return error
    return None


MOVES: dict[Move, Callable[[Token], object]] = {
    Move.START_ONE_TIME: lambda token: token.try_start(True) > 0,
    Move.START_RECURRING: lambda token: token.try_start(False) > 0,
    Move.END_RUN: lambda token: token.end_run(),
    Move.RUN_REPORTED: lambda token: token.run_reported(),
    Move.REVOKE: lambda token: token.revoke(),
    Move.TAKE: lambda token: token.take(),
    Move.FINISH: finish_new,  # returns the error of a refused finish
    Move.DETACH: lambda token: token.detach(),
    Move.ABANDON_RUN: lambda token: token.abandon_run(Claim.free()),
}
"""Each move, made by its method; each returns what the method returned."""


# -- the table --------------------------------------------------------------------------------


@pytest.mark.parametrize("state", TokenState, ids=lambda s: s.name)
@pytest.mark.parametrize("move", Move, ids=lambda m: m.name)
def test_the_table_drives_every_move(state: TokenState, move: Move) -> None:
    token = token_in(state)
    outcome = token.outcome
    result = MOVES[move](token)
    new = TRANSITIONS.get((state, move))
    assert token.token_state is (state if new is None else new)  # a move not in the table changes nothing
    if move in (Move.START_ONE_TIME, Move.START_RECURRING, Move.TAKE, Move.DETACH):
        assert result is (new is not None)  # the mover learns whether it won
    elif move is Move.REVOKE:
        assert result is state  # the mover learns the state before: FREE, RUNNING or RAN means it won
    elif move is Move.FINISH:
        assert isinstance(result, RuntimeError) is (new is None)
        assert token.outcome == (outcome if new is None else "new outcome")
    elif move in (Move.END_RUN, Move.ABANDON_RUN):
        assert result is True  # the claim of the run is neither abandoned nor ended: the move is made
    else:
        assert result is None
    if move is not Move.FINISH:
        assert token.outcome is outcome  # only finish publishes an outcome


DOC_COLUMNS = {
    "start(1)": Move.START_ONE_TIME,
    "start(rec)": Move.START_RECURRING,
    "end_run": Move.END_RUN,
    "reported": Move.RUN_REPORTED,
    "revoke": Move.REVOKE,
    "take": Move.TAKE,
    "finish": Move.FINISH,
    "detach": Move.DETACH,
    "abandon": Move.ABANDON_RUN,
}


def documented_table() -> dict[tuple[TokenState, Move], TokenState]:
    """The table in ``actors/sync/token.py``'s docstring, read as data."""
    doc = token_module.__doc__ or ""
    lines = [line.strip() for line in doc.splitlines()]
    header = next(i for i, line in enumerate(lines) if line.startswith("state "))
    columns = [DOC_COLUMNS[name] for name in lines[header].split()[1:]]
    table: dict[tuple[TokenState, Move], TokenState] = {}
    for line in lines[header + 1 : header + 1 + len(TokenState)]:
        name, *cells = line.split()
        state = TokenState[name]
        assert len(cells) == len(columns), line
        for move, cell in zip(columns, cells, strict=True):
            if cell == "=":
                table[state, move] = state
            elif cell != "-":
                table[state, move] = TokenState[cell]
    return table


def test_the_documented_table_is_the_table() -> None:
    assert documented_table() == dict(TRANSITIONS)


def test_finished_and_detached_are_final_and_every_other_state_can_finish() -> None:
    ends = (FINISHED, DETACHED)
    assert not [move for (state, move) in TRANSITIONS if state in ends]
    assert all((state, Move.FINISH) in TRANSITIONS for state in TokenState if state not in ends)


def test_finish_publishes_the_outcome_once() -> None:
    token = Token()
    assert token.outcome is None
    token.finish(["value"])
    assert (token.token_state, token.outcome) == (FINISHED, ["value"])
    with pytest.raises(RuntimeError, match="FINISHED"):
        token.finish("again")
    assert token.outcome == ["value"]


def test_a_task_record_is_a_token() -> None:
    record = TaskRecord("a", noop, (), {}, due_at=0.0)
    assert isinstance(record, Token)
    assert record.token_state is FREE
    assert record.try_start(True)
    assert record.revoke() is TAKEN


# -- waiting for the end ----------------------------------------------------------------------


def test_wait_ended_returns_at_once_when_revoked_or_finished() -> None:
    assert token_in(REVOKED).wait_ended(0)
    assert token_in(FINISHED).wait_ended(0)


@pytest.mark.parametrize("state", [FREE, RUNNING, RAN, TAKEN])
def test_wait_ended_times_out_while_the_task_lives(state: TokenState) -> None:
    token = token_in(state)
    begun = time.monotonic()
    assert token.wait_ended(0.02) is False
    assert time.monotonic() - begun >= 0.02


def run_thread(target: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    result: list[Any] = []
    thread = threading.Thread(target=lambda: result.append(target()), daemon=True)
    thread.start()
    return thread, result


@pytest.mark.parametrize("end", ["revoke", "finish"])
def test_wait_ended_wakes_every_waiter(end: str) -> None:
    token = Token()
    assert token.wait_ended(0) is False  # a waiter that gave up leaves nothing that could block later
    waiters = [run_thread(lambda: token.wait_ended(TIMEOUT)) for _ in range(3)]
    if end == "revoke":
        assert token.revoke() is FREE
    else:
        token.finish(None)
    for thread, result in waiters:
        thread.join(TIMEOUT)
        assert not thread.is_alive()
        assert result == [True]
    assert token not in token_module._WAITERS  # nothing kept for a token that has ended


# -- races between threads ----------------------------------------------------------------------


@contextmanager
def frequent_switches() -> Iterator[None]:
    """Let the interpreter switch threads as often as it can, so the races interleave."""
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(interval)


def race(first: Callable[[int], object], second: Callable[[int], object]) -> tuple[list[Any], list[Any]]:
    """Call ``first(i)`` and ``second(i)`` on two threads, released together by a barrier, for each round."""
    barrier = threading.Barrier(2, timeout=TIMEOUT)
    results: tuple[list[Any], list[Any]] = ([], [])

    def play(move: Callable[[int], object], out: list[Any]) -> None:
        for i in range(ROUNDS):
            barrier.wait()
            out.append(move(i))

    threads = [
        threading.Thread(target=play, args=(first, results[0]), daemon=True),
        threading.Thread(target=play, args=(second, results[1]), daemon=True),
    ]
    with frequent_switches():
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(TIMEOUT)
    assert not any(thread.is_alive() for thread in threads), "a racer is stuck"
    assert len(results[0]) == len(results[1]) == ROUNDS, "a racer failed"
    return results


def test_revoke_against_a_one_time_start_exactly_one_wins() -> None:
    tokens = [Token() for _ in range(ROUNDS)]
    revokes, starts = race(lambda i: tokens[i].revoke(), lambda i: tokens[i].try_start(True))
    for token, before, started in zip(tokens, revokes, starts, strict=True):
        assert before in (FREE, TAKEN)
        assert (before is FREE) is not started, "both won, or neither"
        assert token.token_state is (TAKEN if started else REVOKED)


def test_revoke_against_take_exactly_one_wins() -> None:
    tokens = [Token() for _ in range(ROUNDS)]
    revokes, takes = race(lambda i: tokens[i].revoke(), lambda i: tokens[i].take())
    for token, before, took in zip(tokens, revokes, takes, strict=True):
        assert before in (FREE, TAKEN)
        assert (before is FREE) is not took, "both won, or neither"
        assert token.token_state is (TAKEN if took else REVOKED)


def test_no_recurring_run_starts_after_a_revoke() -> None:
    attempts = 4
    tokens = [Token() for _ in range(ROUNDS)]

    def runs(i: int) -> list[bool]:
        token, started = tokens[i], []
        for _ in range(attempts):
            ok = token.try_start(False) > 0
            started.append(ok)
            if ok:
                token.end_run()
                token.run_reported()  # the scheduler, as the run's report arrives
        return started

    revokes, starts = race(lambda i: tokens[i].revoke(), runs)
    for token, before, started in zip(tokens, revokes, starts, strict=True):
        assert before in (FREE, RUNNING, RAN)  # the revoke always wins: only it ends the token
        assert token.token_state is REVOKED  # end_run after the revoke did not undo it
        count = started.count(True)
        assert started == [True] * count + [False] * (attempts - count), "a run started after a refusal"
        if before in (RUNNING, RAN):
            assert count >= 1  # it met a run in flight, and that run went on; no other started


def test_claim_has_exactly_one_taker() -> None:
    claim = Claim.free()
    assert claim.take() is True
    assert claim.take() is False
    assert claim.take() is False


def test_claims_are_independent() -> None:
    first, second = Claim.free(), Claim.free()
    assert token_module.request_stop(first, INTERRUPTED)  # its own stop state, not the class's
    assert (first.stop, second.stop) == (INTERRUPTED, NOT_STOPPED)
    assert not hasattr(first, "__dict__")  # slotted: one is made for every run
    assert first.take()
    assert second.take()


def test_a_claim_raced_by_two_threads_has_one_taker() -> None:
    claims = [Claim.free() for _ in range(ROUNDS)]
    firsts, seconds = race(lambda i: claims[i].take(), lambda i: claims[i].take())
    for first, second in zip(firsts, seconds, strict=True):
        assert first is not second


# -- operations: the HELD bit and the manual claim ----------------------------------------------


class Reports(list[object]):
    """An outbox stand-in: ``append`` puts a report and says the scheduler must be told."""

    def append(self, report: object) -> bool:  # type: ignore[override]
        super().append(report)
        return True


@pytest.mark.parametrize("state", TokenState, ids=lambda s: s.name)
def test_the_operation_moves_by_state(state: TokenState) -> None:
    live = state in (FREE, RUNNING, RAN)
    put = Reports()
    token = token_in(state)
    expected = DONE if live else UNSURE if state is TAKEN else REFUSED
    assert token.hold("paused", put.append) == (expected, expected == DONE)  # DONE: put, and told to tell
    assert token.held is live
    if state is TAKEN:  # the scheduler, which knows the task is live, may
        assert token.hold("paused", put.append, taken_live=True)[0] == DONE
    assert token.hold("again", put.append, taken_live=True)[0] == REFUSED
    resumes = live or state is TAKEN
    assert token.release_hold("resumed", put.append, taken_live=True)[0] == (DONE if resumes else REFUSED)
    assert token.release_hold("again", put.append, taken_live=True)[0] == REFUSED
    assert token.claim_manual("claimed", put.append)[0] == (DONE if state is FREE else REFUSED)
    assert token.claim_manual("again", put.append)[0] == REFUSED
    reports = ["paused", "resumed", "claimed"] if state is FREE else ["paused", "resumed"] if resumes else []
    assert put == reports  # a report is put exactly when its move wins
    assert token.token_state is state  # the operation moves never move the state


def test_a_held_token_starts_only_a_manual_run() -> None:
    token = Token()
    assert token.hold()[0] == DONE
    assert token.try_start(False) == START_HELD
    assert token.try_start(True) == START_HELD
    assert token.token_state is FREE
    assert token.try_start(False, manual=True) == STARTED
    token.end_run()
    token.run_reported()
    assert token.release_hold()[0] == DONE
    assert token.try_start(False) == STARTED


def test_an_open_claim_is_taken_by_the_next_start_once_held_or_not() -> None:
    token = Token()
    assert token.hold()[0] == DONE
    assert token.claim_manual()[0] == DONE
    assert token.try_start(False) == STARTED_CLAIMED  # a scheduled run starting now is the manual one
    token.end_run()
    token.run_reported()
    assert token.try_start(False) == START_HELD  # the claim is spent; it is still held
    assert token.claim_manual()[0] == DONE
    token.drop_claim()  # the scheduler dropped the manual run before it started
    assert token.try_start(False) == START_HELD


def test_a_claim_against_a_scheduled_start_promises_exactly_one_manual_run() -> None:
    tokens = [Token() for _ in range(ROUNDS)]
    claims, starts = race(lambda i: tokens[i].claim_manual()[0], lambda i: tokens[i].try_start(False))
    for token, claimed, started in zip(tokens, claims, starts, strict=True):
        assert started > 0  # the scheduled run starts either way (a claim holds nothing back)
        # The claim won (and that very run is the manual one), or the run had started: refused.
        assert (claimed == DONE) is (started == STARTED_CLAIMED), (claimed, started)
        assert token.token_state is RUNNING


def test_a_pause_against_a_start_either_holds_the_run_back_or_finds_it_started() -> None:
    tokens = [Token() for _ in range(ROUNDS)]
    holds, starts = race(lambda i: tokens[i].hold()[0], lambda i: tokens[i].try_start(False))
    for token, held, started in zip(tokens, holds, starts, strict=True):
        assert held == DONE  # a run in flight does not stop a pause: it finishes
        assert started in (STARTED, START_HELD)
        assert token.token_state is (RUNNING if started == STARTED else FREE)
