"""A task's token: the one place that decides whether a run of the task may still start.

Three parties race for a task's fate, each on its own thread: a caller cancelling it
(``TaskHandle.cancel``), a worker about to start one of its runs, and the scheduler (cancelling
it for a ``Cancel`` message or at shutdown, or ending it after too many failures). Each of
them makes one *move* on the task's token; a move is one check-and-set under ``_LOCK``, so
exactly one of two racing moves wins, and each party learns from its own move's result. Nobody
decides by looking at a token: the scheduler's core treats a move's result as an input.

``TokenState`` is the token's machine, not a second account of the task's state (that is
``State``, in ``actors/core/task_state.py``, which also says how the two relate: a task's token
has ended, ``FINISHED`` or ``DETACHED``, exactly when its ``State`` is final; ``TOKEN_AT_END``).

The state table (``TRANSITIONS`` below is this table as data). A cell is the state the move
leads to; "-" means the move fails and nothing changes, "=" that it succeeds and the state stays:

    state     start(1)  start(rec)  end_run  reported  abandon  revoke   take   finish    detach
    FREE      TAKEN     RUNNING     -        -         -        REVOKED  TAKEN  FINISHED  DETACHED
    RUNNING   -         -           RAN      -         FREE     REVOKED  -      FINISHED  DETACHED
    RAN       -         -           -        FREE      FREE     REVOKED  -      FINISHED  DETACHED
    TAKEN     -         -           -        -         -        -        -      FINISHED  DETACHED
    REVOKED   -         -           =        =         =        -        -      FINISHED  -
    FINISHED  -         -           -        -         -        -        -      -         -
    DETACHED  -         -           -        -         -        -        -      -         -

(``start(1)`` is ``try_start`` of a one-time run, ``start(rec)`` of a recurring one (and of
any run of a task that may be retried: a cancel must still win between its attempts);
``reported`` is ``run_reported``; ``abandon`` is ``abandon_run``.)

- ``RUNNING``: a run of a recurring task is in progress; ``RAN``: it has ended and its report
  is on its way to the scheduler (the worker moves the token on with ``end_run`` before it
  reports, as it does for every run: ``end_run`` also closes the run's claim to stop
  requests; the scheduler back to ``FREE`` with ``run_reported`` when the report arrives). A
  cancel still wins in either, for every later run, and learns from ``revoke``'s result that a
  run is in flight: the task ends when its report arrives, and the run counts.
- ``TAKEN``: the task's fate is sealed: a one-time run has started (a cancel can no longer
  prevent it), or the scheduler is ending the task (a cancel can no longer change how).
- ``abandon``: the scheduler gives up on a hung run (it outlived its timeout and grace): the
  token is free for the task's next run, and the run's claim is marked ``ABANDONED`` in the
  same move, so the abandoned worker's own ``end_run``, whenever it comes, moves nothing.
- ``REVOKED``: cancelled; no run starts any more. A handle reports ``done()`` from here on.
- ``FINISHED``: the scheduler has published the task's final state (``finish``); the record
  never changes again, so any thread may read it.
- ``DETACHED``: the scheduler stopped, and the task lives on in its store, not in this
  process: its handle is not done, and waiting for it ends at once (``detach``, by the
  scheduler: at shutdown for a task with no run in flight; when stopped by force, for any).

Operated tasks (issue 24's ``pause``, ``resume`` and ``run_now``): two bits beside the state,
in ``_OPS`` (a dict beside the tokens), moved under the same lock, so that a pause or a manual
run is decided against a start or a cancel in one place. ``HELD``: the task is paused (no run
starts but a manual one); ``CLAIMED``: one manual run is promised and has not started (a
``run_now`` of an ``overlap="skip"`` task). A caller decides with ``hold``, ``release_hold`` or
``claim_manual``, and in the same hold of the lock puts its report for the scheduler (``put``):
the reports then reach the scheduler in the order the moves were made, and before any report
of a run that the move changed (a worker's ``try_start`` comes after, under the lock, and its
report after that). ``try_start`` obeys them: a run of a held task does not start unless it
is manual, or the claim is still open (which it then takes: that run is the manual one).

    move            allowed in          needs           sets            result
    hold            FREE RUNNING RAN    not HELD        HELD            DONE; TAKEN: UNSURE
    release_hold    FREE RUNNING RAN    HELD            clears HELD     DONE; TAKEN: UNSURE
    claim_manual    FREE                not CLAIMED     CLAIMED         DONE
    drop_claim      any                 -               clears CLAIMED  -

Any other case is ``REFUSED`` (ended, cancelled, already held or not held, a run in flight).
``UNSURE``: ``TAKEN`` means a one-time run has started (the task is live) or the task is
ending; only the scheduler knows which (``taken_live``).

Who makes which move: ``try_start`` and ``end_run`` the worker, around a run; ``abandon_run``
the scheduler; ``revoke`` a
caller (``TaskHandle.cancel``, ``Scheduler.cancel``) or the scheduler (``Cancel`` message,
shutdown); ``run_reported`` the scheduler, as a recurring run's report arrives; ``take`` the
scheduler, to end a recurring task after too many failures; ``finish`` the scheduler, once.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from actors.sync.claim import ABANDONED, Claim
from actors.sync.waiting import wait_until

__all__ = [
    "CLAIMED",
    "DETACHED",
    "DONE",
    "FINISHED",
    "FREE",
    "HELD",
    "RAN",
    "REFUSED",
    "REVOKED",
    "RUNNING",
    "STARTED",
    "STARTED_CLAIMED",
    "START_HELD",
    "START_REFUSED",
    "TAKEN",
    "TRANSITIONS",
    "UNSURE",
    "Move",
    "Token",
    "TokenState",
    "request_stop",
]


class TokenState(enum.IntEnum):
    """Where a task's token is: whether a run may start, a cancel win (an ``IntEnum``: compared in C).

    Its relation to the task's ``State``: ``actors/core/task_state.py``.
    """

    FREE = 0
    RUNNING = 1
    RAN = 2
    TAKEN = 3
    REVOKED = 4
    FINISHED = 5
    DETACHED = 6


class Move(enum.IntEnum):
    """The moves on a token (``try_start`` is two moves: one-time runs take the token)."""

    START_ONE_TIME = 0
    START_RECURRING = 1
    END_RUN = 2
    RUN_REPORTED = 3
    REVOKE = 4
    TAKE = 5
    FINISH = 6
    DETACH = 7
    ABANDON_RUN = 8


FREE, RUNNING, RAN, TAKEN, REVOKED, FINISHED, DETACHED = TokenState

HELD: Final = 1
"""``_OPS`` bit: the task is paused; only a manual run (or the open claim's) may start."""
CLAIMED: Final = 2
"""``_OPS`` bit: one manual run is promised (``claim_manual``) and has not started yet."""

DONE: Final = 1
"""An operation's move won: the caller answers ``True``; its report is put."""
REFUSED: Final = 0
"""An operation's move failed: the caller answers ``False``; nothing changed, nothing put."""
UNSURE: Final = 2
"""The token cannot tell (``TAKEN``): the caller asks the scheduler, which knows the task's state."""

STARTED: Final = 1
"""``try_start``: the run may start."""
STARTED_CLAIMED: Final = 2
"""``try_start``: the run may start, and it is the manual run a ``claim_manual`` promised."""
START_REFUSED: Final = 0
"""``try_start``: the run must not start (cancelled, ended): the worker reports ``Skipped``."""
START_HELD: Final = -1
"""``try_start``: the run must not start, its task is paused (``Skipped(paused=True)``). Truthy:
compare a verdict with ``> 0``, not by its truth."""

_MOVES: Final[dict[tuple[TokenState, Move], TokenState]] = {
    (FREE, Move.START_ONE_TIME): TAKEN,
    (FREE, Move.START_RECURRING): RUNNING,
    (FREE, Move.REVOKE): REVOKED,
    (FREE, Move.TAKE): TAKEN,
    (FREE, Move.FINISH): FINISHED,
    (FREE, Move.DETACH): DETACHED,
    (RUNNING, Move.DETACH): DETACHED,
    (RAN, Move.DETACH): DETACHED,
    (TAKEN, Move.DETACH): DETACHED,
    (RUNNING, Move.END_RUN): RAN,
    (RUNNING, Move.REVOKE): REVOKED,
    (RUNNING, Move.FINISH): FINISHED,
    (RAN, Move.RUN_REPORTED): FREE,
    (RAN, Move.REVOKE): REVOKED,
    (RAN, Move.FINISH): FINISHED,
    (TAKEN, Move.FINISH): FINISHED,
    (REVOKED, Move.END_RUN): REVOKED,
    (REVOKED, Move.RUN_REPORTED): REVOKED,
    (REVOKED, Move.FINISH): FINISHED,
    (RUNNING, Move.ABANDON_RUN): FREE,
    (RAN, Move.ABANDON_RUN): FREE,
    (REVOKED, Move.ABANDON_RUN): REVOKED,
}
TRANSITIONS: Final[Mapping[tuple[TokenState, Move], TokenState]] = MappingProxyType(_MOVES)
"""The legal moves: ``(state, move) -> new state``. A move not listed fails and changes nothing."""


def request_stop(claim: Claim, reason: int) -> bool:
    """Ask the run holding ``claim`` to stop, for ``reason`` (any thread); whether this asked it.

    ``False`` if it was asked already for this reason, or if the run has ended (its worker's
    ``end_run``, or the scheduler's ``abandon_run``). Calls the run's waker (a coroutine run's
    cancel) outside the lock.
    """
    with _LOCK:
        if claim.run_ended or claim.stop & reason:
            return False
        claim.stop |= reason
        waker = claim.waker
    if waker is not None:
        waker()
    return True


# _LOCK guards every token's _token and _outcome, _OPS, _WAITERS, and the stop state of every
# run's claim (stop, run_ended). One lock for all tokens, and
# an Event only for a task someone actually waits on, so that a million pending tasks stay
# small. Every hold is a few dict operations; the one call out is an operation's ``put``, an
# Outbox.put (a list append, no lock: actors/sync/outbox.py), made inside so that its reports
# are in the order of the moves. Lock order: the facade's _lock, then this one.
_LOCK: Final = threading.Lock()
_WAITERS: dict[Token, threading.Event] = {}
_OPS: dict[Token, int] = {}
"""``HELD | CLAIMED`` of each operated token, kept beside the tokens (not a slot of each): almost
no task is ever paused or run now, and a slot would cost every pending task 8 bytes. An entry
goes when its bits are cleared or its token ends (``revoke``, ``finish``, ``detach``)."""


def _set_ops(token: Token, ops: int) -> None:
    """Set ``token``'s operation bits (under ``_LOCK``): no entry for none."""
    if ops:
        _OPS[token] = ops
    else:
        _OPS.pop(token, None)


class Token:
    """A task's token and, once it has ended, its outcome. Every method may be called from any thread.

    ``TaskRecord`` (the scheduler's record of a task) is a ``Token``: the record is the one
    object every party shares, and the token is the only part of it they all touch.
    """

    __slots__ = ("_outcome", "_token")

    def __init__(self) -> None:
        self._token = FREE
        self._outcome: object = None

    # -- moves ------------------------------------------------------------------------------

    def try_start(self, one_time: bool, manual: bool = False) -> int:
        """Worker: may this run start? A one-time run takes the token; a recurring one marks it RUNNING.

        ``STARTED`` (or ``STARTED_CLAIMED``: it takes the open manual claim, and is the manual
        run) if it may; ``START_REFUSED`` (0) if the task was cancelled or has ended;
        ``START_HELD`` if it is paused and the run is not ``manual`` (``Skipped(paused=True)``).
        Compare with ``> 0``.
        """
        move = Move.START_ONE_TIME if one_time else Move.START_RECURRING
        with _LOCK:
            new = _MOVES.get((self._token, move))
            if new is None:
                return START_REFUSED
            ops = _OPS.get(self, 0) if _OPS else 0
            if ops:  # an operated task: rare
                if ops & CLAIMED:
                    _set_ops(self, ops & ~CLAIMED)
                    self._token = new
                    return STARTED_CLAIMED
                if not manual:
                    return START_HELD
            self._token = new
            return STARTED

    def try_start_beside(self, parent: Token) -> bool:
        """Worker: may this run of an ``overlap="allow"`` task start? Only while ``parent`` is ``FREE``.

        The run has a token of its own (``RunInstance``, ``actors/core/instance_runs.py``: several
        runs of one task may go at once), and the task's token still decides, in the same hold of
        the lock: a cancel (``REVOKED``), a task ended after too many failures (``TAKEN``) or
        ended at all stops every run not yet started, exactly as a task's own token would.
        """
        with _LOCK:
            if parent._token is not FREE:
                return False
            new = _MOVES.get((self._token, Move.START_RECURRING))
            if new is None:
                return False
            self._token = new
            return True

    # -- operations (pause, resume, run now) ------------------------------------------------

    def hold(
        self, report: object = None, put: Callable[[Any], bool] | None = None, *, taken_live: bool = False
    ) -> tuple[int, bool]:
        """Pause: no run starts from now on but a manual one (any thread).

        Returns ``(verdict, tell)``: ``DONE``, ``REFUSED`` (ended, cancelled, or held already)
        or ``UNSURE`` (``TAKEN``, unless ``taken_live``: the scheduler, which knows the task
        is live, says so). On ``DONE``, ``put(report)`` was called under the lock; ``tell`` is
        what it returned (the outbox's "tell Drain").
        """
        with _LOCK:
            token = self._token
            if token is TAKEN and not taken_live:
                return UNSURE, False
            ops = _OPS.get(self, 0)
            if token > TAKEN or ops & HELD:  # REVOKED, FINISHED, DETACHED
                return REFUSED, False
            _OPS[self] = ops | HELD
            return DONE, put is not None and put(report)

    def release_hold(
        self, report: object = None, put: Callable[[Any], bool] | None = None, *, taken_live: bool = False
    ) -> tuple[int, bool]:
        """Resume: undo ``hold`` (any thread); as ``hold`` says, ``REFUSED`` if not held."""
        with _LOCK:
            token = self._token
            if token is TAKEN and not taken_live:
                return UNSURE, False
            ops = _OPS.get(self, 0)
            if token > TAKEN or not ops & HELD:
                return REFUSED, False
            _set_ops(self, ops & ~HELD)
            return DONE, put is not None and put(report)

    def claim_manual(
        self, report: object = None, put: Callable[[Any], bool] | None = None
    ) -> tuple[int, bool]:
        """Run now (``overlap="skip"``): promise one manual run (any thread); ``(verdict, tell)`` as ``hold``.

        ``DONE`` only while no run is in flight (``FREE``) and none is promised already: the
        next run to start is the manual one (``try_start`` takes the claim), held or not.
        ``REFUSED`` with a run in progress (``RUNNING``, ``RAN``), a one-time run started or
        the task ending (``TAKEN``), cancelled or ended, or a claim open.
        """
        with _LOCK:
            ops = _OPS.get(self, 0)
            if self._token is not FREE or ops & CLAIMED:
                return REFUSED, False
            _OPS[self] = ops | CLAIMED
            return DONE, put is not None and put(report)

    def drop_claim(self) -> None:
        """Scheduler: the manual run it promised will not start (its queued run was dropped)."""
        with _LOCK:
            _set_ops(self, _OPS.get(self, 0) & ~CLAIMED)

    @property
    def held(self) -> bool:
        """Whether the task is paused, by its token (for callers and tests; a moment's reading)."""
        return bool(_OPS.get(self, 0) & HELD)

    def end_run(self, claim: Claim | None = None) -> bool:
        """Worker, after any run (before reporting it): the run has ended, its report follows.

        No stop request lands on ``claim`` after this. A recurring run's token moves to
        ``RAN`` (a one-time run's stays ``TAKEN``: the table has no such move). Returns
        ``False``, moving nothing, if the scheduler has abandoned the run (``ABANDONED``): the
        task is a later run's by now, and the worker must not report.
        """
        with _LOCK:
            if claim is not None:
                if claim.stop & ABANDONED:
                    return False
                claim.run_ended = True
            new = _MOVES.get((self._token, Move.END_RUN))
            if new is not None:
                self._token = new
            return True

    @staticmethod
    def stop_reasons(claim: Claim) -> int:
        """Scheduler, taking the report of the run holding ``claim``: the reasons it was asked to stop.

        No lock: the run's worker closed the claim with ``end_run`` before it reported (or
        died trying: its ``end_run`` is in a ``finally``), or the scheduler did, abandoning
        it; so no ``request_stop`` lands any more and the reasons are final. (A ``Skipped``
        run's are not, and mean nothing: it never started.)
        """
        return claim.stop

    def abandon_run(self, claim: Claim) -> bool:
        """Scheduler: give up on the hung run holding ``claim``; the token is free for the next run.

        Returns ``False``, changing nothing, if the run has ended (its worker's ``end_run``
        came first): its report is on its way, and the worker is not stuck.
        """
        with _LOCK:
            if claim.run_ended:
                return False
            claim.stop |= ABANDONED
            claim.run_ended = True  # for us it has: no stop request lands any more
            new = _MOVES.get((self._token, Move.ABANDON_RUN))
            if new is not None:
                self._token = new
            return True

    def run_reported(self) -> None:
        """Scheduler, as a recurring run's report arrives: nothing of the task is in flight any more."""
        self._move(Move.RUN_REPORTED)

    def _move(self, move: Move) -> None:
        with _LOCK:
            new = _MOVES.get((self._token, move))
            if new is not None:
                self._token = new

    def revoke(self) -> TokenState:
        """Cancel through the token; return the state *before* the move.

        ``FREE``, ``RUNNING`` or ``RAN``: this call won (with ``RUNNING`` or ``RAN`` a recurring
        run is in flight: it finishes and reports, and no other starts). The other results tell
        the loser why:
        ``REVOKED`` (cancelled already), ``TAKEN`` (a one-time run has started, or the task is
        ending), ``FINISHED`` (it has ended).
        """
        with _LOCK:
            before = self._token
            if before is not FREE and before is not RUNNING and before is not RAN:
                return before
            self._token = REVOKED
            if _OPS:
                _OPS.pop(self, None)
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()  # a waiting result() raises CancelledError from now on
        return before

    def take(self) -> bool:
        """Scheduler: seal the task's fate (it is ending); ``False`` if a cancel got there first."""
        with _LOCK:
            if self._token is not FREE:
                return False
            self._token = TAKEN
            return True

    def finish(self, outcome: object) -> None:
        """Scheduler, once: publish that the task has ended, and its outcome (a run's return value).

        Whatever the scheduler wrote to the record before this call is visible to every
        thread that sees ``FINISHED``; the record never changes afterwards.
        """
        with _LOCK:
            new = _MOVES.get((self._token, Move.FINISH))
            if new is None:
                raise RuntimeError(f"a token in state {self._token.name} cannot finish (a scheduler bug)")
            self._outcome = outcome
            self._token = new
            if _OPS:
                _OPS.pop(self, None)
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()

    def detach(self) -> bool:
        """Scheduler, as it stops: the task lives on in the store, not here; ``False`` if it has ended."""
        with _LOCK:
            new = _MOVES.get((self._token, Move.DETACH))
            if new is None:
                return False
            self._token = new
            if _OPS:
                _OPS.pop(self, None)
            event = _WAITERS.pop(self, None)
        if event is not None:
            event.set()  # a waiting result() raises SchedulerShutdownError from now on
        return True

    @staticmethod
    def finish_all(ended: list[tuple[Token, object]]) -> None:
        """``finish`` each ``(token, outcome)`` in order, under one hold of the lock (for batches)."""
        events: list[threading.Event] = []
        with _LOCK:
            for token, outcome in ended:
                new = _MOVES.get((token._token, Move.FINISH))
                if new is None:
                    raise RuntimeError(
                        f"a token in state {token._token.name} cannot finish (a scheduler bug)"
                    )
                token._outcome = outcome
                token._token = new
                if _OPS:
                    _OPS.pop(token, None)
                if _WAITERS:
                    event = _WAITERS.pop(token, None)
                    if event is not None:
                        events.append(event)
        for event in events:
            event.set()

    # -- what callers read ------------------------------------------------------------------

    @property
    def token_state(self) -> TokenState:
        """The token's state now (for callers and tests; the scheduler never decides by it)."""
        return self._token

    @property
    def outcome(self) -> object:
        """What ``finish`` published (meaningful once the state is ``FINISHED``)."""
        return self._outcome

    def wait_ended(self, timeout: float | None) -> bool:
        """Block until the token is ``REVOKED``, ``FINISHED`` or ``DETACHED``; ``False`` on timeout."""
        with _LOCK:
            if self._token is REVOKED or self._token is FINISHED or self._token is DETACHED:
                return True
            event = _WAITERS.get(self)
            if event is None:
                event = _WAITERS[self] = threading.Event()
        return wait_until(event.wait, timeout)
