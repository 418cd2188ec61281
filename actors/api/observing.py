"""Watching a scheduler: ``subscribe``, and ``settle``/``advance`` (``stepping.py`` does the stepping)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import Any

import pykka

from actors.api import stepping
from actors.api.handles import Subscription
from actors.api.mailboxes import check_refs
from actors.api.plumbing import Plumbing
from actors.errors import SchedulerShutdownError
from actors.sync.waiting import Deadline, result_within
from messages import EventKind, QueryNextDue, Settle, Subscribe, TaskEvent, Unsubscribe
from messages.events import event_kind

AnyListener = Callable[[TaskEvent], object] | pykka.ActorRef[Any]


class Observing(Plumbing):
    """Subscriptions, and the waits of a test: ``settle``, ``advance`` (the caller's thread)."""

    def subscribe(
        self, listener: AnyListener, kinds: Iterable[EventKind | str] | None = None
    ) -> Subscription:
        """Deliver every later event of the given kinds (all by default) to ``listener``.

        ``kinds``: ``EventKind`` members (``from actors import EventKind``) or their names, in
        any case (``kinds=["failed", "missed"]``).

        A callable listener is called on the event bus thread; an ``ActorRef`` is told the
        ``TaskEvent``. Events reach each listener in the order they happened.

        Raises:
            TypeError: ``listener`` is neither callable nor an ``ActorRef``; ``kinds`` is not an
                iterable, or a kind is neither an ``EventKind`` nor a str.
            ValueError: ``kinds`` is empty, or a name names no kind (the message lists them).
            SchedulerShutdownError: after ``shutdown``.
        """
        subscription = self._subscription(listener, kinds)
        self._send(subscription)
        return Subscription(subscription.subscription_id, self)

    def _subscription(self, listener: AnyListener, kinds: Iterable[EventKind | str] | None) -> Subscribe:
        """Check a listener and its kinds; the ``Subscribe`` message for them, with a new id."""
        if not (callable(listener) or isinstance(listener, pykka.ActorRef)):
            raise TypeError(f"listener must be callable or a pykka ActorRef, got {listener!r}")
        if isinstance(kinds, str | EventKind):  # one kind, not an iterable of its letters
            raise TypeError(f"kinds must be an iterable of kinds, got {kinds!r}: write kinds=[{kinds!r}]")
        try:
            given = list(EventKind) if kinds is None else list(kinds)
        except TypeError as error:
            raise TypeError(f"kinds must be an iterable of EventKind members, got {kinds!r}") from error
        wanted = frozenset(event_kind(kind) for kind in given)
        if not wanted:
            raise ValueError("kinds must name at least one EventKind")
        return Subscribe(next(self._subscription_ids), listener, wanted)

    def _unsubscribe(self, subscription_id: int) -> None:
        """Tell the scheduler to drop a subscription, unless it is shut down (``SchedulerPort``)."""
        with contextlib.suppress(SchedulerShutdownError):
            self._send(Unsubscribe(subscription_id))

    def settle(self, timeout: float = 10.0, *, also: Iterable[pykka.ActorRef[Any]] = ()) -> None:
        """Block until nothing due at ``clock.now()`` is unfinished and every event so far was delivered.

        Runs whatever is due now (no need to wait for the timer), waits for those runs to
        finish, and for the bus to deliver every event published so far; if listeners
        scheduled or cancelled anything meanwhile, it waits for that too, until nothing
        happens any more. Works with any clock. Returns at once after ``shutdown``.

        ``also``: actors (any pykka actors) to wait for as well: until each has handled every
        message sent to it so far (scheduled messages and timers included), and whatever
        they scheduled, cancelled or sent each other meanwhile has settled too, so a test of
        actors needs no sleeps. Each is asked a no-op that pykka itself answers (its
        ``on_receive`` is not called), round after round, until a round finds nothing new
        (``docs/actors.md``).

        Raises:
            TypeError: ``also`` is not an iterable of ``pykka.ActorRef``.
            TimeoutError: not settled within ``timeout`` seconds (the message names an actor
                that did not answer).
            WouldDeadlockError: called from a task or a listener of this scheduler (it would
                wait for itself).
        """
        self._refuse_own_thread("settle")
        stepping.settle(self, Deadline(timeout), timeout, check_refs(also))

    def advance(
        self, seconds: float, *, timeout: float = 10.0, also: Iterable[pykka.ActorRef[Any]] = ()
    ) -> None:
        """Move a ``FakeClock`` forward ``seconds``, stopping at every due time on the way.

        At each due time in the window the clock stops and the scheduler settles, so every
        run starts at its own due time and sees the clock there (a run may itself advance the
        clock to model how long it takes). Blocks the caller; ``timeout`` applies to each step.
        Each step settles the actors ``also`` names too (see ``settle``), so what they
        schedule as they handle their messages is on time.

        Raises:
            TypeError: the clock is not a ``FakeClock``; ``also`` is not an iterable of
                ``pykka.ActorRef``.
            ValueError: ``seconds`` is negative or not finite, or moves the clock past what
                a ``datetime`` can show.
            TimeoutError: a step did not settle within ``timeout``.
            WouldDeadlockError: called from a task or a listener of this scheduler.
        """
        self._refuse_own_thread("advance")
        stepping.advance(self, seconds, timeout, check_refs(also))

    def _settle_step(self, deadline: Deadline, until: float | None = None) -> int | None:
        """Ask the scheduler to settle (up to ``until``, see ``Settle``); its activity count, or ``None``."""
        settled: Future[int | None] = Future()
        try:
            self._send(Settle(settled, until))
        except SchedulerShutdownError:
            return None  # nothing will run any more
        return result_within(settled, deadline)

    def _next_due(self) -> float | None:
        """The earliest due time the scheduler holds, or ``None`` (``SchedulerPort``)."""
        due: float | None = None if self._closed else self._query(QueryNextDue())
        return due
