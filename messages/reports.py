"""Reports: what workers and task handles tell the scheduler has happened (past-tense names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

from messages.events import TaskId
from messages.frozen import fast_init

if TYPE_CHECKING:
    from messages.commands import Task


@final
@dataclass(frozen=True, slots=True)
class Started:
    """Worker ``worker`` started run ``run`` of ``task_id`` at ``started_at`` (sent only when asked)."""

    worker: int
    task_id: TaskId
    run: int
    started_at: float


@fast_init
@final
@dataclass(frozen=True, slots=True)
class Completed:
    """Worker ``worker`` finished run ``run`` of ``task_id``, which returned ``value``.

    ``idle`` says the worker has nothing more to run from the batch it was handed;
    ``started_at`` when the run started (clock time).
    """

    worker: int
    task_id: TaskId
    run: int
    value: object = field(compare=False)
    finished_at: float
    idle: bool = True
    started_at: float | None = None


@fast_init
@final
@dataclass(frozen=True, slots=True)
class Failed:
    """Worker ``worker`` finished run ``run`` of ``task_id``, which raised ``error``.

    ``error`` has no ``__traceback__`` (it would pin the run's frames and so its arguments);
    ``traceback`` is the formatted traceback. ``idle`` and ``started_at`` as in ``Completed``.
    """

    worker: int
    task_id: TaskId
    run: int
    error: BaseException = field(compare=False)
    traceback: str = field(compare=False, repr=False)
    finished_at: float
    idle: bool = True
    started_at: float | None = None


@final
@dataclass(frozen=True, slots=True)
class Skipped:
    """Worker ``worker`` claimed run ``run`` of ``task_id`` but did not start it: it was cancelled.

    ``idle`` as in ``Completed``. ``paused``: not cancelled but paused (its token held the
    run back); the run goes back to the scheduler, as a run taken back before it started.
    """

    worker: int
    task_id: TaskId
    run: int
    idle: bool = True
    paused: bool = False


@final
@dataclass(frozen=True, slots=True)
class Cancelled:
    """A caller cancelled ``task`` through its token (``TaskHandle.cancel``, ``Scheduler.cancel``).

    The decision is made: the scheduler only does the bookkeeping (events, final state). It
    ignores the report if the task has ended meanwhile. ``mid_run`` says a recurring run was
    in progress when the token was revoked: the task ends when that run reports.
    """

    task: Task = field(compare=False)
    mid_run: bool = False


@final
@dataclass(frozen=True, slots=True)
class Paused:
    """A caller paused ``task`` through its token (``Scheduler.pause`` of a memory task).

    The decision is made (the answer was ``True``): the scheduler only does the bookkeeping
    (``PAUSED``, the task's state). Like every report of a decision on the token, it reaches
    the scheduler in the order the decisions were made. Ignored if the task has ended meanwhile.
    """

    task: Task = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class Resumed:
    """A caller resumed ``task`` through its token (``Scheduler.resume``); as ``Paused``."""

    task: Task = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class RunNowClaimed:
    """A caller claimed one manual run of ``task`` on its token (``Scheduler.run_now``, ``"skip"``).

    The scheduler makes the run: it queues one, or, if a run is already due and not started,
    makes that run the manual one (its worker's ``try_start`` takes the claim). As ``Paused``.
    """

    task: Task = field(compare=False)


@final
@dataclass(frozen=True, slots=True)
class WorkerExited:
    """Worker ``worker`` stopped (it died, or was stopped by force); ``reason`` says how."""

    worker: int
    reason: str


@final
@dataclass(frozen=True, slots=True)
class BusExited:
    """The event bus stopped underneath the scheduler; ``reason`` says how (it is replaced)."""

    reason: str
