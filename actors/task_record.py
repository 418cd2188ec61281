"""A task's runtime record in the pure core: its state, counters and snapshot.

Part of the pure core (see ``actors/timetable.py``): no threads, no clock, no pykka. Records
are owned by the ``Timetable`` and read by its ``Dealer``, both on the scheduler's thread; the
only parts another thread touches are the ``Claim`` of a handed run and the task's sink token,
and only through their atomic methods.
"""

from __future__ import annotations

import enum
from typing import Final

from actors.recurrence import first_due_at
from messages import (
    Claim,
    Cron,
    FixedDelay,
    FixedRate,
    Once,
    Schedule,
    TaskInfo,
    TaskStatus,
)


def default_name(fn: object) -> str:
    """Return the name a task gets when none is given: its function's qualified name."""
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


class State(enum.Enum):
    """Where a task is in its life; the last three are final."""

    PENDING = enum.auto()  # in the heap, waiting for its due time
    READY = enum.auto()  # due, in the ready FIFO waiting for an idle worker
    HANDED = enum.auto()  # in a worker's batch: waiting while its claim is free, running once taken
    RUNNING_CANCELLED = enum.auto()  # cancelled while a worker holds its run: ends when it reports
    COMPLETED = enum.auto()
    FAILED = enum.auto()
    CANCELLED = enum.auto()


_FINAL_STATUS: Final = {
    State.COMPLETED: TaskStatus.COMPLETED,
    State.FAILED: TaskStatus.FAILED,
    State.CANCELLED: TaskStatus.CANCELLED,
}


class Failures:
    """A task's failure counters: allocated only for tasks that fail or have a failure limit."""

    __slots__ = ("consecutive", "count", "last_error", "limit")

    def __init__(self, limit: int | None) -> None:
        self.count = 0
        self.consecutive = 0
        self.last_error: BaseException | None = None
        self.limit = limit


class TaskRecord:
    """The runtime record of one live task (slotted and lean: a million of these must stay small)."""

    __slots__ = (
        "args",
        "claim",
        "due_at",
        "failures",
        "fn",
        "kwargs",
        "name",
        "run_count",
        "sink",
        "state",
        "task_id",
        "trigger",
    )

    def __init__(self, cmd: Schedule) -> None:
        trigger = cmd.trigger
        self.task_id = cmd.task_id
        self.fn = cmd.fn
        self.args = cmd.args
        self.kwargs = cmd.kwargs
        # A one-time task keeps no trigger: its due time is all there is to it.
        self.trigger: FixedRate | FixedDelay | Cron | None
        if type(trigger) is Once:
            self.trigger = None
            self.due_at = trigger.at
        else:
            self.trigger = trigger
            self.due_at = first_due_at(trigger)
        self.name = cmd.name
        self.sink = cmd.sink
        self.state = State.PENDING
        self.claim: Claim | None = None  # set while the run is in a worker's batch
        self.run_count = 0
        limit = cmd.max_consecutive_failures
        self.failures = Failures(limit) if limit is not None else None

    def label(self) -> str:
        """Return the task's name: the one it was given, else its function's qualified name."""
        return self.name if self.name is not None else default_name(self.fn)

    def retire(self) -> None:
        """Freeze a finished record: keep what a snapshot needs, drop references to user objects."""
        self.name = self.label()
        self.fn = self.args = self.kwargs = self.sink = self.claim = None  # type: ignore[assignment]

    def started(self) -> bool:
        """Whether a worker has taken (or is about to start) the current run."""
        return self.state is State.RUNNING_CANCELLED or (self.claim is not None and self.claim.taken)

    def status(self) -> TaskStatus:
        """Return the status a snapshot shows now."""
        final = _FINAL_STATUS.get(self.state)
        if final is not None:
            return final
        return TaskStatus.RUNNING if self.started() else TaskStatus.SCHEDULED

    def snapshot(self) -> TaskInfo:
        """Return an immutable ``TaskInfo`` of the record as it is now."""
        status = self.status()
        failures = self.failures
        return TaskInfo(
            task_id=self.task_id,
            name=self.label(),
            trigger=self.trigger or Once(self.due_at),
            status=status,
            run_count=self.run_count,
            failure_count=failures.count if failures else 0,
            consecutive_failures=failures.consecutive if failures else 0,
            next_run_at=self.due_at if status is TaskStatus.SCHEDULED else None,
            last_error=failures.last_error if failures else None,
        )
