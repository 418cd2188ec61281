"""What the pure core decided, for its owner to carry out: ``Effects``, and ``RunOutcome``.

Plain data, made by the ``Timetable`` (``take_effects``) and read by the ``SchedulerActor``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

from actors.core.run_log import RunEntry
from actors.core.task_record import TaskRecord, TaskSpec
from messages import RunTask, TaskEvent

__all__ = ["Effects", "Respecced", "RunOutcome"]


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
    batches: list[tuple[int, list[RunTask]]] = field(default_factory=list)
    finished: list[tuple[TaskRecord, object]] = field(default_factory=list)
    abandoned: list[int] = field(default_factory=list)

    @property
    def dispatches(self) -> list[tuple[int, RunTask]]:
        """Every run handed out, as ``(worker, run)`` pairs in order."""
        return [(worker, run) for worker, runs in self.batches for run in runs]

    def __bool__(self) -> bool:
        return bool(
            self.events or self.batches or self.finished or self.saves or self.ledger or self.abandoned
        )
