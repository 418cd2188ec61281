"""A task's record: its definition, its state and counters, and (as a ``Token``) its fate.

Part of the pure core (see ``actors/core/timetable.py``). The record is the one object shared by
everyone who deals with the task, so who may touch which part is written down here:

- ``task_id``, ``fn``, ``args``, ``kwargs``, ``name``, ``spec`` (the immutable ``TaskSpec``:
  trigger and options): written by its creator before anyone else sees it (``fn``, ``args``,
  ``kwargs`` cleared by ``retire``); read by the core (a worker reads none of them: its
  ``RunTask`` carries copies).
- ``state``, ``due_at``, ``due_wall``, ``heap_seq``, ``run_count``, ``failures``, ``claim``,
  ``store_seq``, ``last_outcome``: written and read by the core, on the scheduler's thread (``store_seq`` and
  ``due_wall`` are set by the facade before it hands the record over); read by anyone once
  the token is ``FINISHED``.
- the token and the outcome (``Token``): changed only by their moves, under
  ``actors/sync/token.py``'s lock; read by anyone.

So a ``TaskHandle`` is just a view of its record: every handle of a task agrees, and the
library keeps no handle alive.
"""

from __future__ import annotations

import inspect
import math
import types
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final

from actors.core.cron import CronSchedule
from actors.core.policies import DEFAULT_POLICIES, Policies
from actors.core.recurrence import first_due_at
from actors.core.retry import Retry
from actors.core.run_log import RunEntry
from actors.core.task_state import (
    CANCELLED,
    COMPLETED,
    FAILED,
    FINAL_STATUS,
    PENDING,
    State,
    status_of,
)
from actors.errors import DependencyFailedError
from actors.sync.claim import INTERRUPTED, REPLACED, Claim
from actors.sync.token import FREE, START_REFUSED, STARTED, Token, request_stop
from messages import Completed, Cron, FixedDelay, FixedRate, Once, Schedule, TaskInfo, TaskStatus

__all__ = [
    "INLINE",
    "PLAIN",
    "PROCESSES",
    "THREADS",
    "Failures",
    "RunInstance",
    "TaskRecord",
    "TaskSpec",
    "default_name",
    "makes_coroutine",
    "plain_function",
    "plain_name",
]

_CO_COROUTINE: Final = inspect.CO_COROUTINE
_NEVER_COROUTINES: Final = frozenset({types.BuiltinFunctionType, types.MethodWrapperType})


def default_name(fn: object) -> str:
    """Return the name a task gets when none is given: its function's qualified name."""
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def plain_function(fn: object) -> bool:
    """Whether ``fn`` is a Python function (or a method of one) that is not ``async def``.

    The common task, answered from its code's flags alone: ``makes_coroutine`` is ``False``
    for it, and it is surely callable (the fast paths of the facade and its checks).
    """
    code = getattr(fn, "__code__", None)
    return code is not None and not code.co_flags & _CO_COROUTINE


def plain_name(fn: object) -> str | None:
    """``default_name(fn)`` if ``plain_function(fn)``, else ``None``: two answers in one call."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_flags & _CO_COROUTINE:
        return None
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


def makes_coroutine(fn: object) -> bool:
    """Whether calling ``fn`` makes a coroutine: its worker's event loop runs it.

    ``True`` for an ``async def`` function or method, a ``functools.partial`` of one, and an
    object whose ``__call__`` is ``async def``. The one test of it: every way of scheduling
    (``schedule_*``, a ``Schedule`` message, a task loaded from a store) asks it, so a callable
    is async or not the same way through each. Fast for a function and a builtin.
    """
    code = getattr(fn, "__code__", None)
    if code is not None:
        return bool(code.co_flags & _CO_COROUTINE)
    if type(fn) in _NEVER_COROUTINES:
        return False
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(getattr(fn, "__call__", None))  # noqa: B004


class Failures:
    """A task's failure counters: made only for tasks that fail, miss a run or have a failure limit.

    A run being retried keeps its state here too: ``attempt`` (the attempt that runs next,
    from 1) and ``slot_due_at``/``slot_due_wall``, the run's own due time (its retries are
    due later; the key of the run and a fixed-rate task's next slot count from the slot).
    """

    __slots__ = (
        "attempt",
        "consecutive",
        "count",
        "last_error",
        "last_traceback",
        "missed",
        "slot_due_at",
        "slot_due_wall",
    )

    def __init__(self) -> None:
        self.count = 0
        self.missed = 0  # due times that did not get their run (kept here: most tasks never miss one)
        self.consecutive = 0
        self.last_error: BaseException | None = None
        self.last_traceback: str | None = None
        self.attempt = 1
        self.slot_due_at = 0.0
        self.slot_due_wall: float | None = None


THREADS: Final = "thread"
"""The executor of tasks run on the pool's threads (the default)."""
PROCESSES: Final = "process"
"""The executor of tasks run in the pool's worker processes."""
INLINE: Final = "inline"
"""The executor of the library's own message tasks (``Scheduler.tell_*``): their run, a ``tell``,
is made on the scheduler's thread, with no worker involved. Never for user functions."""


