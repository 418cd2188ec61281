"""Commands: messages that ask an actor to do something (imperative names).

Users may send ``Schedule``, ``Cancel`` and ``Tick`` to ``Scheduler.ref`` themselves; the
rest are sent by the ``Scheduler`` facade and the actors to each other.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, final

from messages.events import EventKind, TaskEvent, TaskId, TaskInfo
from messages.frozen import slot_setters
from messages.triggers import FixedDelay, FixedRate, Once, Trigger

EMPTY_KWARGS: Mapping[str, Any] = MappingProxyType({})
_TRIGGER_TYPES = frozenset({Once, FixedRate, FixedDelay})  # all final: type() identifies them


class FinalState(Protocol):
    """A finished task's record: it never changes again, so any thread may read it."""

    def snapshot(self) -> TaskInfo:
        """Return the task's final ``TaskInfo``."""


class TaskSink(Protocol):
    """The caller's side of one task (``TaskHandle`` is one): its token and its final state.

    The token is what lets a cancel be decided on the caller's thread, with no round trip:
    it is taken exactly once, either by a cancel (``revoke_token``) or for good by whoever
    makes the task's fate certain (``take_token``: the worker starting a one-time run, the
    scheduler ending a recurring task after too many failures). Each token method is atomic
    and may be called from any thread.
    """

    def take_token(self) -> bool:
        """Take the token for good; ``False`` if the task was cancelled (or it was taken already)."""

    def revoke_token(self) -> bool:
        """Cancel through the token; ``False`` if it was taken or revoked already."""

    def token_revoked(self) -> bool:
        """Whether the task was cancelled through its token."""

    def task_finished(self, final: FinalState, value: object) -> None:
        """Take the task's final state and, for a completed one-time task, its return value.

        Called once, on the scheduler's thread.
        """


class Waiter(Protocol):
    """The settable half of a future (``concurrent.futures.Future`` is one)."""

    def set_result(self, result: None) -> None:
        """Wake whoever waits."""


class Listener(Protocol):
    """A callable that takes each ``TaskEvent`` it subscribed to (run on the event bus thread)."""

    def __call__(self, event: TaskEvent, /) -> object:
        """Handle one event."""


@final
@dataclass(frozen=True, slots=True, init=False)
class Schedule:
    """Add a task. Reply (when asked): ``True`` if accepted, ``False`` if refused.

    A refused ``Schedule`` (its id is live, or the scheduler is shutting down) is logged, and
    its ``sink`` is handed a ``CANCELLED`` final state.

    Attributes:
        task_id: The new task's id; must not belong to a task that is still live.
        fn: What to run, called on a worker thread as ``fn(*args, **kwargs)``.
        trigger: When to run it.
        args: Positional arguments for ``fn``.
        kwargs: Keyword arguments for ``fn``.
        name: A label for events and snapshots; defaults to ``fn``'s qualified name.
        max_consecutive_failures: For recurring tasks: stop with status ``FAILED`` after
            this many failed runs in a row. ``None`` means never stop.
        sink: Holds the task's cancel token and is told its final state (the facade passes
            the ``TaskHandle``). Without one, only ``Cancel`` messages cancel the task.
    """

    task_id: TaskId
    fn: Callable[..., object] = field(compare=False)
    trigger: Trigger
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=lambda: EMPTY_KWARGS, compare=False)
    name: str | None = None
    max_consecutive_failures: int | None = None
    sink: TaskSink | None = field(default=None, compare=False, repr=False)

    def __init__(  # one per task: written out for speed (see messages.frozen)
        self,
        *,
        task_id: TaskId,
        fn: Callable[..., object],
        trigger: Trigger,
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] = EMPTY_KWARGS,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
        sink: TaskSink | None = None,
    ) -> None:
        set_task_id, set_fn, set_trigger, set_args, set_kwargs, set_name, set_limit, set_sink = (
            _SCHEDULE_SETTERS
        )
        set_task_id(self, task_id)
        set_fn(self, fn)
        set_trigger(self, trigger)
        set_args(self, args)
        set_kwargs(self, kwargs)
        set_name(self, name)
        set_limit(self, max_consecutive_failures)
        set_sink(self, sink)
        self._check()

    def _check(self) -> None:
        if (  # the common case, checked fast: it costs every task once
            type(self.task_id) is str
            and type(self.trigger) in _TRIGGER_TYPES
            and type(self.args) is tuple
            and self.kwargs is EMPTY_KWARGS
            and self.name is None
            and self.max_consecutive_failures is None
            and callable(self.fn)
        ):
            return
        if not callable(self.fn):
            raise TypeError(f"fn must be callable, got {self.fn!r}")
        if not isinstance(self.task_id, str):
            raise TypeError(f"task_id must be a str, got {self.task_id!r}")
        if not isinstance(self.args, tuple):
            raise TypeError(f"args must be a tuple, got {self.args!r}")
        if not isinstance(self.trigger, Once | FixedRate | FixedDelay):
            raise TypeError(f"trigger must be a Once, FixedRate or FixedDelay, got {self.trigger!r}")
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, got {self.kwargs!r}")
        if self.kwargs and not all(isinstance(key, str) for key in self.kwargs):
            raise TypeError(f"kwargs keys must be str, got {list(self.kwargs)!r}")
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        limit = self.max_consecutive_failures
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int)):
            raise TypeError(f"max_consecutive_failures must be an int, got {limit!r}")
        if limit is not None and limit < 1:
            raise ValueError(f"max_consecutive_failures must be at least 1, got {limit!r}")


