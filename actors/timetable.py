"""The pure core: the heap, the task table, the ready queue, the idle workers, the arithmetic.

Rule 1: every decision about *when* and *whether* a task runs is made in this file.
Rule 2: this module starts no thread, reads no clock, calls no user code and imports neither
``threading``, ``time`` nor ``pykka``. Time comes in as ``now``; what should happen goes out
as ``Effects`` (messages to dispatch, events to publish, final states to hand over), which
the ``SchedulerActor`` carries out. Every method runs on whichever single thread owns the
``Timetable`` (the scheduler actor's); it is not thread-safe and needs no lock.

Heap entries are ``(due_at, seq, task)``: ``seq`` breaks ties in scheduling order, so the heap
never compares two tasks. Cancelling marks the task; its entry is dropped when it surfaces,
and the heap is rebuilt once stale entries outnumber live ones.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import math
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Final

from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError
from messages import (
    EventKind,
    FinalStateSink,
    FixedDelay,
    FixedRate,
    Once,
    RunTask,
    Schedule,
    TaskEvent,
    TaskId,
    TaskInfo,
    TaskStatus,
    Trigger,
)

COMPACT_MIN_STALE: Final = 64
"""Below this many stale heap entries, compaction is not worth a rebuild."""


def first_due_at(trigger: Trigger) -> float:
    """Return the due time of a trigger's first run."""
    return trigger.at if isinstance(trigger, Once) else trigger.first_at


def next_fixed_rate(first_at: float, interval: float, ran_at: float, finished_at: float) -> float:
    """Return the next fixed-rate slot after the slot ``ran_at``, given the run finished at ``finished_at``.

    Slot k is due at ``first_at + k * interval``, computed rather than accumulated so it never
    drifts. The next run is the first slot after the one that ran which is not already past
    when the run finished (a slot exactly at ``finished_at`` counts); missed slots are skipped.
    """
    ran_slot = round((ran_at - first_at) / interval)
    slot = max(ran_slot + 1, math.ceil((finished_at - first_at) / interval))
    # The division may round either way; settle the slot against the same product used for due times.
    while first_at + slot * interval < finished_at:
        slot += 1
    while slot - 1 > ran_slot and first_at + (slot - 1) * interval >= finished_at:
        slot -= 1
    return first_at + slot * interval


def next_fixed_delay(delay: float, finished_at: float) -> float:
    """Return when a fixed-delay task runs next: ``delay`` seconds after its run finished."""
    return finished_at + delay


def default_name(fn: object) -> str:
    """Return the name a task gets when none is given: its function's qualified name."""
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


class _State(enum.Enum):
    PENDING = enum.auto()  # in the heap, waiting for its due time
    READY = enum.auto()  # due, in the ready queue waiting for an idle worker
    RUNNING = enum.auto()
    RUNNING_CANCELLED = enum.auto()  # recurring task cancelled mid-run: no further runs
    COMPLETED = enum.auto()
    FAILED = enum.auto()
    CANCELLED = enum.auto()


_STATUS_OF: Final = {
    _State.PENDING: TaskStatus.SCHEDULED,
    _State.READY: TaskStatus.SCHEDULED,
    _State.RUNNING: TaskStatus.RUNNING,
    _State.RUNNING_CANCELLED: TaskStatus.RUNNING,
    _State.COMPLETED: TaskStatus.COMPLETED,
    _State.FAILED: TaskStatus.FAILED,
    _State.CANCELLED: TaskStatus.CANCELLED,
}


