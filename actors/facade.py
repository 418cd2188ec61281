"""``Scheduler``: the facade that starts the actors and turns method calls into messages."""

from __future__ import annotations

import contextlib
import itertools
import re
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from datetime import datetime
from typing import Any, Final

import pykka

from actors.base import stop_quietly
from actors.clock import Clock, FakeClock, MonotonicClock
from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError
from actors.event_bus import EventBus
from actors.handles import Subscription, TaskHandle, TokenMarks
from actors.outbox import Outbox
from actors.scheduler import SchedulerActor
from actors.worker import WorkerActor
from messages import (
    Cancel,
    Cancelled,
    Drain,
    EventKind,
    FixedDelay,
    FixedRate,
    Flush,
    Once,
    QueryNextDue,
    QueryStats,
    QueryTask,
    QueryTasks,
    Schedule,
    SchedulerStats,
    Settle,
    Shutdown,
    Subscribe,
    TaskEvent,
    TaskId,
    TaskInfo,
    Trigger,
    Unsubscribe,
)
from messages.commands import EMPTY_KWARGS
from messages.triggers import require_finite

ASK_TIMEOUT: Final = 30.0
"""Seconds any query waits for the scheduler's reply before raising ``TimeoutError``."""

STOP_GRACE: Final = 2.0
"""Seconds ``shutdown`` still waits, once its timeout has passed, for the threads not running a task."""

_MINTED_ID: Final = re.compile(r"task-\d+")
_DRAIN: Final = Drain()
_CLOCK_METHODS: Final = ("now", "wall", "sleep_time", "watch")

AnyListener = Callable[[TaskEvent], object] | pykka.ActorRef[Any]