_SCHEDULE_SETTERS = slot_setters(Schedule)


@final
@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel a task. Reply (when asked): whether a future run was prevented."""

    task_id: TaskId


@final
@dataclass(frozen=True, slots=True)
class Tick:
    """Run whatever is due at ``clock.now()``. Stale or duplicate ticks are harmless."""


@final
@dataclass(frozen=True, slots=True)
class Drain:
    """Take and handle everything in the scheduler's outboxes (facade schedules, worker reports)."""


@final
@dataclass(frozen=True, slots=True)
class QueryTask:
    """Reply: the task's ``TaskInfo``, or ``None`` if it is neither live nor in the history."""

    task_id: TaskId


@final
@dataclass(frozen=True, slots=True)
class QueryTasks:
    """Reply: a ``TaskInfo`` for every live task, in scheduling order."""


@final
@dataclass(frozen=True, slots=True)
class QueryNextDue:
    """Reply: the earliest due time in the heap, or ``None`` if nothing is scheduled."""


@final
@dataclass(frozen=True, slots=True)
class QueryStats:
    """Reply: a ``SchedulerStats``."""


@final
@dataclass(frozen=True, slots=True)
class Settle:
    """Wake ``waiter`` once nothing due at ``clock.now()`` is unfinished (see ``Scheduler.settle``)."""

    waiter: Waiter = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class Shutdown:
    """Cancel every pending task, let running ones finish, then stop the workers and the bus.

    ``drained`` is woken when no task is running any more.
    """

    drained: Waiter = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class Subscribe:
    """Register ``listener`` for the event kinds in ``kinds`` under ``subscription_id``."""

    subscription_id: int
    listener: object = field(compare=False)
    kinds: frozenset[EventKind]


@final
@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """Remove the subscription ``subscription_id`` (unknown ids are ignored)."""

    subscription_id: int


class Claim:
    """A one-shot token that the scheduler and a worker race for; whoever takes it owns the run.

    The worker takes it to start a run it was handed; the scheduler takes it to revoke a run
    not yet started (to cancel it, or to give it to an idle worker). ``take`` is a single
    ``bytearray.pop``, one C call and so atomic: exactly one side wins. (A ``bytearray``, not a
    list: it holds no references, so the garbage collector never has to look at it.)
    """

    __slots__ = ("_token",)

    def __init__(self) -> None:
        self._token = bytearray(b"\x01")

    def take(self) -> bool:
        """Take the token; return ``False`` if the other side already has it."""
        try:
            return bool(self._token.pop())
        except IndexError:
            return False

    @property
    def taken(self) -> bool:
        """Whether someone has taken it."""
        return not self._token


@final
@dataclass(frozen=True, slots=True, init=False)
class RunTask:
    """One run handed to a worker, which runs it only if it can ``claim.take()`` it first.

    Having claimed it, the worker checks the task's ``token`` (if any) before starting: a
    one-time run takes it, a recurring run only checks that it was not revoked. A run whose
    task was cancelled meanwhile is reported ``Skipped`` instead. ``announce`` asks the worker
    to report ``Started`` when it starts the run (someone listens for ``STARTED`` events).
    """

    task_id: TaskId
    run: int
    fn: Callable[..., object] = field(compare=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(compare=False)
    claim: Claim = field(compare=False, repr=False)
    announce: bool = False
    token: TaskSink | None = field(default=None, compare=False, repr=False)
    once: bool = True

    def __init__(  # one per run: written out for speed (see messages.frozen)
        self,
        task_id: TaskId,
        run: int,
        fn: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        claim: Claim,
        announce: bool = False,
        token: TaskSink | None = None,
        once: bool = True,
    ) -> None:
        set_task_id, set_run, set_fn, set_args, set_kwargs, set_claim, set_announce, set_token, set_once = (
            _RUN_TASK_SETTERS
        )
        set_task_id(self, task_id)
        set_run(self, run)
        set_fn(self, fn)
        set_args(self, args)
        set_kwargs(self, kwargs)
        set_claim(self, claim)
        set_announce(self, announce)
        set_token(self, token)
        set_once(self, once)


_RUN_TASK_SETTERS = slot_setters(RunTask)


@final
@dataclass(frozen=True, slots=True)
class RunBatch:
    """Scheduler -> idle worker: these runs, in order (each only if the worker claims it).

    The worker reports each run it claimed with ``Completed`` or ``Failed``; the report of the
    last one says ``idle=True``.
    """

    runs: tuple[RunTask, ...]


@final
@dataclass(frozen=True, slots=True)
class Publish:
    """Scheduler -> event bus: deliver these events, in order, to every interested listener."""

    events: tuple[TaskEvent, ...]


@final
@dataclass(frozen=True, slots=True)
class Flush:
    """Reply (when asked) once every event published before it has reached its listeners."""
