"""Keyed actor timers (Akka's and Pekko's ``TimerScheduler``): ``ActorTimers`` and ``TimersMixin``.

A pykka actor owns an ``ActorTimers``; each timer is one scheduler task (a ``tell_once`` or a
``tell_at_fixed_rate``) that tells the actor a ``TimerFired(key, generation, message)``
envelope. The guarantee: once ``cancel(key)`` returns, or ``key`` is started again, the actor
never handles a message of the old timer, even one already in its mailbox. Cancelling the
scheduler task stops later messages; a message already sent cannot be taken back out of a
pykka inbox, so each start takes a new generation and an envelope whose generation is no
longer the key's is dropped when the actor receives it (as Pekko does). Everything here runs
on the actor's own thread, so nothing needs a lock.
"""

from __future__ import annotations

import functools
import itertools
import logging
from collections.abc import Callable, Hashable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Final, TypeVar

import pykka

from actors.errors import SchedulerShutdownError
from messages import TimerFired
from messages.triggers import require_finite, require_positive_duration

if TYPE_CHECKING:
    from actors.api.facade import Scheduler
    from actors.api.handles import TaskHandle

__all__ = ["ActorTimers", "TimersMixin"]

logger = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

# Shared by every ActorTimers (``next`` on a count is atomic): a generation is unique in the
# process, so an envelope can never be mistaken for a later timer's, whoever started it.
_generations: Final = itertools.count(1)


class _Timer:
    """One active timer: its generation, the scheduler task that tells it, and how it repeats."""

    __slots__ = ("generation", "handle", "message", "repeat_delay", "single")

    def __init__(
        self,
        generation: int,
        handle: TaskHandle,
        message: object,
        *,
        single: bool,
        repeat_delay: float | None,
    ) -> None:
        self.generation = generation
        self.handle = handle
        self.message = message
        self.single = single  # ends once its message is received
        self.repeat_delay = repeat_delay  # fixed delay: the next one is scheduled after each is handled


