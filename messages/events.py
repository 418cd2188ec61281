"""What listeners and callers are told about tasks: events, statuses and snapshots."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from typing import Literal, final

from messages.triggers import Cron, Once, Trigger

TaskId = str
"""A task's id: given by the caller, or minted by the scheduler (``"task-<n>"``)."""

_MINTED_ID = re.compile(r"task-m?[0-9]+")


def is_minted_id(task_id: str) -> bool:
    """Whether ``task_id`` has a form reserved for ids the scheduler mints.

    ``task-<digits>``, and ``task-m<digits>`` (a memory-only task's on a scheduler with a store).
    """
    return _MINTED_ID.fullmatch(task_id) is not None


class EventKind(enum.Enum):
    """What happened to a task.

    Per task and run, listeners see ``DUE`` -> ``STARTED`` -> ``COMPLETED`` or ``FAILED``. The
    task's last event has ``final=True``: the ``COMPLETED`` or ``FAILED`` of a one-time task, the
    ``FAILED`` that reached a recurring task's ``max_consecutive_failures``, or ``CANCELLED``.
    """

    DUE = "due"
    """The run's time has come; it waits for a free worker."""
    STARTED = "started"
    """A worker started the run; the task's status is ``RUNNING``."""
    COMPLETED = "completed"
    """The run returned normally; ``TaskEvent.value`` holds what it returned."""
    FAILED = "failed"
    """The run raised; ``TaskEvent.error`` holds the exception, ``traceback`` its formatted traceback."""
    CANCELLED = "cancelled"
    """The task will never run again (cancelled, or pending at shutdown)."""
    MISSED = "missed"
    """A due time did not get its run; ``TaskEvent.reason`` says why: ``"misfire"`` (the run
    would have started later than the task's ``misfire_grace`` allows: a recurring task waits
    for its next slot, a one-time task ends ``FAILED``), ``"overlap"`` (it came due while a run
    was in progress) or ``"catch_up"`` (it passed while nothing ran, and the task's
    ``catch_up`` policy skips it). ``due_at`` is the due time missed."""
    TIMED_OUT = "timed_out"
    """A run outlived its task's ``timeout``: it was asked to stop. If it is still going
    ``hung_grace`` seconds later, it counts ``FAILED`` (``TaskTimeoutError``) and its worker is
    replaced."""
    PAUSED = "paused"
    """The task was paused (``Scheduler.pause``): no new run starts until it is resumed."""
    RESUMED = "resumed"
    """The task was resumed (``Scheduler.resume``); ``TaskEvent.due_at`` is not set."""
    CLOCK_JUMPED = "clock_jumped"
    """The wall clock jumped (was stepped by more than a second against the monotonic clock),
    so wall-clock tasks were re-planned. Not about one task: ``task_id`` and ``name`` are
    ``""``, and ``TaskEvent.jump`` holds the jump in seconds (positive: forward)."""


def event_kind(kind: object) -> EventKind:
    """Return the ``EventKind`` ``kind`` is, or names.

    A member, or its name or value as a str, in any case (``"failed"``, ``"FAILED"``,
    ``"clock_jumped"``, ``"clock-jumped"``).

    Raises:
        ValueError: a str that names no kind (the message lists them).
        TypeError: neither an ``EventKind`` nor a str.
    """
    if isinstance(kind, EventKind):
        return kind
    if not isinstance(kind, str):
        raise TypeError(f"kinds must be EventKind members or their names, got {kind!r}")
    member = EventKind.__members__.get(kind.upper().replace("-", "_"))
    if member is None:
        names = ", ".join(each.value for each in EventKind)
        raise ValueError(f"{kind!r} is not an event kind; the kinds are: {names}")
    return member


class TaskStatus(enum.Enum):
    """Where a task is in its life. The last three are terminal."""

    SCHEDULED = "scheduled"
    """Waiting for its next due time, or due and waiting for a free worker."""
    RUNNING = "running"
    """A worker is running it."""
    WAITING = "waiting"
    """A task of ``schedule_after``: waiting for the tasks it depends on (``TaskInfo.waiting_for``)."""
    PAUSED = "paused"
    """Paused (``Scheduler.pause``): no new run starts until it is resumed. Not terminal."""
    COMPLETED = "completed"
    """A one-time task that returned normally."""
    FAILED = "failed"
    """A one-time task that raised, or a recurring one stopped by ``max_consecutive_failures``."""
    CANCELLED = "cancelled"
    """Cancelled before a run, or a recurring task cancelled (or shut down) during one."""


