"""Reports: what workers tell the scheduler has happened (past-tense names)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import final

from messages.events import TaskId


@final
@dataclass(frozen=True, slots=True)
class Started:
    """Worker ``worker`` started run ``run`` of ``task_id`` at ``started_at`` (sent only when asked)."""

    worker: int
    task_id: TaskId
    run: int
    started_at: float


@final
@dataclass(frozen=True, slots=True)
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


@final
@dataclass(frozen=True, slots=True)
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


@final
@dataclass(frozen=True, slots=True)
class WorkerExited:
    """Worker ``worker`` stopped (it died, or was stopped by force); ``reason`` says how."""

    worker: int
    reason: str