class ActorTimers:
    """The keyed timers of one pykka actor, scheduled on a ``Scheduler``.

    Create it in the actor's ``__init__`` (``self.timers = ActorTimers(scheduler,
    self.actor_ref)``) and call every other method **on the actor's own thread** (from its
    handlers, ``on_start`` or ``on_stop``): it is the actor's state, unlocked, like any other.
    A timer message reaches the actor through its mailbox like any other message, so it is
    serialised with the rest; the actor's handler gets the message given here, unwrapped by
    ``TimersMixin`` (or by ``deliver``, for an actor that does not use the mixin).

    Starting a timer whose key is active replaces it. **Guarantee:** once ``cancel(key)``
    returns, or the key is started again, the actor never handles a message of the old
    timer, even one already in its mailbox. Stale messages are dropped (counted in
    ``dropped``). Each active timer is one task of the scheduler (named
    ``"<message type> -> <actor class> (timer <key>)"``); cancelling it ends that task.
    When the scheduler shuts down its tasks end, and the timers send nothing more.
    """

    __slots__ = ("_ref", "_scheduler", "_timers", "dropped")

    def __init__(self, scheduler: Scheduler, actor_ref: pykka.ActorRef[Any]) -> None:
        """Hold the timers of the actor ``actor_ref``, run by ``scheduler`` (any thread).

        Raises:
            TypeError: ``actor_ref`` is not a ``pykka.ActorRef``.
        """
        if not isinstance(actor_ref, pykka.ActorRef):
            raise TypeError(f"actor_ref must be a pykka.ActorRef, got {actor_ref!r}")
        self._scheduler = scheduler
        self._ref = actor_ref
        self._timers: dict[Hashable, _Timer] = {}
        self.dropped = 0
        """How many stale timer messages (of a timer cancelled or restarted since) were dropped."""

    # -- starting ---------------------------------------------------------------------------

    def start_single(self, key: Hashable, message: object, delay: float) -> None:
        """Send ``message`` once, ``delay`` seconds from now (replacing any timer ``key``).

        The key stays active until the actor receives the message (it is inactive while the
        handler runs, so the handler may start it again).

        Raises:
            TypeError: ``key`` is not hashable; ``delay`` is not a number.
            ValueError: ``delay`` is NaN or infinite.
            SchedulerShutdownError: the scheduler is shut down.
        """
        generation = self._generation(key)
        handle = self._scheduler.tell_once(
            self._ref, TimerFired(key, generation, message), delay, name=self._name(key, message)
        )
        self._replace(key, _Timer(generation, handle, message, single=True, repeat_delay=None))

    def start_at_fixed_rate(
        self, key: Hashable, message: object, interval: float, initial_delay: float = 0.0
    ) -> None:
        """Send ``message`` at ``now + initial_delay + k * interval``, k = 0, 1, 2, ... (replacing ``key``).

        The slots do not drift; a message is sent on each slot whether or not the actor has
        handled the previous one (use ``start_with_fixed_delay`` for a pause after each).

        Raises:
            TypeError: ``key`` is not hashable; a duration is not a number.
            ValueError: ``interval`` is not greater than zero; a duration is NaN or infinite.
            SchedulerShutdownError: the scheduler is shut down.
        """
        generation = self._generation(key)
        handle = self._scheduler.tell_at_fixed_rate(
            self._ref,
            TimerFired(key, generation, message),
            interval,
            initial_delay,
            name=self._name(key, message),
        )
        self._replace(key, _Timer(generation, handle, message, single=False, repeat_delay=None))

    def start_with_fixed_delay(
        self, key: Hashable, message: object, delay: float, initial_delay: float | None = None
    ) -> None:
        """Send ``message`` after ``initial_delay`` (default ``delay``), then ``delay`` after each is handled.

        The next message is scheduled on the actor's thread once the handler of the previous
        one has returned (or raised), so the pause counts from the end of the handling, and at
        most one message of the timer is ever on its way.

        Raises:
            TypeError: ``key`` is not hashable; a duration is not a number.
            ValueError: ``delay`` is not greater than zero; a duration is NaN or infinite.
            SchedulerShutdownError: the scheduler is shut down.
        """
        pause = require_positive_duration("delay", delay)
        first = pause if initial_delay is None else require_finite("initial_delay", initial_delay)
        generation = self._generation(key)
        handle = self._scheduler.tell_once(
            self._ref, TimerFired(key, generation, message), first, name=self._name(key, message)
        )
        self._replace(key, _Timer(generation, handle, message, single=False, repeat_delay=pause))

    # -- cancelling and asking --------------------------------------------------------------

    def cancel(self, key: Hashable) -> bool:
        """Cancel the timer ``key``; return whether it was active.

        From the moment this returns the actor never handles a message of it, even one
        already in the mailbox; its scheduler task ends ``CANCELLED``.
        """
        timer = self._timers.pop(key, None)
        if timer is None:
            return False
        timer.handle.cancel()
        return True

    def cancel_all(self) -> None:
        """Cancel every timer (``TimersMixin`` does this when the actor stops or fails)."""
        timers, self._timers = self._timers, {}
        for timer in timers.values():
            timer.handle.cancel()

    def is_active(self, key: Hashable) -> bool:
        """Whether the timer ``key`` is started and not cancelled (a single one: not yet received)."""
        return key in self._timers

    def keys(self) -> frozenset[Hashable]:
        """The keys of the active timers."""
        return frozenset(self._timers)

    # -- receiving --------------------------------------------------------------------------

    def deliver(self, message: object, handler: Callable[[Any], object]) -> object:
        """Hand ``message`` to ``handler``: unwrapped if it is a live timer's, not at all if stale.

        The receive side for an actor that does not use ``TimersMixin``: ``on_receive`` calls
        ``return self.timers.deliver(message, self.handle)`` (and ``on_stop`` calls
        ``cancel_all``). Any other message goes to ``handler`` as it is. Returns what
        ``handler`` returned; ``None`` for a dropped stale message.
        """
        if type(message) is not TimerFired:
            return handler(message)
        key = message.key
        timer = self._timers.get(key)
        if timer is None or timer.generation != message.generation:
            self.dropped += 1
            logger.debug("%s dropped a stale message of timer %r", self._ref, key)
            return None
        if timer.single:
            del self._timers[key]
        if timer.repeat_delay is None:
            return handler(message.message)
        try:
            return handler(message.message)
        finally:
            self._schedule_next(key, timer)

    def _schedule_next(self, key: Hashable, timer: _Timer) -> None:
        """Schedule a fixed-delay timer's next message, unless the handler cancelled or replaced it."""
        if self._timers.get(key) is not timer or timer.repeat_delay is None:
            return
        try:
            timer.handle = self._scheduler.tell_once(
                self._ref,
                TimerFired(key, timer.generation, timer.message),
                timer.repeat_delay,
                name=self._name(key, timer.message),
            )
        except SchedulerShutdownError:
            del self._timers[key]  # nothing will ever be sent again
            logger.debug("timer %r of %s ended: the scheduler is shut down", key, self._ref)

    # -- helpers ----------------------------------------------------------------------------

    @staticmethod
    def _generation(key: Hashable) -> int:
        """A new generation for a timer ``key`` (``TypeError`` if the key is not hashable)."""
        try:
            hash(key)
        except TypeError:
            raise TypeError(f"a timer key must be hashable, got {key!r}") from None
        return next(_generations)

    def _replace(self, key: Hashable, timer: _Timer) -> None:
        """Make ``timer`` the one of ``key``; cancel the one it replaces (after the new one was accepted)."""
        old = self._timers.get(key)
        self._timers[key] = timer
        if old is not None:
            old.handle.cancel()

    def _name(self, key: Hashable, message: object) -> str:
        return f"{type(message).__name__} -> {self._ref.actor_class.__name__} (timer {key!r})"

    def __repr__(self) -> str:
        return f"<ActorTimers of {self._ref} keys={sorted(map(repr, self._timers))}>"