TERMINAL_STATUSES: frozenset[TaskStatus] = frozenset(
    {TaskStatus.COMPLETED, TaskStatus.FAILED, TaskStatus.CANCELLED}
)
"""The statuses a task never leaves (``actors.store.TERMINAL_STATUSES`` are their values)."""

StoredStatus = Literal["scheduled", "completed", "failed", "cancelled"]
"""A stored task's status: the values of ``TaskStatus`` a store writes (``actors.store`` exports it).

A running or waiting task is ``scheduled`` in the store: if the process dies mid-run, the task is
still live after a restart, and the scheduler decides what its interrupted run means. Which
status each of the core's states is written as: ``actors/core/task_state.py``.
"""


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskEvent:
    """One thing that happened to one task, as delivered to listeners.

    Attributes:
        kind: What happened.
        task_id: The task it happened to.
        name: The task's name (its function's qualified name unless one was given).
        at: Clock time at which it happened (read by the scheduler, or by the worker for
            ``STARTED``; ``COMPLETED`` and ``FAILED`` carry the run's finish time).
        run: The 1-based number of the run it concerns; ``None`` for a ``CANCELLED``
            that did not end a run.
        due_at: That run's due time; ``None`` where ``run`` is ``None``.
        error: The exception the run raised, for ``FAILED``; otherwise ``None``. Its
            ``__traceback__`` is cleared (a traceback pins the frames of the run, and so its
            arguments); the formatted traceback is in ``traceback``.
        traceback: The formatted traceback of ``error``, for ``FAILED``.
        value: What the run returned, for ``COMPLETED``.
        final: This is the task's last event: it has ended (its ``TaskInfo`` says how).
        jump: For ``CLOCK_JUMPED``: how far the wall clock jumped, in seconds (positive:
            forward); otherwise ``None``.
        attempt: Which attempt of the run this is about, from 1 (``Retry``).
        retrying: For ``FAILED``: another attempt of the run follows (so it did not count as
            failed yet).
        reason: For ``MISSED``: why the due time did not get its run: ``"overlap"`` (it came
            due while a run of the task was in progress), ``"catch_up"`` (it passed while
            nothing ran, and the task's ``catch_up`` policy skips it) or ``"misfire"`` (its run
            would have started later than ``misfire_grace``); otherwise ``None``.
    """

    kind: EventKind
    task_id: TaskId
    name: str
    at: float
    run: int | None = None
    due_at: float | None = None
    error: BaseException | None = None
    traceback: str | None = None
    value: object = None
    final: bool = False
    jump: float | None = None
    attempt: int = 1
    retrying: bool = False
    reason: str | None = None


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskInfo:
    """A snapshot of one task's state, taken on the scheduler's thread.

    Attributes:
        task_id: The task's id.
        name: The task's name.
        trigger: When it runs (``Once``, ``FixedRate``, ``FixedDelay`` or ``Cron``).
        status: Where it is in its life.
        run_count: Finished runs, failed ones included.
        failure_count: Runs that raised.
        consecutive_failures: Runs that raised since the last one that returned.
        next_run_at: Due time of the next run in clock seconds; ``None`` while running or
            once terminal.
        next_run_wall: The same instant on the wall clock (aware, UTC), for people to read.
        last_error: The exception of the most recent failed run, if any (without its
            ``__traceback__``, which would pin the run's frames).
        last_traceback: That exception's formatted traceback.
        waiting_for: For a ``WAITING`` task: the ids of the tasks it still waits for.
        end_reason: Why the task ended, in words (``None`` while it is live), e.g.
            ``"stopped after 3 consecutive failures (max_consecutive_failures=3)"``.
        node: On a shared store, the node that holds the task's run in flight (claimed or
            running), by its name in the store; ``None`` otherwise.
        wall_offset: Wall-clock time (POSIX seconds) minus clock time when the snapshot was
            taken, to turn the clock times above into wall-clock instants; ``None`` if unknown.
        missed_count: Due times that did not get their run (each one published as
            ``MISSED``), counted by this scheduler since it started (not kept in a store).
        active_runs: For an ``overlap="allow"`` task, how many of its runs are going now
            (started, or due and waiting for a worker), at most its ``max_instances``; its
            ``status`` stays ``SCHEDULED`` for its next slot meanwhile. ``0`` for every other
            task (its ``status`` says whether its one run is going).

    Clock seconds (``next_run_at``, a trigger's ``first_at`` or ``at``) are monotonic: no
    person can read them. ``repr`` shows each beside its wall-clock instant (aware, UTC) in
    brackets, and ``str`` is a one-line summary in wall-clock time.
    """

    task_id: TaskId
    name: str
    trigger: Trigger
    status: TaskStatus
    run_count: int
    failure_count: int
    consecutive_failures: int
    next_run_at: float | None
    last_error: BaseException | None
    next_run_wall: datetime | None = None
    last_traceback: str | None = None
    end_reason: str | None = None
    waiting_for: tuple[TaskId, ...] = ()
    node: str | None = None
    wall_offset: float | None = field(default=None, compare=False)  # a reading, not the task's state
    missed_count: int = 0
    active_runs: int = 0

    @property
    def done(self) -> bool:
        """Whether the task is in a terminal status and will never run again."""
        return self.status in TERMINAL_STATUSES

    def _wall_at(self, at: float | None) -> datetime | None:
        """The wall-clock instant of clock time ``at``, if this snapshot knows the offset."""
        offset = self.wall_offset
        if offset is None and self.next_run_at is not None and self.next_run_wall is not None:
            offset = self.next_run_wall.timestamp() - self.next_run_at
        if at is None or offset is None:
            return None
        try:
            return datetime.fromtimestamp(offset + at, UTC)
        except (OverflowError, ValueError, OSError):
            return None

    def _trigger_text(self) -> str:
        """The trigger's repr, with the wall-clock instant beside its clock time."""
        trigger = self.trigger
        text = repr(trigger)
        if isinstance(trigger, Cron):
            return text  # wall-clock times already
        at = trigger.at if isinstance(trigger, Once) else trigger.first_at
        wall = self._wall_at(at)
        if wall is None:
            return text
        label = "at" if isinstance(trigger, Once) else "first_at"
        return text.replace(f"{label}={at!r}", f"{label}={at!r} [{wall.isoformat()}]", 1)

    def __repr__(self) -> str:
        """The fields, each clock time followed by its wall-clock instant in brackets."""
        parts = []
        for each in fields(self):
            value = getattr(self, each.name)
            if each.name == "trigger":
                text = self._trigger_text()
            elif each.name == "next_run_at" and value is not None and self.next_run_wall is not None:
                text = f"{value!r} [{self.next_run_wall.isoformat()}]"
            else:
                text = repr(value)
            parts.append(f"{each.name}={text}")
        return f"TaskInfo({', '.join(parts)})"

    def __str__(self) -> str:
        """One line for people: id, name, status, next run on the wall clock, counters."""
        text = f"task {self.task_id!r} ({self.name}): {self.status.value}"
        if self.next_run_wall is not None:
            text += f", next run {self.next_run_wall.isoformat(sep=' ')}"
        text += f", {self.run_count} runs, {self.failure_count} failed"
        if self.last_error is not None:
            text += f", last error {type(self.last_error).__name__}: {self.last_error}"
        if self.end_reason is not None:
            text += f" ({self.end_reason})"
        return text


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class SchedulerStats:
    """Counters read on the scheduler's thread (for monitoring and tests).

    Attributes:
        live_tasks: Tasks not yet in a terminal status.
        running: Runs a worker has started and not yet reported.
        heap_size: Tasks waiting in the heap for their due time: the live entries only (a task
            due and waiting for a worker, running, or waiting for another task is not there).
        stale_heap_entries: Entries a cancel or a new due time left behind in the heap, not
            yet pruned. Deletion is lazy: they are dropped in one pass once they outnumber the
            live entries (and are more than a few dozen), so they cost memory, never a run.
        workers: Size of the worker pool.
        ticks: ``Tick`` messages handled.
        timer_wakeups: Times the timer thread woke from a wait (0 when there is no timer).
        replaced_threads: Threads of the scheduler's (workers, the timer, the bus) that died
            and were replaced.
        processes: Size of the process pool (``Scheduler(processes=...)``).
        abandoned_workers: Workers given up on because a run outlived its ``timeout`` and
            ``hung_grace`` (each replaced; a thread is left to finish its run on its own).
    """

    live_tasks: int
    running: int
    heap_size: int
    workers: int
    ticks: int
    timer_wakeups: int
    replaced_threads: int = 0
    processes: int = 0
    abandoned_workers: int = 0
    stale_heap_entries: int = 0
