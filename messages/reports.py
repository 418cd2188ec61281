"""Reports: what workers and task handles tell the scheduler has happened (past-tense names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, final

from messages.events import TaskId
from messages.frozen import slot_setters

if TYPE_CHECKING:
    from messages.commands import TaskSink


@final
@dataclass(frozen=True, slots=True)
class Started:
    """Worker ``worker`` started run ``run`` of ``task_id`` at ``started_at`` (sent only when asked)."""

    worker: int
    task_id: TaskId
    run: int
    started_at: float


@final
@dataclass(frozen=True, slots=True, init=False)
class Completed:
    """Worker ``worker`` finished run ``run`` of ``task_id``, which returned ``value``.

    ``idle`` says the worker has nothing more to run from the batch it was handed.
    """

    worker: int
    task_id: TaskId
    run: int
    value: object = field(compare=False)
    finished_at: float
    idle: bool = True

    def __init__(  # one per run: written out for speed (see messages.frozen)
        self, worker: int, task_id: TaskId, run: int, value: object, finished_at: float, idle: bool = True
    ) -> None:
        set_worker, set_task_id, set_run, set_value, set_finished_at, set_idle = _COMPLETED_SETTERS
        set_worker(self, worker)
        set_task_id(self, task_id)
        set_run(self, run)
        set_value(self, value)
        set_finished_at(self, finished_at)
        set_idle(self, idle)


_COMPLETED_SETTERS = slot_setters(Completed)


@final
@dataclass(frozen=True, slots=True, init=False)
class Failed:
    """Worker ``worker`` finished run ``run`` of ``task_id``, which raised ``error``.

    ``idle`` as in ``Completed``.
    """

    worker: int
    task_id: TaskId
    run: int
    error: BaseException = field(compare=False)
    finished_at: float
    idle: bool = True

    def __init__(  # as Completed's
        self,
        worker: int,
        task_id: TaskId,
        run: int,
        error: BaseException,
        finished_at: float,
        idle: bool = True,
    ) -> None:
        set_worker, set_task_id, set_run, set_error, set_finished_at, set_idle = _FAILED_SETTERS
        set_worker(self, worker)
        set_task_id(self, task_id)
        set_run(self, run)
        set_error(self, error)
        set_finished_at(self, finished_at)
        set_idle(self, idle)


_FAILED_SETTERS = slot_setters(Failed)


@final
@dataclass(frozen=True, slots=True)
class Skipped:
    """Worker ``worker`` claimed run ``run`` of ``task_id`` but did not start it: it was cancelled.

    ``idle`` as in ``Completed``.
    """

    worker: int
    task_id: TaskId
    run: int
    idle: bool = True


@final
@dataclass(frozen=True, slots=True)
class Cancelled:
    """A caller cancelled task ``task_id`` by revoking the token of ``sink`` (its handle).

    The decision is made: the scheduler only does the bookkeeping (events, final state). It
    ignores the report if the task has ended meanwhile, or if its id now belongs to another
    task (``sink`` tells them apart).
    """

    task_id: TaskId
    sink: TaskSink = field(compare=False, repr=False)


@final
@dataclass(frozen=True, slots=True)
class WorkerExited:
    """Worker ``worker`` stopped (it died, or was stopped by force); ``reason`` says how."""

    worker: int
    reason: str