class TimersMixin(pykka.Actor):
    """Unwraps an actor's timer messages for its handlers: ``class A(TimersMixin, pykka.ThreadingActor)``.

    The actor keeps its ``ActorTimers`` in ``self.timers`` (set it in ``__init__``). The
    ``on_receive`` the actor class defines is wrapped when the class is created: it gets the
    message a live timer was started with, never a ``TimerFired`` envelope, and never a
    stale timer's message (see ``ActorTimers.deliver``). Every other message passes through
    unchanged. The ``on_stop`` and ``on_failure`` it defines (or pykka's) are wrapped to
    cancel every timer first, so a stopped or failed actor leaves no scheduler task behind.
    All of it runs on the actor's own thread.
    """

    timers: ActorTimers

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Wrap the ``on_receive``, ``on_stop`` and ``on_failure`` the new class defines."""
        super().__init_subclass__(**kwargs)
        own = cls.__dict__
        if "on_receive" in own and not hasattr(own["on_receive"], "__timers_wrapped__"):
            cls.on_receive = _unwrapping(own["on_receive"])  # type: ignore[method-assign]
        for hook in ("on_stop", "on_failure"):
            if hook in own and not hasattr(own[hook], "__timers_wrapped__"):
                setattr(cls, hook, _cancelling_first(own[hook]))

    def on_receive(self, message: Any) -> Any:
        """Unwrap timer messages, then hand them to pykka's default (which logs them as unexpected)."""
        return _timers_of(self).deliver(message, super().on_receive)

    def on_stop(self) -> None:
        """Cancel every timer."""
        _cancel_timers(self)

    def on_failure(
        self,
        exception_type: type[BaseException] | None,
        exception_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Cancel every timer."""
        _cancel_timers(self)


def _timers_of(actor: object) -> ActorTimers:
    timers = getattr(actor, "timers", None)
    if not isinstance(timers, ActorTimers):
        raise TypeError(
            f"{type(actor).__name__} uses TimersMixin but self.timers is {timers!r}, not an ActorTimers: "
            "set self.timers = ActorTimers(scheduler, self.actor_ref) in __init__"
        )
    return timers


def _cancel_timers(actor: object) -> None:
    timers = getattr(actor, "timers", None)
    if isinstance(timers, ActorTimers):
        try:
            timers.cancel_all()
        except Exception:  # a stopping actor must stop whatever happens here
            logger.exception("%r could not cancel its timers", actor)


def _unwrapping(on_receive: F) -> F:
    @functools.wraps(on_receive)
    def unwrapped(self: Any, message: Any) -> Any:
        if type(message) is not TimerFired:
            return on_receive(self, message)
        return _timers_of(self).deliver(message, functools.partial(on_receive, self))

    unwrapped.__timers_wrapped__ = True  # type: ignore[attr-defined]
    return unwrapped  # type: ignore[return-value]


def _cancelling_first(hook: F) -> F:
    @functools.wraps(hook)
    def cancelling(self: Any, *args: Any) -> Any:
        _cancel_timers(self)
        return hook(self, *args)

    cancelling.__timers_wrapped__ = True  # type: ignore[attr-defined]
    return cancelling  # type: ignore[return-value]