class _Task:
    """The runtime record of one live task (slotted: a million of these must stay small)."""

    __slots__ = (
        "args",
        "consecutive_failures",
        "due_at",
        "failure_count",
        "fn",
        "kwargs",
        "last_error",
        "max_failures",
        "name",
        "run_count",
        "sink",
        "state",
        "task_id",
        "trigger",
    )

    def __init__(self, cmd: Schedule, due_at: float) -> None:
        self.task_id = cmd.task_id
        self.fn = cmd.fn
        self.args = cmd.args
        self.kwargs = cmd.kwargs
        self.trigger = cmd.trigger
        self.name = cmd.name
        self.max_failures = cmd.max_consecutive_failures
        self.sink = cmd.sink
        self.state = _State.PENDING
        self.due_at = due_at
        self.run_count = 0
        self.failure_count = 0
        self.consecutive_failures = 0
        self.last_error: BaseException | None = None

    def label(self) -> str:
        return self.name if self.name is not None else default_name(self.fn)

    def snapshot(self) -> TaskInfo:
        waiting = self.state is _State.PENDING or self.state is _State.READY
        return TaskInfo(
            task_id=self.task_id,
            name=self.label(),
            trigger=self.trigger,
            status=_STATUS_OF[self.state],
            run_count=self.run_count,
            failure_count=self.failure_count,
            consecutive_failures=self.consecutive_failures,
            next_run_at=self.due_at if waiting else None,
            last_error=self.last_error,
        )


@dataclass(slots=True)
class Effects:
    """What the owner of a ``Timetable`` must now do, in this order.

    Attributes:
        events: Events to publish (only the kinds in ``Timetable.wanted``).
        dispatches: ``(worker, RunTask)`` pairs: tell each worker its task.
        finished: ``(sink, info, value)``: hand each final state to its sink.
    """

    events: list[TaskEvent] = field(default_factory=list)
    dispatches: list[tuple[int, RunTask]] = field(default_factory=list)
    finished: list[tuple[FinalStateSink, TaskInfo, object]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.events or self.dispatches or self.finished)