Recurrence = FixedRate | FixedDelay | Cron
"""The triggers of recurring tasks."""


class TaskSpec:
    """How a task repeats and what it allows: immutable, and shared by every plain one-time task.

    A one-time task has no trigger: its due time is all there is to it. ``executor`` is
    ``THREADS`` or ``PROCESSES``; ``misfire_grace`` the seconds a run may start late (``None``:
    any lateness; a run later than that is missed instead).

    A *wall-clock task* (``on_wall``: a cron task, or a one-time task given an aware
    ``datetime``) is due at a wall-clock instant, its record's ``due_wall``; its ``due_at`` is
    derived from it and re-planned when the wall clock jumps. Every other task is due at a
    clock time. ``calendar`` is a cron task's checked expression (its trigger is the ``Cron``
    message, to show).

    ``timeout``: seconds a run may take before it is asked to stop; ``retry``: how a failed run
    is tried again; ``coroutine``: the function is ``async def`` (its worker's loop runs it);
    ``after``: the tasks it waits for (``schedule_after``), and ``delay``, how long after the
    last of them completed it is due.
    """

    __slots__ = (
        "after",
        "calendar",
        "coroutine",
        "delay",
        "executor",
        "failure_limit",
        "keep_result",
        "misfire_grace",
        "on_wall",
        "plain",
        "plain_run",
        "policies",
        "retry",
        "single_start",
        "timeout",
        "trigger",
    )

    def __init__(
        self,
        trigger: Recurrence | None = None,
        failure_limit: int | None = None,
        executor: str = THREADS,
        misfire_grace: float | None = None,
        *,
        on_wall: bool = False,
        timeout: float | None = None,
        retry: Retry | None = None,
        coroutine: bool = False,
        after: tuple[TaskRecord, ...] = (),
        delay: float = 0.0,
        policies: Policies = DEFAULT_POLICIES,
        keep_result: bool = False,
    ) -> None:
        """Describe a task; a ``Cron`` trigger is checked here (``ValueError`` naming the field or zone)."""
        self.trigger = trigger
        self.failure_limit = failure_limit
        self.executor = executor
        self.misfire_grace = misfire_grace
        self.calendar = CronSchedule.parse(trigger.expr, trigger.tz) if isinstance(trigger, Cron) else None
        self.on_wall = on_wall or self.calendar is not None
        self.timeout = timeout
        self.retry = retry
        self.coroutine = coroutine
        self.after = after
        self.delay = delay
        self.policies = policies  # overlap, catch-up, jitter (actors/core/policies.py)
        self.keep_result = keep_result  # each run's value is kept with its run record (as JSON)
        # Whether a run needs no more than the common RunTask (the dealer builds a fuller one).
        # (A run of an overlap="allow" task is a RunInstance's: it says whether run_now made it.)
        self.plain_run = (
            retry is None and timeout is None and not coroutine and not (policies.replaces or policies.allows)
        )
        # Whether a run takes the task's token for good as it starts (a one-time task never retried).
        self.single_start = trigger is None and retry is None
        # Whether it asks for nothing beyond one run on a thread (PLAIN can stand for it).
        self.plain = (
            self.trigger is None
            and self.failure_limit is None
            and self.executor == THREADS
            and self.misfire_grace is None
            and not self.on_wall
            and self.timeout is None
            and self.retry is None
            and not self.coroutine
            and not self.after
            and policies is DEFAULT_POLICIES
            and not self.keep_result
        )

    def or_plain(self) -> TaskSpec:
        """``PLAIN`` if it stands for this spec (one spec shared by every plain task), else this spec."""
        return PLAIN if self.plain else self

    def replace(self, **changes: Any) -> TaskSpec:
        """A spec like this one but for ``changes`` (keywords of ``__init__``): every other option kept.

        The one way to derive a spec, so that an option added to ``__init__`` is never dropped
        by a copy that forgot it (``tests/unit/test_options.py`` holds the field list whole).
        """
        kept = {name: getattr(self, name) for name in SPEC_FIELDS}
        kept.update(changes)
        return TaskSpec(**kept)

    def __repr__(self) -> str:
        return (
            f"TaskSpec({self.trigger!r}, failure_limit={self.failure_limit!r}, "
            f"executor={self.executor!r}, misfire_grace={self.misfire_grace!r}, on_wall={self.on_wall!r}, "
            f"timeout={self.timeout!r}, retry={self.retry!r}, coroutine={self.coroutine!r}, "
            f"policies={self.policies!r}, "
            f"keep_result={self.keep_result!r})"
        )


