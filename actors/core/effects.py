"""What the pure core decided, for its owner to carry out: ``Effects``, and ``RunOutcome``.

Plain data, made by the ``Timetable`` (``take_effects``) and read by the ``SchedulerActor``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeAlias

from actors.core.run_log import RunEntry
from actors.core.task_record import TaskRecord, TaskSpec
from actors.sync.claim import Claim
from messages import RunTask, TaskEvent

__all__ = ["Effects", "PlainDone", "PlainRun", "Respecced", "RunOutcome", "as_run_task"]

PlainRun: TypeAlias = tuple[
    TaskRecord, Claim, Callable[..., object], tuple[Any, ...], Mapping[str, Any], float
]
"""The run of a plain task (``PLAIN`` spec, no ``STARTED`` listener, not ``run_now``'s), as dealt:
``(task, claim, fn, args, kwargs, due_at)``, what its worker needs and nothing more.

A tuple, not a ``RunTask``: one is made for nearly every run, and a tuple costs a twentieth of
a frozen dataclass's ``__init__`` (``docs/performance.md``, round 4). Its fields are those of
the ``RunTask`` it stands for (``as_run_task``): the run is the task's ``run_count + 1``, it
takes the token for good (``one_time``), announces nothing, its first attempt. Only a thread
worker (``actors/runtime/worker.py``) is dealt one: a plain task runs on ``THREADS``.
"""

PlainDone: TypeAlias = tuple[int, TaskRecord, object, float, float, bool]
"""A thread worker's report that a ``PlainRun`` returned: ``(worker, task, value, started_at,
finished_at, idle)``, the fields of the ``Completed`` it stands for (``task`` instead of its id
and run number: the run is ``task.run_count + 1``). The scheduler takes it with
``Timetable.completed_plain``, which turns it into that ``Completed`` for anything but the
plain path."""


def as_run_task(run: RunTask | PlainRun) -> RunTask:
    """The ``RunTask`` a dealt run stands for (a ``PlainRun`` made whole; a ``RunTask`` as it is)."""
    if type(run) is not tuple:
        return run  # type: ignore[return-value]
    task, claim, fn, args, kwargs, due_at = run
    return RunTask(task, task.task_id, task.run_count + 1, due_at, fn, args, kwargs, claim, True, False)


class RunOutcome(NamedTuple):
    """How one run of a durable task ended, for the store's run ledger (``entry``; clock times).

    The owner turns the clock times into wall-clock times.
    """

    task: TaskRecord
    entry: RunEntry


class Respecced(NamedTuple):
    """A durable task given a new trigger (``reschedule``): its save writes the trigger too.

    ``spec`` is the task's new spec, and ``due_wall`` its first due time by it (UTC epoch
    seconds): the task's own already, or, with a run in flight, what that run's end applies.
    """

    task: TaskRecord
    spec: TaskSpec
    due_wall: float | None


@dataclass(slots=True)
class Effects:
    """What the owner of a ``Timetable`` must now do, in this order.

    Attributes:
        saves: Durable tasks whose state changed: write them to the store (with ``ledger``),
            before anything below makes the change visible.
        rescheduled: Durable tasks of ``saves`` given a new trigger: their save writes it too.
        ledger: How runs of durable tasks ended, for the store's run ledger (every task's
            runs are also kept on its record, ``TaskRecord.runs``).
        events: Events to publish (only the kinds in ``Timetable.wanted``).
        batches: ``(worker, runs)``: hand each idle worker its batch, in order.
        finished: ``(task, outcome)``: publish each task's end (``task.finish(outcome)``).
        abandoned: Workers left to a hung run: put a new worker in each one's place, then
            ``add_worker`` it (a worker process: kill its child, then ``add_worker``).
    """

    saves: list[TaskRecord] = field(default_factory=list)
    rescheduled: list[Respecced] = field(default_factory=list)
    ledger: list[RunOutcome] = field(default_factory=list)
    events: list[TaskEvent] = field(default_factory=list)
    batches: list[tuple[int, list[RunTask | PlainRun]]] = field(default_factory=list)
    finished: list[tuple[TaskRecord, object]] = field(default_factory=list)
    abandoned: list[int] = field(default_factory=list)

    @property
    def dispatches(self) -> list[tuple[int, RunTask]]:
        """Every run handed out, as ``(worker, run)`` pairs in order (each a ``RunTask``: ``as_run_task``)."""
        return [(worker, as_run_task(run)) for worker, runs in self.batches for run in runs]

    def __bool__(self) -> bool:
        return bool(
            self.events or self.batches or self.finished or self.saves or self.ledger or self.abandoned
        )