class Scheduler:
    """Runs one-time and recurring tasks on a pool of worker actors.

    Starts an ``EventBus``, a ``SchedulerActor`` with ``workers`` ``WorkerActor``s, and a timer
    thread. Every method may be called from any thread at once. Tasks run on worker threads,
    listeners on the bus thread; the caller's thread only builds and sends messages (the
    ``schedule_*`` calls with a minted id never wait for the scheduler).
    """

    def __init__(self, workers: int = 4, clock: Clock | None = None, history: int = 10_000) -> None:
        """Start the scheduler.

        Args:
            workers: How many tasks may run at once (at least 1).
            clock: Where time is read; a ``MonotonicClock`` by default, a ``FakeClock`` in tests.
            history: How many finished tasks ``info`` still knows about (at least 0).

        Raises:
            ValueError: ``workers < 1`` or ``history < 0``.
            TypeError: ``workers`` or ``history`` is not an int, or ``clock`` is not a ``Clock``.
        """
        for label, value, least in (("workers", workers, 1), ("history", history, 0)):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{label} must be an int, got {value!r}")
            if value < least:
                raise ValueError(f"{label} must be at least {least}, got {value!r}")
        if clock is not None:
            missing = [name for name in _CLOCK_METHODS if not callable(getattr(clock, name, None))]
            if missing:
                raise TypeError(f"clock must be a Clock (missing {', '.join(missing)}), got {clock!r}")
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        # Every thread the actors start appends itself here, so shutdown can join them all.
        self._threads: list[threading.Thread] = []
        self._bus = EventBus.start(self._threads)
        # Minted-id schedules and handles' cancels go through this outbox: the scheduler takes
        # them in bulk, in the order they were put.
        self._schedules: Outbox[Schedule | Cancelled] = Outbox()
        self._ref = SchedulerActor.start(
            clock=self._clock,
            bus=self._bus,
            workers=workers,
            history=history,
            schedules=self._schedules,
            started_threads=self._threads,
        )
        # _lock guards _closed, and is held while sending, so that no command can be sent
        # after the Shutdown message.
        self._lock = threading.Lock()
        self._closed = False
        self._drained: Future[None] = Future()
        self._forced_stop = False  # a shutdown ran out of time and stopped the scheduler anyway
        self._task_ids = itertools.count(1)
        self._marks = TokenMarks(self)  # what a handle's token becomes when taken or revoked
        self._subscription_ids = itertools.count(1)

    # -- properties -------------------------------------------------------------------------

    @property
    def ref(self) -> pykka.ActorRef[SchedulerActor]:
        """The ``SchedulerActor``'s ref, for sending it ``Schedule``, ``Cancel`` and ``Tick``."""
        return self._ref

    @property
    def clock(self) -> Clock:
        """The clock the scheduler reads."""
        return self._clock

    # -- scheduling -------------------------------------------------------------------------

    def schedule_once(
        self,
        fn: Callable[..., object],
        delay: float | None = None,
        *,
        at: float | datetime | None = None,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
    ) -> TaskHandle:
        """Run ``fn(*args, **kwargs)`` once, ``delay`` seconds from now or at ``at``.

        ``at`` is clock seconds, or an aware ``datetime`` converted once, now, to clock time.
        A time already past, or a negative delay, means as soon as possible.

        Raises:
            TypeError: ``fn`` is not callable, or an argument has the wrong type.
            ValueError: both or neither of ``delay``/``at``; a NaN or infinite time; a naive
                ``datetime``; a ``task_id`` of the reserved form ``task-<digits>``.
            DuplicateTaskError: ``task_id`` belongs to a live task.
            SchedulerShutdownError: after ``shutdown``.
        """
        if (delay is None) == (at is None):
            raise ValueError("give exactly one of delay and at")
        if delay is not None:
            due_at = self._clock.now() + require_finite("delay", delay)
        elif isinstance(at, datetime):
            if at.tzinfo is None:
                raise ValueError(f"at must be an aware datetime (with tzinfo), got {at!r}")
            due_at = self._clock.now() + (at - self._clock.wall()).total_seconds()
        else:
            assert at is not None
            due_at = require_finite("at", at)
        return self._submit(fn, Once(due_at), args, kwargs, task_id, name, None)

    def schedule_at_fixed_rate(
        self,
        fn: Callable[..., object],
        interval: float,
        initial_delay: float = 0.0,
        *,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
    ) -> TaskHandle:
        """Run ``fn`` at ``now + initial_delay + k * interval``, k = 0, 1, 2, ...

        Runs never overlap: a run that overruns its slot makes the next run wait for the
        first slot not already past when it finished (missed slots are skipped).

        Raises:
            ValueError: ``interval`` not a finite number > 0; ``initial_delay`` not finite;
                ``max_consecutive_failures < 1``; a reserved ``task_id``.
            TypeError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        return self._submit(
            fn, FixedRate(interval, first_at), args, kwargs, task_id, name, max_consecutive_failures
        )

    def schedule_with_fixed_delay(
        self,
        fn: Callable[..., object],
        delay: float,
        initial_delay: float = 0.0,
        *,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
    ) -> TaskHandle:
        """Run ``fn`` at ``now + initial_delay``, then ``delay`` seconds after each run finishes.

        Raises:
            ValueError: ``delay`` not a finite number > 0; otherwise as ``schedule_at_fixed_rate``.
            TypeError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        return self._submit(
            fn, FixedDelay(delay, first_at), args, kwargs, task_id, name, max_consecutive_failures
        )

    def _submit(
        self,
        fn: Callable[..., object],
        trigger: Trigger,
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any] | None,
        task_id: TaskId | None,
        name: str | None,
        max_consecutive_failures: int | None,
    ) -> TaskHandle:
        minted = task_id is None
        if task_id is None:
            task_id = f"task-{next(self._task_ids)}"
        elif isinstance(task_id, str) and _MINTED_ID.fullmatch(task_id):
            raise ValueError(f"task ids of the form 'task-<digits>' are reserved, got {task_id!r}")
        handle = TaskHandle(task_id, self)
        command = Schedule(
            task_id=task_id,
            fn=fn,
            trigger=trigger,
            args=args,
            kwargs=EMPTY_KWARGS if kwargs is None else kwargs,
            name=name,
            max_consecutive_failures=max_consecutive_failures,
            sink=handle,
        )
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            try:
                if minted:  # a minted id cannot clash: no need to wait for a reply
                    self._put(command)
                    return handle
                reply = self._ref.ask(command, block=False)
            except pykka.ActorDeadError as error:
                raise SchedulerShutdownError("scheduler is shut down") from error
        if not self._get(reply):
            raise DuplicateTaskError(f"a live task already has id {task_id!r}")
        return handle

    # -- control and queries ----------------------------------------------------------------

    def cancel(self, task_id: TaskId) -> bool:
        """Cancel a task; return whether that prevented a run.

        ``True`` for a task that had not started its run (it never runs; one ``CANCELLED``
        event) and for a recurring task cancelled mid-run (the run finishes, then
        ``CANCELLED``, and no further run). ``False`` for a running one-time task (it just
        finishes), and for unknown, finished or already-cancelled ids, and after shutdown.

        Only the scheduler knows which task has an id, so this asks it and waits for the
        answer (a round trip between threads). ``TaskHandle.cancel`` decides the same thing
        on the caller's thread, without waiting.
        """
        if not isinstance(task_id, str):  # callers without type checking: no task has such an id
            return False  # type: ignore[unreachable]
        with self._lock:
            if self._closed:
                return False
            reply = self._ref.ask(Cancel(task_id), block=False)
        return bool(self._get(reply))

    def _report_cancelled(self, handle: TaskHandle) -> None:
        """Tell the scheduler that ``handle.cancel()`` revoked its task's token (caller's thread)."""
        with self._lock:
            if self._closed:
                return  # the shutdown cancels it anyway, and sees the revoked token
            with contextlib.suppress(pykka.ActorDeadError):  # stopped by force: nothing runs it now
                self._put(Cancelled(handle.task_id, handle))

    def _put(self, item: Schedule | Cancelled) -> None:
        """Put ``item`` in the scheduler's outbox, waking it if the outbox was empty (hold ``_lock``)."""
        if self._schedules.put(item):
            self._ref.tell(_DRAIN)

    def info(self, task_id: TaskId) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a recently finished one.

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        info = self._query(QueryTask(task_id)) if isinstance(task_id, str) else None
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        assert isinstance(info, TaskInfo)
        return info

    def tasks(self) -> list[TaskInfo]:
        """Return a snapshot of every live (not yet finished) task, in scheduling order."""
        infos: list[TaskInfo] = self._query(QueryTasks())
        return infos

    def stats(self) -> SchedulerStats:
        """Return the scheduler's counters (live tasks, heap size, timer wake-ups, ...)."""
        stats: SchedulerStats = self._query(QueryStats())
        return stats

    def subscribe(self, listener: AnyListener, kinds: Iterable[EventKind] | None = None) -> Subscription:
        """Deliver every later event of the given kinds (all by default) to ``listener``.

        A callable listener is called on the event bus thread; an ``ActorRef`` is told the
        ``TaskEvent``. Events reach each listener in the order they happened.

        Raises:
            TypeError: ``listener`` is neither callable nor an ``ActorRef``; a kind is not an ``EventKind``.
            ValueError: ``kinds`` is empty.
            SchedulerShutdownError: after ``shutdown``.
        """
        if not (callable(listener) or isinstance(listener, pykka.ActorRef)):
            raise TypeError(f"listener must be callable or a pykka ActorRef, got {listener!r}")
        try:
            wanted = frozenset(EventKind) if kinds is None else frozenset(kinds)
        except TypeError as error:
            raise TypeError(f"kinds must be an iterable of EventKind members, got {kinds!r}") from error
        if not wanted:
            raise ValueError("kinds must name at least one EventKind")
        for kind in wanted:
            if not isinstance(kind, EventKind):
                raise TypeError(f"kinds must be EventKind members, got {kind!r}")
        subscription_id = next(self._subscription_ids)
        self._send(Subscribe(subscription_id, listener, wanted))
        return Subscription(subscription_id, self)

    def _unsubscribe(self, subscription_id: int) -> None:
        with contextlib.suppress(SchedulerShutdownError):
            self._send(Unsubscribe(subscription_id))

    def settle(self, timeout: float = 10.0) -> None:
        """Block until nothing due at ``clock.now()`` is unfinished and every event so far was delivered.

        Runs whatever is due now (no need to wait for the timer), waits for those runs (and
        any they make due) to finish, then for the bus to deliver every event published so far.
        Works with any clock. Returns at once after ``shutdown``.

        Raises:
            TimeoutError: not settled within ``timeout`` seconds.
        """
        deadline = time.monotonic() + _check_timeout(timeout)
        settled: Future[None] = Future()
        try:
            self._send(Settle(settled))
        except SchedulerShutdownError:
            return  # nothing will run any more
        try:
            settled.result(timeout=max(0.0, deadline - time.monotonic()))
            self._bus.ask(Flush(), timeout=max(0.0, deadline - time.monotonic()))
        except (TimeoutError, pykka.Timeout) as error:
            raise TimeoutError(f"scheduler did not settle within {timeout} s") from error
        except pykka.ActorDeadError:
            return  # shut down meanwhile: nothing more will run

    def advance(self, seconds: float, *, timeout: float = 10.0) -> None:
        """Move a ``FakeClock`` forward ``seconds``, stopping at every due time on the way.

        At each due time in the window the clock stops and the scheduler settles, so every
        run starts at its own due time and sees the clock there (a run may itself advance the
        clock to model how long it takes). Blocks the caller; ``timeout`` applies to each step.

        Raises:
            TypeError: the clock is not a ``FakeClock``.
            ValueError: ``seconds`` is negative or not finite.
            TimeoutError: a step did not settle within ``timeout``.
        """
        clock = self._clock
        if not isinstance(clock, FakeClock):
            raise TypeError(f"advance() needs a FakeClock, the scheduler has {clock!r}")
        step = require_finite("seconds", seconds)
        if step < 0:
            raise ValueError(f"time can't go backwards: advance({seconds!r})")
        _check_timeout(timeout)
        target = clock.now() + step
        self.settle(timeout)
        while True:
            due = self._query(QueryNextDue()) if not self._closed else None
            if due is None or due > target:
                break
            if due > clock.now():  # a run may have moved the clock past it already
                clock.advance_to(due)
            self.settle(timeout)
        if target > clock.now():  # ... or past the end of the window
            clock.advance_to(target)
        self.settle(timeout)

    # -- shutdown ---------------------------------------------------------------------------

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop: cancel pending tasks, let running ones finish, then end every thread. Idempotent.

        Pending tasks end ``CANCELLED`` (their events are delivered); running one-time tasks
        finish and report; running recurring tasks finish their run and end ``CANCELLED``.
        With ``wait`` the call blocks until all that is done and every thread the scheduler
        started has ended, or ``timeout`` seconds pass: then the scheduler, the bus and the
        idle workers stop anyway, and only a worker still running a task lives on (a daemon
        thread, so it never keeps the interpreter from exiting). Without ``wait`` it returns
        at once and the threads end on their own.
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._ref.tell(Shutdown(self._drained))
                except pykka.ActorDeadError:
                    self._drained.set_result(None)
        if not wait:
            return
        deadline = None if timeout is None else time.monotonic() + _check_timeout(timeout)
        try:
            if not (self._forced_stop or self._ref.actor_stopped.is_set()):  # else never "drained"
                self._drained.result(timeout=_remaining(deadline))
        except TimeoutError:
            # Out of time: stop anyway (its on_stop stops the workers and the bus), and give
            # the threads that are not stuck in a task a moment to end.
            self._forced_stop = True
            stop_quietly(self._ref)
            deadline = time.monotonic() + STOP_GRACE
        # Workers last: a worker stuck in a task must not eat the others' share of the wait.
        threads = sorted(self._threads, key=lambda thread: thread.name.startswith(WorkerActor.__name__))
        for thread in threads:
            if thread is not threading.current_thread():
                thread.join(_remaining(deadline))

    def __enter__(self) -> Scheduler:
        """Return the scheduler; it is shut down (waiting) when the block ends."""
        return self

    def __exit__(self, *_: object) -> None:
        """Shut down and wait."""
        self.shutdown(wait=True)

    # -- helpers ----------------------------------------------------------------------------

    def _send(self, message: object) -> None:
        """Tell the scheduler ``message``, unless it is shut down (``SchedulerShutdownError``)."""
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            try:
                self._ref.tell(message)
            except pykka.ActorDeadError as error:
                raise SchedulerShutdownError("scheduler is shut down") from error

    def _query(self, message: object) -> Any:
        return self._get(self._ref.ask(message, block=False))

    @staticmethod
    def _get(reply: pykka.Future[Any]) -> Any:
        try:
            return reply.get(timeout=ASK_TIMEOUT)
        except pykka.ActorDeadError as error:
            raise SchedulerShutdownError("scheduler is shut down") from error
        except pykka.Timeout as error:
            raise TimeoutError(f"scheduler did not answer within {ASK_TIMEOUT} s") from error

    def __repr__(self) -> str:
        state = "shut down" if self._closed else "running"
        return f"<Scheduler {state} clock={self._clock!r}>"


def _check_timeout(timeout: float) -> float:
    """Return ``timeout`` if it is a finite number of seconds, at least 0."""
    seconds = require_finite("timeout", timeout)
    if seconds < 0:
        raise ValueError(f"timeout must not be negative, got {timeout!r}")
    return seconds


def _remaining(deadline: float | None) -> float | None:
    return None if deadline is None else max(0.0, deadline - time.monotonic())