SPEC_FIELDS: Final = (
    "trigger",
    "failure_limit",
    "executor",
    "misfire_grace",
    "on_wall",
    "timeout",
    "retry",
    "coroutine",
    "after",
    "delay",
    "policies",
    "keep_result",
)
"""The parameters of ``TaskSpec.__init__``, each kept by ``TaskSpec.replace``."""

PLAIN: Final = TaskSpec()
"""The spec of a one-time task with no options (most tasks)."""


class TaskRecord(Token):
    """The record of one task (slotted and lean: a million of these must stay small)."""

    __slots__ = (
        "args",
        "claim",
        "counted_from",
        "due_at",
        "due_wall",
        "failures",
        "fn",
        "heap_seq",
        "kwargs",
        "last_outcome",
        "name",
        "run_count",
        "runs",
        "spec",
        "state",
        "store_seq",
        "task_id",
    )

    def __init__(
        self,
        task_id: str,
        fn: Callable[..., object],
        args: tuple[Any, ...],
        kwargs: Mapping[str, Any],
        due_at: float,
        name: str | None = None,
        spec: TaskSpec = PLAIN,
    ) -> None:
        """Record a new task (on whichever thread builds it; nobody else sees it until it is handed over).

        ``name`` is the name to show; ``None`` means ``default_name(fn)``.
        """
        self._token = FREE  # the Token's slots, set here: a million tasks pay for each call
        self._outcome: object = None
        self.task_id = task_id
        self.fn = fn
        self.args = args
        self.kwargs = kwargs
        self.due_at = due_at
        self.name = name if name is not None else default_name(fn)
        self.spec = spec
        self.state = PENDING
        self.heap_seq: int | None = None  # the due heap's entry this task waits on (actors/core/due_heap.py)
        self.claim: Claim | None = None  # the claim of the run a worker holds
        self.run_count = 0
        self.failures: Failures | None = None
        # The due time as a wall-clock instant (UTC epoch), for wall-clock tasks (where it is
        # the truth and due_at follows it) and durable ones (the store keeps it, and the run
        # key is made from it); and a durable task's row in its store (its seq).
        self.due_wall: float | None = None
        self.store_seq: int | None = None
        self.last_outcome: str | None = None  # how its last run ended, for the store
        # When an interval task's next due time was counted from (clock time: the end of its
        # last run here); None until it has one. A replaced definition counts from it too.
        self.counted_from: float | None = None
        # How its last runs ended, oldest first (actors/core/run_log.py); None before the first.
        # A plain task's one completed run is kept as its worker's report (no allocation), or,
        # from the plain path, as the run's (started_at, finished_at) (run_log.entries).
        self.runs: list[RunEntry] | Completed | tuple[float, float] | None = None

    @classmethod
    def from_schedule(cls, cmd: Schedule, task_id: str, *, now: float, wall_offset: float) -> TaskRecord:
        """Build the record a ``Schedule`` message describes, with id ``task_id``.

        ``now`` and ``wall_offset`` (wall-clock time minus clock time) place a cron task's
        first run.

        Raises:
            ValueError: a ``Cron`` trigger whose expression or zone is bad, or that never fires.
        """
        trigger = cmd.trigger
        recurring = None if isinstance(trigger, Once) else trigger
        if isinstance(recurring, FixedRate | FixedDelay):
            recurring = recurring.resolved(now)  # a relative start counts from now
        spec = TaskSpec(recurring, cmd.max_consecutive_failures, coroutine=makes_coroutine(cmd.fn)).or_plain()
        name = cmd.name if cmd.name is not None else default_name(cmd.fn)
        args = tuple(cmd.args)  # a tuple already (Schedule makes one): the same object
        if spec.calendar is None:
            return cls(task_id, cmd.fn, args, cmd.kwargs, first_due_at(trigger, now), name, spec)
        due_wall = spec.calendar.next_fire(now + wall_offset)
        task = cls(task_id, cmd.fn, args, cmd.kwargs, due_wall - wall_offset, name, spec)
        task.due_wall = due_wall
        return task

    @property
    def trigger(self) -> Recurrence | None:
        """How the task repeats; ``None`` for a one-time task."""
        return self.spec.trigger

    @property
    def failure_limit(self) -> int | None:
        """Its ``max_consecutive_failures``."""
        return self.spec.failure_limit

    @property
    def durable(self) -> bool:
        """Whether the task lives in a store (it has a row there)."""
        return self.store_seq is not None

    @property
    def is_one_time(self) -> bool:
        """Whether the task runs once (it has no recurring trigger)."""
        return self.spec.trigger is None

    def interrupt(self) -> bool:
        """Ask the run in progress, if any, to stop (any thread); whether this asked it.

        Reads the run's claim once: a task between runs has none (the core clears it as the
        run reports), and asking a run that has just ended changes nothing.
        """
        claim = self.claim
        return claim is not None and request_stop(claim, INTERRUPTED)

    def make_way(self) -> bool:
        """Ask the run in progress, if any, to make way for the next (``overlap="replace"``; any thread).

        As ``interrupt``, but the run that stops counts as a run that made way, and the task goes
        on (a shared store's ``run_now`` of a task whose run is in flight on this node).
        """
        claim = self.claim
        return claim is not None and request_stop(claim, REPLACED)

    def label(self) -> str:
        """Return the task's name: the one it was given, else its function's qualified name."""
        return self.name

    def count_missed(self, count: int = 1) -> None:
        """Count ``count`` due times that did not get their run (core's thread)."""
        failures = self.failures
        if failures is None:
            failures = self.failures = Failures()
        failures.missed += count

    def count_failure(self, error: BaseException, traceback: str) -> Failures:
        """Count one failed run (core's thread); return the counters."""
        failures = self.failures
        if failures is None:
            failures = self.failures = Failures()
        failures.count += 1
        failures.consecutive += 1
        failures.last_error = error
        failures.last_traceback = traceback
        return failures

    def reached_failure_limit(self) -> bool:
        """Whether the last runs failed ``failure_limit`` times in a row."""
        limit, failures = self.failure_limit, self.failures
        return limit is not None and failures is not None and failures.consecutive >= limit

    def retire(self) -> None:
        """Keep what a snapshot needs, drop the references to user objects (core's thread, at the end)."""
        self.fn = self.args = self.kwargs = self.claim = None  # type: ignore[assignment]

    def status(self, *, running: bool) -> TaskStatus:
        """The status a snapshot shows; ``running`` says whether a worker is on its run now."""
        return status_of(self.state, running=running)

    def end_reason(self) -> str | None:
        """Why the task ended, in words; ``None`` while it is live."""
        state = self.state
        if state not in FINAL_STATUS:
            return None
        failures = self.failures
        if (
            state is CANCELLED
            and failures is not None
            and isinstance(failures.last_error, DependencyFailedError)
        ):
            return str(failures.last_error)
        if state is FAILED and self.spec.executor == INLINE:
            return "its message could not be delivered: the actor was dead"
        if state is FAILED and self.trigger is not None:
            return (
                f"stopped after {self.failure_limit} consecutive failures "
                f"(max_consecutive_failures={self.failure_limit})"
            )
        return _END_REASONS[state]

    def snapshot(self, *, running: bool = False, wall_offset: float | None = None) -> TaskInfo:
        """Return an immutable ``TaskInfo`` of the record as it is now.

        ``wall_offset`` is wall-clock time (POSIX seconds) minus clock time, to show
        ``next_run_wall`` (a task that knows its due time on the wall clock shows that);
        without either, that field is ``None``.
        """
        status = self.status(running=running)
        failures = self.failures
        next_run_at = self.due_at if status is TaskStatus.SCHEDULED else None
        if next_run_at is not None and self.due_wall is not None:
            wall_offset = self.due_wall - self.due_at  # its own: exact, and known without a clock
        return TaskInfo(
            task_id=self.task_id,
            name=self.label(),
            trigger=self.trigger or Once(self.due_at),
            status=status,
            run_count=self.run_count,
            failure_count=failures.count if failures else 0,
            consecutive_failures=failures.consecutive if failures else 0,
            next_run_at=next_run_at,
            last_error=failures.last_error if failures else None,
            next_run_wall=_wall(next_run_at, wall_offset),
            last_traceback=failures.last_traceback if failures else None,
            end_reason=self.end_reason(),
            waiting_for=self.waiting_for() if status is TaskStatus.WAITING else (),
            wall_offset=wall_offset,
            missed_count=failures.missed if failures else 0,
        )

    def waiting_for(self) -> tuple[str, ...]:
        """The ids of the tasks this one waits for that have not completed yet."""
        return tuple(
            dependency.task_id for dependency in self.spec.after if dependency.state is not COMPLETED
        )