class Timetable:
    """Every task's schedule and state, and which worker runs what.

    Mutators take ``now`` (clock seconds) and record what should happen; ``take_effects``
    hands that over. Reports about runs carry their own ``finished_at``.
    """

    def __init__(self, *, workers: int, history: int = 10_000) -> None:
        """Start empty, with workers ``0 .. workers-1`` idle, keeping ``history`` finished tasks."""
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        if history < 0:
            raise ValueError(f"history must not be negative, got {history!r}")
        self.wanted: frozenset[EventKind] = frozenset()
        """Event kinds someone listens to; no other events are built."""
        self.closed = False
        self._heap: list[tuple[float, int, _Task]] = []
        self._seq = itertools.count()
        self._stale = 0  # heap entries whose task is no longer PENDING there
        self._tasks: dict[TaskId, _Task] = {}  # live tasks, in scheduling order
        self._ready: deque[_Task] = deque()  # due tasks waiting for a worker, FIFO
        self._idle: list[int] = list(range(workers - 1, -1, -1))  # a stack: reuse warm workers
        self._running: dict[int, _Task] = {}  # worker -> the task it runs
        self._history: OrderedDict[TaskId, TaskInfo] = OrderedDict()
        self._history_limit = history
        self._effects = Effects()

    # -- commands ---------------------------------------------------------------------------

    def schedule(self, cmd: Schedule, *, now: float) -> None:
        """Add a task; start it at once if it is due and a worker is idle.

        Raises:
            DuplicateTaskError: a live task has the same id (nothing changes).
            SchedulerShutdownError: the timetable was shut down.
        """
        if self.closed:
            raise SchedulerShutdownError(f"scheduler is shut down; task {cmd.task_id!r} rejected")
        if cmd.task_id in self._tasks:
            raise DuplicateTaskError(f"a live task already has id {cmd.task_id!r}")
        task = _Task(cmd, first_due_at(cmd.trigger))
        self._tasks[task.task_id] = task
        heapq.heappush(self._heap, (task.due_at, next(self._seq), task))
        if task.due_at <= now:
            self._release(now)

    def cancel(self, task_id: TaskId, *, now: float) -> bool:
        """Cancel a task; return whether that prevented a run that would otherwise happen.

        Pending or due tasks never run. A running recurring task finishes its run and is not
        rescheduled (``True``); a running one-time task just finishes (``False``).
        """
        task = self._tasks.get(task_id)
        if task is None:
            return False
        state = task.state
        if state is _State.PENDING or state is _State.READY:
            if state is _State.PENDING:
                self._stale += 1
            self._finish(task, _State.CANCELLED, now, None)
            self._compact_if_stale()
            return True
        if state is _State.RUNNING and not isinstance(task.trigger, Once):
            task.state = _State.RUNNING_CANCELLED
            return True
        return False

    def tick(self, *, now: float) -> None:
        """Move every task due at ``now`` to the ready queue and start as many as workers allow."""
        self._release(now)

    def completed(
        self, worker: int, task_id: TaskId, run: int, value: object, *, finished_at: float, now: float
    ) -> None:
        """Record that ``worker`` finished run ``run`` of ``task_id`` normally."""
        task = self._take_run(worker, task_id, run)
        if task is None:
            return
        self._idle.append(worker)
        task.run_count += 1
        task.consecutive_failures = 0
        self._emit(EventKind.COMPLETED, task, finished_at, run)
        self._after_run(task, finished_at, value, failed=False)
        self._release(now)

    def failed(
        self, worker: int, task_id: TaskId, run: int, error: BaseException, *, finished_at: float, now: float
    ) -> None:
        """Record that ``worker`` finished run ``run`` of ``task_id`` by raising ``error``."""
        task = self._take_run(worker, task_id, run)
        if task is None:
            return
        self._idle.append(worker)
        self._fail_run(task, error, finished_at)
        self._release(now)

    def worker_lost(self, worker: int, error: BaseException, *, now: float) -> None:
        """Forget ``worker`` until ``add_worker``; the run it held (if any) fails with ``error``."""
        if worker in self._idle:
            self._idle.remove(worker)
        task = self._running.pop(worker, None)
        if task is not None:
            self._fail_run(task, error, now)
        self._release(now)

    def add_worker(self, worker: int, *, now: float) -> None:
        """Make ``worker`` (new, or a replacement) available for tasks."""
        if worker not in self._idle and worker not in self._running:
            self._idle.append(worker)
        self._release(now)

    def shut_down(self, *, now: float) -> None:
        """Refuse new tasks and cancel every task that is not running.

        Running one-time tasks finish as usual; running recurring ones finish their run and
        then end ``CANCELLED``.
        """
        self.closed = True
        for task in list(self._tasks.values()):
            if task.state is _State.PENDING or task.state is _State.READY:
                self._finish(task, _State.CANCELLED, now, None)
            elif task.state is _State.RUNNING and not isinstance(task.trigger, Once):
                task.state = _State.RUNNING_CANCELLED
        self._heap.clear()
        self._ready.clear()
        self._stale = 0

    # -- queries ----------------------------------------------------------------------------

    def take_effects(self) -> Effects:
        """Return what should happen because of the calls since the last ``take_effects``."""
        effects, self._effects = self._effects, Effects()
        return effects

    def info(self, task_id: TaskId) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a task in the history.

        Raises:
            UnknownTaskError: no such task, or it left the history.
        """
        info = self.find(task_id)
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        return info

    def find(self, task_id: TaskId) -> TaskInfo | None:
        """Return what ``info`` returns, or ``None`` instead of raising."""
        task = self._tasks.get(task_id)
        return task.snapshot() if task is not None else self._history.get(task_id)

    def infos(self) -> list[TaskInfo]:
        """Return a snapshot of every live task, in scheduling order."""
        return [task.snapshot() for task in self._tasks.values()]

    def next_due(self) -> float | None:
        """Return the earliest due time in the heap, or ``None`` if the heap holds no live task."""
        heap = self._heap
        while heap and heap[0][2].state is not _State.PENDING:
            heapq.heappop(heap)
            self._stale -= 1
        return heap[0][0] if heap else None

    def is_settled(self, now: float) -> bool:
        """Whether nothing is running and nothing is due at ``now``."""
        if self._running:
            return False
        due = self.next_due()
        return due is None or due > now

    @property
    def running_count(self) -> int:
        """How many runs are in progress."""
        return len(self._running)

    @property
    def heap_size(self) -> int:
        """Heap entries, stale ones included (for tests of compaction)."""
        return len(self._heap)

    @property
    def live_count(self) -> int:
        """Tasks that are not yet terminal."""
        return len(self._tasks)

    # -- internals --------------------------------------------------------------------------

    def _release(self, now: float) -> None:
        heap = self._heap
        ready = self._ready
        want_due = EventKind.DUE in self.wanted
        while heap and heap[0][0] <= now:
            _, _, task = heapq.heappop(heap)
            if task.state is not _State.PENDING:
                self._stale -= 1
                continue
            task.state = _State.READY
            ready.append(task)
            if want_due:
                self._emit(EventKind.DUE, task, now, task.run_count + 1)
        idle = self._idle
        if not (ready and idle):
            return
        dispatches = self._effects.dispatches
        want_started = EventKind.STARTED in self.wanted
        running = self._running
        while ready and idle:
            task = ready.popleft()
            if task.state is not _State.READY:
                continue  # cancelled while it waited for a worker
            worker = idle.pop()
            task.state = _State.RUNNING
            running[worker] = task
            run = task.run_count + 1
            dispatches.append((worker, RunTask(task.task_id, run, task.fn, task.args, task.kwargs)))
            if want_started:
                self._emit(EventKind.STARTED, task, now, run)

    def _take_run(self, worker: int, task_id: TaskId, run: int) -> _Task | None:
        task = self._running.get(worker)
        if task is None or task.task_id != task_id or task.run_count + 1 != run:
            return None  # a stale report (the run was already accounted for, e.g. worker lost)
        del self._running[worker]
        return task

    def _fail_run(self, task: _Task, error: BaseException, finished_at: float) -> None:
        run = task.run_count + 1
        task.run_count = run
        task.failure_count += 1
        task.consecutive_failures += 1
        task.last_error = error
        self._emit(EventKind.FAILED, task, finished_at, run, error)
        self._after_run(task, finished_at, None, failed=True)

    def _after_run(self, task: _Task, finished_at: float, value: object, *, failed: bool) -> None:
        trigger = task.trigger
        if task.state is _State.RUNNING_CANCELLED:
            self._finish(task, _State.CANCELLED, finished_at, None)
        elif isinstance(trigger, Once):
            self._finish(task, _State.FAILED if failed else _State.COMPLETED, finished_at, value)
        elif failed and task.max_failures is not None and task.consecutive_failures >= task.max_failures:
            self._finish(task, _State.FAILED, finished_at, None)
        else:
            if isinstance(trigger, FixedRate):
                due_at = next_fixed_rate(trigger.first_at, trigger.interval, task.due_at, finished_at)
            else:
                assert isinstance(trigger, FixedDelay)
                due_at = next_fixed_delay(trigger.delay, finished_at)
            task.state = _State.PENDING
            task.due_at = due_at
            heapq.heappush(self._heap, (due_at, next(self._seq), task))

    def _finish(self, task: _Task, state: _State, now: float, value: object) -> None:
        task.state = state
        del self._tasks[task.task_id]
        if state is _State.CANCELLED:
            self._emit(EventKind.CANCELLED, task, now, None)
        info = task.snapshot()
        if self._history_limit:
            history = self._history
            history.pop(task.task_id, None)
            history[task.task_id] = info
            if len(history) > self._history_limit:
                history.popitem(last=False)
        if task.sink is not None:
            self._effects.finished.append((task.sink, info, value))

    def _emit(
        self, kind: EventKind, task: _Task, at: float, run: int | None, error: BaseException | None = None
    ) -> None:
        if kind in self.wanted:
            self._effects.events.append(
                TaskEvent(
                    kind=kind,
                    task_id=task.task_id,
                    name=task.label(),
                    at=at,
                    run=run,
                    due_at=task.due_at if run is not None else None,
                    error=error,
                )
            )

    def _compact_if_stale(self) -> None:
        stale = self._stale
        if stale > COMPACT_MIN_STALE and stale > len(self._heap) - stale:
            self._heap = [entry for entry in self._heap if entry[2].state is _State.PENDING]
            heapq.heapify(self._heap)
            self._stale = 0
