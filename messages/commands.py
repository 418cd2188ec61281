"""Commands: messages that ask an actor to do something (imperative names).

Users may send ``Schedule``, ``Cancel``, ``Tick``, the queries and ``Subscribe``/``Unsubscribe``
to ``Scheduler.ref`` themselves; the rest are sent by the ``Scheduler`` facade and the actors
to each other. Every field of a message users may send is checked when the message is built,
so a bad value is a ``TypeError``/``ValueError`` at the call that builds it, and nothing a
message carries can stop the scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, final

from messages.events import EventKind, TaskEvent, TaskId, is_minted_id
from messages.frozen import fast_init
from messages.triggers import TRIGGER_TYPES, Trigger, require_finite

EMPTY_KWARGS: Mapping[str, Any] = MappingProxyType({})


class TaskToken(Protocol):
    """What a worker needs from a task to start one of its runs (the task's token).

    ``try_start`` is atomic and may be called from any thread; see ``actors/sync/token.py``.
    """

    def try_start(self, one_time: bool, manual: bool = False) -> int:
        """Claim the right to start a run: positive if it may start, 0 if cancelled or ended.

        2: it starts as the manual run a ``run_now`` claimed; negative: the task is paused and
        the run is not ``manual``.
        """

    def end_run(self, claim: Any = None) -> bool:
        """Say a run has ended (before reporting it); ``claim`` is the run's. ``False``: do not report it."""


class RunClaim(Protocol):
    """A handed run's claim: taken by exactly one of its worker and the scheduler (``actors/sync/claim.py``).

    ``stop`` says whether (non-zero) and why the run was asked to stop; ``waker``, if set, is
    called when it is.
    """

    stop: int
    waker: Callable[[], None] | None

    def take(self) -> bool:
        """Take the claim; ``False`` if the other side already has it."""


class Task(Protocol):
    """A task object as messages carry it, opaque (in ``actors`` it is a ``TaskRecord``)."""

    @property
    def task_id(self) -> TaskId:
        """The task's id."""


class Waiter(Protocol):
    """The settable half of a future (``concurrent.futures.Future`` is one)."""

    def set_result(self, result: Any) -> Any:
        """Wake whoever waits."""


class Listener(Protocol):
    """A callable that takes each ``TaskEvent`` it subscribed to (run on the event bus thread)."""

    def __call__(self, event: TaskEvent, /) -> object:
        """Handle one event."""


def require_task_id(task_id: object) -> None:
    """Check that ``task_id`` is a str (``TypeError`` otherwise)."""
    if type(task_id) is not str and not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {task_id!r}")


def as_args(args: object, name: str = "args") -> tuple[Any, ...]:
    """Return positional arguments as a tuple; any sequence will do, but not a str or bytes.

    A list is what people write, and what JSON gives back; a str or bytes is one argument, not
    a sequence of them.

    Raises:
        TypeError: ``args`` is a str, bytes or bytearray, or not a sequence (a set, a dict, a
            generator: their order is not the call's); the message says how to pass one.
    """
    if type(args) is tuple:
        return args
    if isinstance(args, str | bytes | bytearray | memoryview):
        raise TypeError(
            f"{name} must be a sequence of arguments, got the {type(args).__name__} {args!r}:"
            f" for one argument write {name}=({args!r},)"
        )
    if not isinstance(args, Sequence):
        raise TypeError(f"{name} must be a sequence of arguments (a tuple or a list), got {args!r}")
    return tuple(args)


def require_waiter(name: str, waiter: object) -> None:
    """Check that ``waiter`` has a callable ``set_result`` (``TypeError`` otherwise)."""
    if not callable(getattr(waiter, "set_result", None)):
        raise TypeError(f"{name} must have a set_result method (a concurrent.futures.Future), got {waiter!r}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class Schedule:
    """Add a task.

    Reply (when asked): ``True`` if accepted; the minted id (a str, so also true) if
    ``task_id`` was ``None``; ``False`` if refused because the id is live or the scheduler is
    shutting down (logged). A value of the wrong type or out of range is an error when the
    message is built.

    Attributes:
        task_id: The new task's id; must not belong to a task that is still live. ``None``
            lets the scheduler mint one (``"task-<n>"``, a form reserved for minted ids).
        fn: What to run, called on a worker thread as ``fn(*args, **kwargs)``.
        trigger: When to run it.
        args: Positional arguments for ``fn``: any sequence but a str or bytes (a list is
            kept as a tuple).
        kwargs: Keyword arguments for ``fn``.
        name: A label for events and snapshots; defaults to ``fn``'s qualified name.
        max_consecutive_failures: For recurring tasks: stop with status ``FAILED`` after
            this many failed runs in a row. ``None`` means never stop.
    """

    task_id: TaskId | None = None
    fn: Callable[..., object] = field(compare=False)
    trigger: Trigger
    args: Sequence[Any] = ()
    kwargs: Mapping[str, Any] = field(default_factory=lambda: EMPTY_KWARGS, compare=False)
    name: str | None = None
    max_consecutive_failures: int | None = None

    def __post_init__(self) -> None:
        if self.task_id is not None:
            require_task_id(self.task_id)
            if is_minted_id(self.task_id):
                raise ValueError(
                    f"task ids 'task-<digits>', 'task-m<digits>' are reserved, got {self.task_id!r}"
                )
        if not callable(self.fn):
            raise TypeError(f"fn must be callable, got {self.fn!r}")
        if type(self.trigger) not in TRIGGER_TYPES:
            raise TypeError(
                f"trigger must be one of {sorted(t.__name__ for t in TRIGGER_TYPES)}, got {self.trigger!r}"
            )
        if type(self.args) is not tuple:
            object.__setattr__(self, "args", as_args(self.args))
        if not isinstance(self.kwargs, Mapping):
            raise TypeError(f"kwargs must be a mapping, got {self.kwargs!r}")
        if not all(isinstance(key, str) for key in self.kwargs):
            raise TypeError(f"kwargs keys must be str, got {list(self.kwargs)!r}")
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        require_failure_limit(self.max_consecutive_failures)


def require_failure_limit(limit: object) -> None:
    """Check ``max_consecutive_failures``: ``None`` or an int of at least 1."""
    if limit is None:
        return
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise TypeError(f"max_consecutive_failures must be an int, got {limit!r}")
    if limit < 1:
        raise ValueError(f"max_consecutive_failures must be at least 1, got {limit!r}")


@final
@dataclass(frozen=True, slots=True)
class Cancel:
    """Cancel a task. Reply (when asked): whether a run was prevented (or, ``interrupt``, signalled).

    ``interrupt``: also ask a run in progress to stop (``RunContext.cancel_requested``).
    """

    task_id: TaskId
    interrupt: bool = False

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class Tick:
    """Run whatever is due at ``clock.now()``. Stale or duplicate ticks are harmless."""


@final
@dataclass(frozen=True, slots=True)
class Drain:
    """Take and handle everything in the scheduler's outboxes (facade tasks, worker reports)."""


@final
@dataclass(frozen=True, slots=True)
class AddTask:
    """Facade -> scheduler: own ``task`` (built by the facade with a caller-chosen id).

    ``if_exists`` says what to do if its id is live: ``"error"`` (refuse), ``"keep"`` (keep
    the live task) or ``"replace"`` (give the live task this one's definition). A durable
    task comes with the ``definition`` to write to the store first.

    Reply: the task now live under that id (this one, or the live one kept or replaced);
    ``None`` if refused (the id is live with ``"error"``, or the scheduler is shutting
    down); or the exception the store raised. Tasks with minted ids come through the
    facade's outbox instead, without a reply.
    """

    task: Task = field(compare=False)
    if_exists: str = "error"
    definition: object = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.if_exists not in ("error", "keep", "replace"):
            raise ValueError(f'if_exists must be "error", "keep" or "replace", got {self.if_exists!r}')


@final
@dataclass(frozen=True, slots=True)
class FindTask:
    """Facade -> scheduler. Reply: the live task with this id (an ``actors`` ``TaskRecord``), or ``None``.

    ``finished``: a finished task still in the history will do too.
    """

    task_id: TaskId
    finished: bool = False

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class QueryTask:
    """Reply: the task's ``TaskInfo``, or ``None`` if it is neither live nor in the history."""

    task_id: TaskId

    def __post_init__(self) -> None:
        require_task_id(self.task_id)


@final
@dataclass(frozen=True, slots=True)
class QueryTasks:
    """Reply: a ``TaskInfo`` for every live task, in scheduling order (from ``offset``, at most ``limit``).

    A page of them (the status page's table) costs the scheduler thread that page's snapshots,
    not every live task's.
    """

    offset: int = 0
    limit: int | None = None


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
    """Run what is due now, then set ``waiter``'s result once nothing due now is unfinished.

    The result is the scheduler's activity count at that moment (see ``Scheduler.settle``).
    ``until``: the end of a ``Scheduler.advance`` window (clock seconds). Nothing due after it
    runs, even once a run has moved a ``FakeClock`` past it, until a ``Settle`` without
    ``until`` (or with a later one) comes; ``None`` runs what is due now.
    """

    waiter: Waiter = field(compare=False)
    until: float | None = None

    def __post_init__(self) -> None:
        require_waiter("waiter", self.waiter)
        if self.until is not None:
            object.__setattr__(self, "until", require_finite("until", self.until))


@final
@dataclass(frozen=True, slots=True)
class Shutdown:
    """Cancel every pending task, let running ones finish, then stop the workers and the bus.

    ``drained`` is woken when no task is running any more.
    """

    drained: Waiter = field(compare=False)

    def __post_init__(self) -> None:
        require_waiter("drained", self.drained)


@final
@dataclass(frozen=True, slots=True)
class Subscribe:
    """Register ``listener`` (a callable or a pykka ``ActorRef``) for the event kinds in ``kinds``."""

    subscription_id: int
    listener: object = field(compare=False)
    kinds: frozenset[EventKind]

    def __post_init__(self) -> None:
        require_subscription_id(self.subscription_id)
        if not (callable(self.listener) or callable(getattr(self.listener, "tell", None))):
            raise TypeError(f"listener must be callable or a pykka ActorRef, got {self.listener!r}")
        if not isinstance(self.kinds, frozenset) or not self.kinds:
            raise TypeError(f"kinds must be a non-empty frozenset of EventKind, got {self.kinds!r}")
        if not all(isinstance(kind, EventKind) for kind in self.kinds):
            raise TypeError(f"kinds must hold only EventKind members, got {self.kinds!r}")


def require_subscription_id(subscription_id: object) -> None:
    """Check that a subscription id is an int (``TypeError`` otherwise)."""
    if isinstance(subscription_id, bool) or not isinstance(subscription_id, int):
        raise TypeError(f"subscription_id must be an int, got {subscription_id!r}")


@final
@dataclass(frozen=True, slots=True)
class Unsubscribe:
    """Remove the subscription ``subscription_id`` (unknown ids are ignored)."""

    subscription_id: int

    def __post_init__(self) -> None:
        require_subscription_id(self.subscription_id)


@fast_init
@final
@dataclass(frozen=True, slots=True)
class RunTask:
    """One run handed to a worker (internal: built by the scheduler for every run).

    The worker runs it only if it can ``claim.take()`` it first (the scheduler may take it
    back before then); having claimed it, it starts the run only if ``task.try_start(one_time)``
    says the task was not cancelled meanwhile, and otherwise reports ``Skipped``.
    ``one_time``: the run takes the task's token for good (a one-time task never retried).
    ``announce`` asks the worker to report ``Started`` (someone listens for ``STARTED``, or
    the run has a ``timeout``: its deadline counts from the start). ``attempt`` counts from 1
    (a retried run's later attempts); ``coroutine``: ``fn`` is ``async def``; ``manual``: a run
    of ``run_now``.
    """

    task: TaskToken = field(compare=False, repr=False)
    task_id: TaskId
    run: int
    due_at: float
    fn: Callable[..., object] = field(compare=False)
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any] = field(compare=False)
    claim: RunClaim = field(compare=False, repr=False)
    one_time: bool
    announce: bool
    attempt: int = 1
    timeout: float | None = None
    coroutine: bool = False
    manual: bool = False  # a run of Scheduler.run_now, outside the schedule (RunContext.manual)


@final
@dataclass(frozen=True, slots=True)
class RunBatch:
    """Scheduler -> idle worker: these runs, in order (each only if the worker claims it).

    A run is a ``RunTask``, or, for a plain task run by a thread worker, the tuple that
    stands for one (``PlainRun``, ``actors/core/effects.py``): made for nearly every run.

    The worker reports each run it claims with ``Completed``, ``Failed`` or ``Skipped``; the
    report of the last one says ``idle=True``. The list is the worker's from then on: it
    empties it when done, so that the message, which pykka keeps until the next one arrives,
    does not keep the runs' arguments alive.
    """

    runs: list[RunTask | tuple[Any, ...]] = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class Publish:
    """Scheduler -> event bus: deliver these events, in order, to every interested listener."""

    events: tuple[TaskEvent, ...]


@final
@dataclass(frozen=True, slots=True)
class Flush:
    """Scheduler -> event bus: set ``waiter``'s result to ``value`` once earlier events are delivered.

    Every event published before this message reaches its listeners first.
    """

    waiter: Waiter = field(compare=False)
    value: object = None

    def __post_init__(self) -> None:
        require_waiter("waiter", self.waiter)