class RunInstance(TaskRecord):
    """One run of an ``overlap="allow"`` task: a record of its own, so several may go at once.

    ``actors/core/instance_runs.py`` makes them and routes their ends back to ``parent``.

    It has its task's id, function, arguments, name and spec (so its events and reports name
    the task), its own token, claim and state, and its run number (``run_count + 1``, as the
    dealer numbers a record's run). ``manual``: a run of ``run_now``.
    """

    __slots__ = ("manual", "parent")

    def __init__(self, parent: TaskRecord, run: int, due_at: float, *, manual: bool) -> None:
        """Make run ``run`` of ``parent``, due at ``due_at`` (core's thread)."""
        super().__init__(
            parent.task_id, parent.fn, parent.args, parent.kwargs, due_at, parent.name, parent.spec
        )
        self.parent = parent
        self.manual = manual
        self.run_count = run - 1
        if parent.due_wall is not None:
            self.due_wall = parent.due_wall - parent.due_at + due_at

    def try_start(self, one_time: bool, manual: bool = False) -> int:
        """Worker: may this run start? Only while its task's token lets a run start (``try_start_beside``).

        (An ``overlap="allow"`` task is operated by its scheduler alone: its token holds no bits.)
        """
        return STARTED if self.try_start_beside(self.parent) else START_REFUSED


_END_REASONS: dict[State, str] = {
    State.COMPLETED: "completed",
    State.FAILED: "the run failed",
    State.CANCELLED: "cancelled",
    State.DETACHED: "left in its store when the scheduler stopped (it runs again after a restart)",
}


def _wall(at: float | None, wall_offset: float | None) -> datetime | None:
    if at is None or wall_offset is None:
        return None
    stamp = at + wall_offset
    if not math.isfinite(stamp):
        return None
    try:
        return datetime.fromtimestamp(stamp, UTC)
    except (OverflowError, ValueError, OSError):  # beyond what a datetime can show
        return None
