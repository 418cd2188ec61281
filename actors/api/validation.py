"""Checks of what callers pass to ``Scheduler``: each rule once, each error at the call.

The common case (a plain function, a float delay, no options) is checked first and fast,
because every scheduled task pays for it.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from datetime import datetime
from typing import Any, Final, NamedTuple

from actors.core.policies import DEFAULT_POLICIES, Policies, check_policies
from actors.core.retry import Retry
from actors.core.task_record import INLINE, PROCESSES, THREADS, plain_function
from actors.references import LazyReference, check_picklable_arguments, reference_of, resolve_stored
from actors.sync.clock import Clock
from messages import is_minted_id
from messages.commands import EMPTY_KWARGS, as_args, require_failure_limit
from messages.triggers import require_finite, require_positive_duration

__all__ = [
    "KEYWORD_TAIL",
    "PLAIN_TAIL",
    "TaskOptions",
    "check_clock",
    "check_task",
    "check_task_id",
    "once_due_at",
    "process_target",
    "resolve_task_function",
]

_CLOCK_METHODS: Final = ("now", "wall", "sleep_time", "watch")


def check_clock(clock: object) -> Clock:
    """Return ``clock`` if it has every method of a ``Clock``.

    Raises:
        TypeError: a method is missing.
    """
    missing = [name for name in _CLOCK_METHODS if not callable(getattr(clock, name, None))]
    if missing:
        raise TypeError(f"clock must be a Clock (missing {', '.join(missing)}), got {clock!r}")
    return clock  # type: ignore[return-value]


def check_task_id(task_id: object) -> str:
    """Return a caller-chosen ``task_id`` if it is a str not of a minted form (``is_minted_id``).

    Raises:
        TypeError: not a str.
        ValueError: of the reserved form.
    """
    if not isinstance(task_id, str):
        raise TypeError(f"task_id must be a str, got {task_id!r}")
    if is_minted_id(task_id):
        raise ValueError(f"task ids 'task-<digits>', 'task-m<digits>' are reserved, got {task_id!r}")
    return task_id


def check_task(fn: object, args: object, kwargs: object) -> Mapping[str, Any]:
    """Check a task's function and arguments; return its kwargs as a mapping (``None``: an empty one).

    Raises:
        TypeError: ``fn`` is not callable; ``args`` is not a tuple; ``kwargs`` is not a mapping
            with str keys.
    """
    if kwargs is None and type(args) is tuple and plain_function(fn):
        return EMPTY_KWARGS  # the common case: a plain function, no keyword arguments
    if not callable(fn):
        raise TypeError(f"fn must be callable, got {fn!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"args must be a tuple, got {args!r}")
    if kwargs is None:
        kwargs = EMPTY_KWARGS
    elif not isinstance(kwargs, Mapping):
        raise TypeError(f"kwargs must be a mapping, got {kwargs!r}")
    elif not all(isinstance(key, str) for key in kwargs):
        raise TypeError(f"kwargs keys must be str, got {list(kwargs)!r}")
    return kwargs


class TaskOptions(NamedTuple):
    """The options a ``schedule_*`` call takes: each defined here once, with its default.

    Adding an option means its field here, its rule in ``check``, and where it takes effect
    (the ``TaskSpec`` the facade builds); ``plain`` and the facade's fast path follow from the
    defaults. The fields after ``failure_limit`` are, in order, the keyword tail every
    ``schedule_*`` method takes (``KEYWORD_TAIL``).
    """

    name: str | None = None
    failure_limit: int | None = None
    executor: str = THREADS
    misfire_grace: float | None = None
    if_exists: str = "error"
    durable: bool | None = None
    timeout: float | None = None
    retry: Retry | None = None
    overlap: str = "skip"
    max_instances: int | None = None
    catch_up: str = "latest"
    max_catch_up: int = 100
    jitter: float = 0.0
    keep_result: bool = False

    @property
    def plain(self) -> bool:
        """Whether every option but the name has its default (the common case, taken fast)."""
        return self[1:] == _DEFAULTS_BUT_NAME

    def policies(self, *, recurring: bool) -> Policies:
        """The checked overlap, catch-up and jitter policies (``actors/core/policies.py`` has the rules).

        Raises:
            ValueError, TypeError: as ``check_policies``.
        """
        if self[_POLICY_FIELDS] == _DEFAULT_POLICY_OPTIONS:
            return DEFAULT_POLICIES
        return check_policies(
            self.overlap,
            self.max_instances,
            self.catch_up,
            self.max_catch_up,
            self.jitter,
            recurring=recurring,
        )

    def _check_overlap(self, policies: Policies) -> None:
        """What the overlap policy does not combine with.

        (``overlap="allow"`` works on every store: on a shared one, the runs of a task go on
        beside one another under one lease, on the node that holds it: ``actors/shared/node.py``.)
        """
        if policies.replaces and self.timeout is not None:
            raise ValueError('overlap="replace" does not combine with a timeout (not supported yet)')

    def check(
        self,
        processes: int,
        has_store: bool,
        *,
        message_task: bool = False,
        recurring: bool = False,
        runs_elsewhere: bool = False,
        executors: Collection[str] = (),
    ) -> bool:
        """Check the options against the scheduler's means; return whether the task is durable.

        ``executors``: the names of the executors registered besides the built-in ones.
        ``message_task``: the options of a message task (``Scheduler.tell_*``), the only
        tasks with ``executor="inline"``, never durable (an actor ref cannot be stored).
        ``recurring``: the task has a recurring trigger (the policies are for those only).
        ``runs_elsewhere``: a durable task is run by whichever node of a shared store claims it,
        so a process task needs worker processes on some node, not necessarily this one (a node
        claims runs only into pools it has).

        Raises:
            ValueError: an option is out of range or asks for what the scheduler lacks.
            TypeError: an option has the wrong type.
        """
        if self.name is not None and not isinstance(self.name, str):
            raise TypeError(f"name must be a str, got {self.name!r}")
        require_failure_limit(self.failure_limit)
        if message_task:
            assert self.executor == INLINE
            assert self.durable is False
        elif self.executor not in (THREADS, PROCESSES) and self.executor not in executors:
            registered = "".join(f", {name!r}" for name in executors)
            raise ValueError(
                f'executor must be "thread", "process"{registered} (a registered one), got {self.executor!r}'
            )
        if (
            self.executor == PROCESSES
            and not processes
            and not (runs_elsewhere and self.durable is not False)
        ):
            raise ValueError('executor="process" needs worker processes: Scheduler(processes=N)')
        if self.if_exists not in ("error", "keep", "replace"):
            raise ValueError(f'if_exists must be "error", "keep" or "replace", got {self.if_exists!r}')
        if self.misfire_grace is not None and require_finite("misfire_grace", self.misfire_grace) < 0:
            raise ValueError(f"misfire_grace must not be negative, got {self.misfire_grace!r}")
        if self.durable is not None and not isinstance(self.durable, bool):
            raise TypeError(f"durable must be True, False or None, got {self.durable!r}")
        if self.durable and not has_store:
            raise ValueError("durable=True needs a store: Scheduler(store=...)")
        if self.timeout is not None:
            require_positive_duration("timeout", self.timeout)
        if self.retry is not None and not isinstance(self.retry, Retry):
            raise TypeError(f"retry must be a Retry, got {self.retry!r}")
        durable = has_store if self.durable is None else self.durable
        self._check_overlap(self.policies(recurring=recurring))
        if not isinstance(self.keep_result, bool):
            raise TypeError(f"keep_result must be True or False, got {self.keep_result!r}")
        return durable


_DEFAULTS_BUT_NAME: Final = TaskOptions()[1:]
_POLICY_FIELDS: Final = slice(8, 13)  # overlap to jitter: what check_policies takes
_DEFAULT_POLICY_OPTIONS: Final = TaskOptions()[_POLICY_FIELDS]

KEYWORD_TAIL: Final = TaskOptions._fields[2:]
"""The options every ``schedule_*`` method takes last, in this order (``executor`` to ``keep_result``)."""

PLAIN_TAIL: Final = TaskOptions()[2:]
"""The keyword tail at its defaults: ``schedule_once`` compares its own to this to take the fast path."""


def resolve_task_function(fn: object) -> Callable[..., object]:
    """Return ``fn``, or the function a reference string names (imported now).

    Raises:
        ValueError: a string that is not a reference, or does not import (the message says why).
        TypeError: ``fn`` is neither callable nor a str.
    """
    if not isinstance(fn, str):
        if not callable(fn):
            raise TypeError(f"fn must be callable or a 'module:function' reference, got {fn!r}")
        return fn
    try:
        return resolve_stored(fn)
    except (ImportError, TypeError, ValueError) as error:
        raise ValueError(f"fn {fn!r} does not name an importable function: {error}") from None


def process_target(fn: object, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> LazyReference:
    """Check a task that runs in a worker process; return what the process worker calls.

    Raises:
        ValueError: ``fn`` has no importable name (a lambda, a nested function...), or its
            reference does not import; the message says why and what to pass instead.
        TypeError: an argument cannot be pickled.
    """
    reference = reference_of(fn)
    resolve_task_function(reference)  # it must import here too (the child imports it again)
    check_picklable_arguments(args, kwargs)
    return LazyReference(reference)


def once_due_at(clock: Clock, delay: float | None, at: float | datetime | None) -> float:
    """Return the clock time a one-time task is due: ``delay`` from now, or ``at``.

    ``at`` is clock seconds, or an aware ``datetime`` placed on the clock as it stands now.

    Raises:
        ValueError: both or neither of ``delay``/``at``; a NaN or infinite time; a naive
            ``datetime``; a due time the clock cannot represent.
        TypeError: a time of the wrong type.
    """
    if delay is not None and at is None:
        due_at = clock.now() + require_finite("delay", delay)
    elif at is None or delay is not None:
        raise ValueError("give exactly one of delay and at")
    elif isinstance(at, datetime):
        if at.tzinfo is None:
            raise ValueError(f"at must be an aware datetime (with tzinfo), got {at!r}")
        due_at = clock.now() + (at - clock.wall()).total_seconds()
    else:
        due_at = require_finite("at", at)
    return require_finite("due time", due_at)


def check_bulk(
    delays: object, args: object, *, now: float
) -> tuple[list[float], list[tuple[Any, ...]] | None]:
    """Check ``schedule_many``'s delays and per-task arguments; return the due times and the arguments.

    Raises:
        TypeError: ``delays`` or ``args`` is not an iterable (a str is not one); a delay is
            not a number; an item of ``args`` is not a sequence of arguments (a tuple or a
            list; a str is not one). The message gives its index.
        ValueError: a delay, or the due time it makes from ``now``, is NaN or infinite;
            ``args`` has another length than ``delays``.
    """
    if isinstance(delays, str | bytes) or not isinstance(delays, Iterable):
        raise TypeError(f"delays must be an iterable of numbers of seconds, got {delays!r}")
    times = list(delays)
    if not all(type(delay) is float for delay in times):
        times = [require_finite(f"delays[{index}]", delay) for index, delay in enumerate(times)]
    due_at = [now + delay for delay in times]
    total = sum(due_at)
    if total - total != 0.0:  # one is not finite (or only the sum overflowed): look closer
        for index, (delay, due) in enumerate(zip(times, due_at, strict=True)):
            require_finite(f"delays[{index}]", delay)
            require_finite(f"due time of delays[{index}]", due)
    if args is None:
        return due_at, None
    if isinstance(args, str | bytes) or not isinstance(args, Iterable):
        raise TypeError(f"args must be an iterable of argument tuples, one per delay, got {args!r}")
    arguments = list(args)
    if len(arguments) != len(due_at):
        raise ValueError(
            f"args has {len(arguments)} items for {len(due_at)} delays: give one tuple per delay"
        )
    if not all(type(each) is tuple for each in arguments):  # else look closer (a list will do)
        arguments = [
            each if isinstance(each, tuple) else as_args(each, f"args[{index}]")
            for index, each in enumerate(arguments)
        ]
    return due_at, arguments


def check_callable(fn: Callable[..., object]) -> None:
    """Raise ``TypeError`` unless ``fn`` is callable (for listeners and the like)."""
    if not callable(fn):
        raise TypeError(f"expected a callable, got {fn!r}")
