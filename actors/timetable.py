"""The pure core: the heap, the task table, the history, and every task's life.

Rule 1: every decision about *when* and *whether* a task runs is made in the pure core: this
module, ``actors/dealer.py`` (due tasks, idle workers, batches) and ``actors/task_record.py``
(a task's record), with ``actors/recurrence.py`` for the arithmetic.
Rule 2: the core starts no thread, reads no clock, calls no user code and imports neither
``threading``, ``time`` nor ``pykka``. Time comes in as ``now``; what should happen goes out
as ``Effects`` (batches to hand to workers, events to publish, final states to hand over),
which the ``SchedulerActor`` carries out. Every method runs on whichever single thread owns the
``Timetable`` (the scheduler actor's); it is not thread-safe and needs no lock.

Heap entries are ``(due_at, seq, task)``: ``seq`` breaks ties in scheduling order, so the heap
never compares two tasks. Cancelling marks the task; its entry is dropped when it surfaces,
and the heap is rebuilt once stale entries outnumber live ones. Tasks that fall due go to the
``Dealer``, which hands them to idle workers in batches, each run with a ``Claim``.

Whether a task may still run is the one decision made partly elsewhere, so that a caller's
cancel needs no round trip: each task's sink (its ``TaskHandle``) holds a token. A cancel
revokes it (on the caller's thread, or here for a ``Cancel`` message); the worker starting a
one-time run takes it; a recurring run starts only while it is not revoked. Whoever gets the
token first wins, and the loser learns it here from a ``Cancelled`` or ``Skipped`` report. The
only state other threads touch is those tokens and the claims, and every step on them is atomic.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from actors.dealer import Dealer
from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError
from actors.recurrence import next_fixed_delay, next_fixed_rate
from actors.task_record import Failures, State, TaskRecord
from messages import (
    EventKind,
    FinalState,
    FixedDelay,
    FixedRate,
    RunTask,
    Schedule,
    TaskEvent,
    TaskId,
    TaskInfo,
    TaskSink,
)

COMPACT_MIN_STALE: Final = 64
"""Below this many stale heap entries, compaction is not worth a rebuild."""


@dataclass(slots=True)
class Effects:
    """What the owner of a ``Timetable`` must now do, in this order.

    Attributes:
        events: Events to publish (only the kinds in ``Timetable.wanted``).
        batches: ``(worker, runs)``: hand each idle worker its batch, in order.
        finished: ``(sink, final, value)``: hand each final state to its sink.
    """

    events: list[TaskEvent] = field(default_factory=list)
    batches: list[tuple[int, list[RunTask]]] = field(default_factory=list)
    finished: list[tuple[TaskSink, FinalState, object]] = field(default_factory=list)

    @property
    def dispatches(self) -> list[tuple[int, RunTask]]:
        """Every run handed out, as ``(worker, run)`` pairs in order."""
        return [(worker, run) for worker, runs in self.batches for run in runs]

    def __bool__(self) -> bool:
        return bool(self.events or self.batches or self.finished)


class Timetable:
    """Every task's schedule and state, and which worker holds what.

    Mutators take ``now`` (clock seconds) and record what should happen; ``take_effects``
    hands that over. Reports about runs carry their own ``finished_at``.
    """

    def __init__(self, *, workers: int, history: int = 10_000) -> None:
        """Start empty, with workers ``0 .. workers-1`` idle, keeping ``history`` finished tasks."""
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        if history < 0:
            raise ValueError(f"history must not be negative, got {history!r}")
        self._wanted: frozenset[EventKind] = frozenset()
        # One flag per kind: enum hashing is Python code, too slow for the per-task path.
        self._want_due = self._want_started = self._want_completed = False
        self._want_failed = self._want_cancelled = False
        self.closed = False
        self._heap: list[tuple[float, int, TaskRecord]] = []
        self._seq = itertools.count()
        self._stale = 0  # heap entries whose task is no longer PENDING there
        self._tasks: dict[TaskId, TaskRecord] = {}  # live tasks, in scheduling order
        self._dealer = Dealer(workers)  # due tasks, idle workers, batches
        self._history: OrderedDict[TaskId, TaskRecord] = OrderedDict()  # retired records
        self._history_limit = history
        self._effects = Effects()
        self._deferred = False  # inside batch(): hand out work once, at the end

    @property
    def wanted(self) -> frozenset[EventKind]:
        """Event kinds someone listens to; no other events are built."""
        return self._wanted

    @wanted.setter
    def wanted(self, kinds: frozenset[EventKind]) -> None:
        self._wanted = kinds
        self._want_due = EventKind.DUE in kinds
        self._want_started = EventKind.STARTED in kinds
        self._want_completed = EventKind.COMPLETED in kinds
        self._want_failed = EventKind.FAILED in kinds
        self._want_cancelled = EventKind.CANCELLED in kinds

    # -- commands ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def batch(self, *, now: float) -> Iterator[None]:
        """Apply several commands and reports, then release due tasks and hand out work once."""
        self._deferred = True
        try:
            yield
        finally:
            self._deferred = False
            self._release(now)

    def schedule(self, cmd: Schedule, *, now: float) -> None:
        """Add a task; hand it to a worker at once if it is due and one is idle.

        Raises:
            DuplicateTaskError: a live task has the same id (nothing changes).
            SchedulerShutdownError: the timetable was shut down.
        """
        if self.closed:
            raise SchedulerShutdownError(f"scheduler is shut down; task {cmd.task_id!r} rejected")
        if cmd.task_id in self._tasks:
            raise DuplicateTaskError(f"a live task already has id {cmd.task_id!r}")
        task = TaskRecord(cmd)
        self._tasks[task.task_id] = task
        heapq.heappush(self._heap, (task.due_at, next(self._seq), task))
        if task.due_at <= now and not self._deferred:
            self._release(now)

    def refuse(self, cmd: Schedule) -> None:
        """Give a refused ``Schedule``'s sink a final state (``CANCELLED``): no one waits for ever."""
        sink = cmd.sink
        if sink is not None:
            task = TaskRecord(cmd)
            task.state = State.CANCELLED
            task.retire()
            self._effects.finished.append((sink, task, None))

    def cancel(self, task_id: TaskId, *, now: float) -> bool:
        """Cancel a task; return whether that prevented a run that would otherwise happen.

        A task whose run has not started never runs. A running recurring task finishes its
        run and is not rescheduled (``True``); a running one-time task just finishes (``False``).
        So does a task already cancelled through its token, whose ``Cancelled`` report is
        still on its way (``False``).
        """
        task = self._tasks.get(task_id)
        if task is None or task.state is State.RUNNING_CANCELLED or not self._take_cancel(task):
            return False
        self._end_cancelled(task, now)
        return True

    def cancelled(self, task_id: TaskId, sink: TaskSink, *, now: float) -> None:
        """Record that a caller cancelled the task whose sink is ``sink`` by revoking its token."""
        task = self._tasks.get(task_id)
        if task is not None and task.sink is sink and task.state is not State.RUNNING_CANCELLED:
            self._end_cancelled(task, now)

    def _take_cancel(self, task: TaskRecord) -> bool:
        """Win the right to cancel ``task``: revoke its token; with no sink, its claim decides."""
        sink = task.sink
        if sink is not None:
            return sink.revoke_token()
        # No token: a one-time run whose claim its worker took is running and cannot be cancelled.
        return task.trigger is not None or task.state is not State.HANDED or self._dealer.revoke(task)

    def _end_cancelled(self, task: TaskRecord, now: float) -> None:
        """End a task whose cancel has won, or mark it to end when its worker reports."""
        if task.state is State.HANDED and not self._dealer.revoke(task):
            task.state = State.RUNNING_CANCELLED  # its worker runs it, or skips it, then reports
            return
        if task.state is State.PENDING:
            self._stale += 1
        self._finish(task, State.CANCELLED, now, None)
        self._compact_if_stale()
        self._release(now)  # a revoke may have left a worker idle

    def tick(self, *, now: float) -> None:
        """Move every task due at ``now`` to the ready FIFO and hand out as much as workers allow."""
        self._release(now)

    def completed(
        self,
        worker: int,
        task_id: TaskId,
        run: int,
        value: object,
        *,
        finished_at: float,
        now: float,
        idle: bool = True,
    ) -> None:
        """Record that ``worker`` finished run ``run`` of ``task_id`` normally."""
        task = self._dealer.report(worker, task_id, run, idle=idle)
        if task is None:
            return
        task.run_count += 1
        if task.failures is not None:
            task.failures.consecutive = 0
        if self._want_completed:
            self._emit(EventKind.COMPLETED, task, finished_at, run)
        if task.trigger is None and task.state is State.HANDED:  # the common case: it just ends
            self._finish(task, State.COMPLETED, finished_at, value)  # (its worker took the token)
        else:
            self._after_run(task, finished_at, value, failed=False)
        if not self._deferred:
            self._release(now)

    def failed(
        self,
        worker: int,
        task_id: TaskId,
        run: int,
        error: BaseException,
        *,
        finished_at: float,
        now: float,
        idle: bool = True,
    ) -> None:
        """Record that ``worker`` finished run ``run`` of ``task_id`` by raising ``error``."""
        task = self._dealer.report(worker, task_id, run, idle=idle)
        if task is None:
            return
        self._fail_run(task, error, finished_at)
        self._release(now)

    def skipped(self, worker: int, task_id: TaskId, run: int, *, now: float, idle: bool = True) -> None:
        """Record that ``worker`` did not start run ``run`` of ``task_id``: it was cancelled."""
        task = self._dealer.report(worker, task_id, run, idle=idle)
        if task is None:
            return
        self._finish(task, State.CANCELLED, now, None)
        self._release(now)

    def started(self, worker: int, task_id: TaskId, run: int, *, started_at: float) -> None:
        """Record that ``worker`` started run ``run`` of ``task_id`` (publishes ``STARTED``)."""
        if self._want_started:
            task = self._dealer.handed(worker, task_id, run)
            if task is not None:
                self._emit(EventKind.STARTED, task, started_at, run)

    def worker_lost(self, worker: int, error: BaseException, *, now: float) -> None:
        """Forget ``worker`` until ``add_worker``.

        Runs it had started fail with ``error``; runs it had not started go back to the front
        of the ready FIFO.
        """
        for task in self._dealer.lose(worker):  # started: its outcome is unknown, so it failed
            self._fail_run(task, error, now)
        self._release(now)

    def add_worker(self, worker: int, *, now: float) -> None:
        """Make ``worker`` (new, or a replacement) available for tasks."""
        self._dealer.add(worker)
        self._release(now)

    def shut_down(self, *, now: float) -> None:
        """Refuse new tasks and cancel every task that has not started its run.

        Running one-time tasks finish as usual; running recurring ones finish their run and
        then end ``CANCELLED``.
        """
        self.closed = True
        deferred, self._deferred = self._deferred, True  # hand the workers nothing more
        for task in list(self._tasks.values()):
            if task.state is State.RUNNING_CANCELLED:
                continue
            if self._take_cancel(task) or (task.sink is not None and task.sink.token_revoked()):
                self._end_cancelled(task, now)
            # else: a worker has started its one-time run, which finishes as usual
        self._deferred = deferred
        self._heap.clear()
        self._dealer.clear()
        self._stale = 0

    # -- queries ----------------------------------------------------------------------------

    def take_effects(self) -> Effects:
        """Return what should happen because of the calls since the last ``take_effects``."""
        effects = self._effects
        if not (effects.events or effects.batches or effects.finished):
            return Effects()  # never hand out the live object: later effects would show in it
        self._effects = Effects()
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
        task = self._tasks.get(task_id) or self._history.get(task_id)
        return task.snapshot() if task is not None else None

    def infos(self) -> list[TaskInfo]:
        """Return a snapshot of every live task, in scheduling order."""
        return [task.snapshot() for task in self._tasks.values()]

    def next_due(self) -> float | None:
        """Return the earliest due time in the heap, or ``None`` if the heap holds no live task."""
        heap = self._heap
        while heap and heap[0][2].state is not State.PENDING:
            heapq.heappop(heap)
            self._stale -= 1
        return heap[0][0] if heap else None

    def is_settled(self, now: float) -> bool:
        """Whether no worker holds a run and nothing is due at ``now``."""
        if self.busy:
            return False
        due = self.next_due()
        return due is None or due > now

    @property
    def busy(self) -> bool:
        """Whether any worker holds a run (started or not) that it has not reported yet."""
        return self._dealer.busy

    @property
    def running_count(self) -> int:
        """Runs a worker has started and not yet reported."""
        return self._dealer.running_count

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
        if self._deferred:
            return
        heap = self._heap
        queue = self._dealer.queue
        want_due = self._want_due
        while heap and heap[0][0] <= now:
            _, _, task = heapq.heappop(heap)
            if task.state is not State.PENDING:
                self._stale -= 1
                continue
            queue(task)
            if want_due:
                self._emit(EventKind.DUE, task, now, task.run_count + 1)
        self._dealer.deal(self._effects.batches, announce=self._want_started)

    def _fail_run(self, task: TaskRecord, error: BaseException, finished_at: float) -> None:
        run = task.run_count + 1
        task.run_count = run
        failures = task.failures
        if failures is None:
            failures = task.failures = Failures(None)
        failures.count += 1
        failures.consecutive += 1
        failures.last_error = error
        if self._want_failed:
            self._emit(EventKind.FAILED, task, finished_at, run, error)
        self._after_run(task, finished_at, None, failed=True)

    def _after_run(self, task: TaskRecord, finished_at: float, value: object, *, failed: bool) -> None:
        trigger = task.trigger
        failures = task.failures
        sink = task.sink
        if task.state is State.RUNNING_CANCELLED or (sink is not None and sink.token_revoked()):
            self._finish(task, State.CANCELLED, finished_at, None)  # cancelled mid-run
        elif trigger is None:
            self._finish(task, State.FAILED if failed else State.COMPLETED, finished_at, value)
        elif failed and failures and failures.limit is not None and failures.consecutive >= failures.limit:
            # Ending it takes the token, unless a cancel just took it first.
            won = sink is None or sink.take_token()
            self._finish(task, State.FAILED if won else State.CANCELLED, finished_at, None)
        else:
            if isinstance(trigger, FixedRate):
                due_at = next_fixed_rate(trigger.first_at, trigger.interval, task.due_at, finished_at)
            else:
                assert isinstance(trigger, FixedDelay)
                due_at = next_fixed_delay(trigger.delay, finished_at)
            task.state = State.PENDING
            task.due_at = due_at
            heapq.heappush(self._heap, (due_at, next(self._seq), task))

    def _finish(self, task: TaskRecord, state: State, now: float, value: object) -> None:
        task.state = state
        del self._tasks[task.task_id]
        if state is State.CANCELLED and self._want_cancelled:
            self._emit(EventKind.CANCELLED, task, now, None)
        sink = task.sink
        task.retire()  # frozen from here on: the sink and the history may share it
        if self._history_limit:
            history = self._history
            history.pop(task.task_id, None)
            history[task.task_id] = task
            if len(history) > self._history_limit:
                history.popitem(last=False)
        if sink is not None:
            self._effects.finished.append((sink, task, value))

    def _emit(
        self,
        kind: EventKind,
        task: TaskRecord,
        at: float,
        run: int | None,
        error: BaseException | None = None,
    ) -> None:
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
            self._heap = [entry for entry in self._heap if entry[2].state is State.PENDING]
            heapq.heapify(self._heap)
            self._stale = 0
