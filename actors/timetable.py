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

Due tasks wait in a FIFO for an idle worker. An idle worker is handed a batch of up to
``BATCH`` of them at once when there is a backlog (so a busy pool is not paced by one message
round trip per task), and each run in a batch carries a ``Claim``: the worker takes it to start
the run, the timetable takes it to revoke a run not yet started. When a worker falls idle while
others still hold unstarted runs, it is given half of the largest such backlog, so a slow task
never delays another due task while any worker is free.

Whether a task may still run is the one decision made partly elsewhere, so that a caller's
cancel needs no round trip: each task's sink (its ``TaskHandle``) holds a token. A cancel
revokes it (on the caller's thread, or here for a ``Cancel`` message); the worker starting a
one-time run takes it; a recurring run starts only while it is not revoked. Whoever gets the
token first wins, and the loser learns it here from a ``Cancelled`` or ``Skipped`` report. The
only state other threads touch is those tokens and the claims, and every step on them is atomic.
"""

from __future__ import annotations

import contextlib
import enum
import heapq
import itertools
from collections import OrderedDict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from actors.errors import DuplicateTaskError, SchedulerShutdownError, UnknownTaskError
from actors.recurrence import first_due_at, next_fixed_delay, next_fixed_rate
from messages import (
    Claim,
    EventKind,
    FinalState,
    FixedDelay,
    FixedRate,
    Once,
    RunTask,
    Schedule,
    TaskEvent,
    TaskId,
    TaskInfo,
    TaskSink,
    TaskStatus,
)

COMPACT_MIN_STALE: Final = 64
"""Below this many stale heap entries, compaction is not worth a rebuild."""

BATCH: Final = 64
"""Most runs handed to one idle worker at once (only when more are due than workers are idle)."""


def default_name(fn: object) -> str:
    """Return the name a task gets when none is given: its function's qualified name."""
    name = getattr(fn, "__qualname__", None)
    return name if isinstance(name, str) else repr(fn)


class _State(enum.Enum):
    PENDING = enum.auto()  # in the heap, waiting for its due time
    READY = enum.auto()  # due, in the ready FIFO waiting for an idle worker
    HANDED = enum.auto()  # in a worker's batch: waiting while its claim is free, running once taken
    RUNNING_CANCELLED = enum.auto()  # recurring task cancelled mid-run: no further runs
    COMPLETED = enum.auto()
    FAILED = enum.auto()
    CANCELLED = enum.auto()


_FINAL_STATUS: Final = {
    _State.COMPLETED: TaskStatus.COMPLETED,
    _State.FAILED: TaskStatus.FAILED,
    _State.CANCELLED: TaskStatus.CANCELLED,
}


class _Failures:
    """A task's failure counters: allocated only for tasks that fail or have a failure limit."""

    __slots__ = ("consecutive", "count", "last_error", "limit")

    def __init__(self, limit: int | None) -> None:
        self.count = 0
        self.consecutive = 0
        self.last_error: BaseException | None = None
        self.limit = limit


class _Task:
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
        self.trigger: FixedRate | FixedDelay | None
        if type(trigger) is Once:
            self.trigger = None
            self.due_at = trigger.at
        else:
            self.trigger = trigger
            self.due_at = first_due_at(trigger)
        self.name = cmd.name
        self.sink = cmd.sink
        self.state = _State.PENDING
        self.claim: Claim | None = None  # set while the run is in a worker's batch
        self.run_count = 0
        limit = cmd.max_consecutive_failures
        self.failures = _Failures(limit) if limit is not None else None

    def label(self) -> str:
        return self.name if self.name is not None else default_name(self.fn)

    def retire(self) -> None:
        """Freeze a finished record: keep what a snapshot needs, drop references to user objects."""
        self.name = self.label()
        self.fn = self.args = self.kwargs = self.sink = self.claim = None  # type: ignore[assignment]

    def started(self) -> bool:
        """Whether a worker has taken (or is about to start) the current run."""
        return self.state is _State.RUNNING_CANCELLED or (self.claim is not None and self.claim.taken)

    def status(self) -> TaskStatus:
        final = _FINAL_STATUS.get(self.state)
        if final is not None:
            return final
        return TaskStatus.RUNNING if self.started() else TaskStatus.SCHEDULED

    def snapshot(self) -> TaskInfo:
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
        self._heap: list[tuple[float, int, _Task]] = []
        self._seq = itertools.count()
        self._stale = 0  # heap entries whose task is no longer PENDING there
        self._tasks: dict[TaskId, _Task] = {}  # live tasks, in scheduling order
        self._ready: deque[_Task] = deque()  # due tasks waiting for a worker, FIFO
        self._idle: list[int] = list(range(workers - 1, -1, -1))  # a stack: reuse warm workers
        self._batches: dict[int, deque[_Task]] = {}  # busy worker -> runs handed, not yet reported
        self._history: OrderedDict[TaskId, _Task] = OrderedDict()  # retired records
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
        task = _Task(cmd)
        self._tasks[task.task_id] = task
        heapq.heappush(self._heap, (task.due_at, next(self._seq), task))
        if task.due_at <= now and not self._deferred:
            self._release(now)

    def refuse(self, cmd: Schedule) -> None:
        """Give a refused ``Schedule``'s sink a final state (``CANCELLED``): no one waits for ever."""
        sink = cmd.sink
        if sink is not None:
            task = _Task(cmd)
            task.state = _State.CANCELLED
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
        if task is None or task.state is _State.RUNNING_CANCELLED or not self._take_cancel(task):
            return False
        self._end_cancelled(task, now)
        return True

    def cancelled(self, task_id: TaskId, sink: TaskSink, *, now: float) -> None:
        """Record that a caller cancelled the task whose sink is ``sink`` by revoking its token."""
        task = self._tasks.get(task_id)
        if task is not None and task.sink is sink and task.state is not _State.RUNNING_CANCELLED:
            self._end_cancelled(task, now)

    def _take_cancel(self, task: _Task) -> bool:
        """Win the right to cancel ``task``: revoke its token; with no sink, its claim decides."""
        sink = task.sink
        if sink is not None:
            return sink.revoke_token()
        # No token: a one-time run whose claim its worker took is running and cannot be cancelled.
        return task.trigger is not None or task.state is not _State.HANDED or self._revoke(task)

    def _end_cancelled(self, task: _Task, now: float) -> None:
        """End a task whose cancel has won, or mark it to end when its worker reports."""
        if task.state is _State.HANDED and not self._revoke(task):
            task.state = _State.RUNNING_CANCELLED  # its worker runs it, or skips it, then reports
            return
        if task.state is _State.PENDING:
            self._stale += 1
        self._finish(task, _State.CANCELLED, now, None)
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
        task = self._take_report(worker, task_id, run, idle=idle)
        if task is None:
            return
        task.run_count += 1
        if task.failures is not None:
            task.failures.consecutive = 0
        if self._want_completed:
            self._emit(EventKind.COMPLETED, task, finished_at, run)
        if task.trigger is None and task.state is _State.HANDED:  # the common case: it just ends
            self._finish(task, _State.COMPLETED, finished_at, value)  # (its worker took the token)
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
        task = self._take_report(worker, task_id, run, idle=idle)
        if task is None:
            return
        self._fail_run(task, error, finished_at)
        self._release(now)

    def skipped(self, worker: int, task_id: TaskId, run: int, *, now: float, idle: bool = True) -> None:
        """Record that ``worker`` did not start run ``run`` of ``task_id``: it was cancelled."""
        task = self._take_report(worker, task_id, run, idle=idle)
        if task is None:
            return
        self._finish(task, _State.CANCELLED, now, None)
        self._release(now)

    def started(self, worker: int, task_id: TaskId, run: int, *, started_at: float) -> None:
        """Record that ``worker`` started run ``run`` of ``task_id`` (publishes ``STARTED``)."""
        batch = self._batches.get(worker)
        if not batch or not self._want_started:
            return
        for task in batch:  # the run is near the front: at most the one before it is unreported
            if task.task_id == task_id and task.run_count + 1 == run:
                self._emit(EventKind.STARTED, task, started_at, run)
                return

    def worker_lost(self, worker: int, error: BaseException, *, now: float) -> None:
        """Forget ``worker`` until ``add_worker``.

        Runs it had started fail with ``error``; runs it had not started go back to the front
        of the ready FIFO.
        """
        if worker in self._idle:
            self._idle.remove(worker)
        batch = self._batches.pop(worker, deque())
        self._requeue_unstarted(batch)
        for task in batch:
            if task.claim is not None:  # started: its outcome is unknown, so it failed
                task.claim = None
                self._fail_run(task, error, now)
        self._release(now)

    def add_worker(self, worker: int, *, now: float) -> None:
        """Make ``worker`` (new, or a replacement) available for tasks."""
        if worker not in self._idle and worker not in self._batches:
            self._idle.append(worker)
        self._release(now)

    def shut_down(self, *, now: float) -> None:
        """Refuse new tasks and cancel every task that has not started its run.

        Running one-time tasks finish as usual; running recurring ones finish their run and
        then end ``CANCELLED``.
        """
        self.closed = True
        deferred, self._deferred = self._deferred, True  # hand the workers nothing more
        for task in list(self._tasks.values()):
            if task.state is _State.RUNNING_CANCELLED:
                continue
            if self._take_cancel(task) or (task.sink is not None and task.sink.token_revoked()):
                self._end_cancelled(task, now)
            # else: a worker has started its one-time run, which finishes as usual
        self._deferred = deferred
        self._heap.clear()
        self._ready.clear()
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
        while heap and heap[0][2].state is not _State.PENDING:
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
        return bool(self._batches)

    @property
    def running_count(self) -> int:
        """Runs a worker has started and not yet reported."""
        return sum(task.started() for batch in self._batches.values() for task in batch)

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
        ready = self._ready
        want_due = self._want_due
        while heap and heap[0][0] <= now:
            _, _, task = heapq.heappop(heap)
            if task.state is not _State.PENDING:
                self._stale -= 1
                continue
            task.state = _State.READY
            ready.append(task)
            if want_due:
                self._emit(EventKind.DUE, task, now, task.run_count + 1)
        while self._idle and (self._hand_out() or self._steal()):
            pass

    def _hand_out(self) -> bool:
        """Deal the ready FIFO round-robin to the idle workers; return whether any was dealt."""
        ready, idle = self._ready, self._idle
        while ready and ready[0].state is not _State.READY:
            ready.popleft()  # cancelled while it waited
        if not ready:
            return False
        count = min(len(idle), len(ready))
        per_worker = min(BATCH, -(-len(ready) // count))
        workers = [idle.pop() for _ in range(count)]
        batches: list[list[_Task]] = [[] for _ in workers]
        for _ in range(per_worker):
            for batch in batches:
                task = self._next_ready()
                if task is None:
                    break
                batch.append(task)
        handed = self._effects.batches
        want_started = self._want_started
        handed_state = _State.HANDED
        for worker, batch in zip(workers, batches, strict=True):
            if not batch:
                idle.append(worker)
                continue
            self._batches[worker] = deque(batch)
            runs: list[RunTask] = []
            for task in batch:
                task.state = handed_state
                claim = task.claim = Claim()
                runs.append(
                    RunTask(
                        task.task_id,
                        task.run_count + 1,
                        task.fn,
                        task.args,
                        task.kwargs,
                        claim,
                        want_started,
                        task.sink,
                        task.trigger is None,
                    )
                )
            handed.append((worker, runs))
        return True

    def _next_ready(self) -> _Task | None:
        ready = self._ready
        while ready:
            task = ready.popleft()
            if task.state is _State.READY:
                return task
        return None

    def _steal(self) -> bool:
        """Move unstarted runs of the batch with the most to spare back to the ready FIFO.

        A batch can spare its unstarted runs, less one if it has not started any (its worker
        is about to); half of that spare (rounded up) is taken, from the back.
        """
        victim: deque[_Task] | None = None
        most = 0
        for batch in self._batches.values():
            unstarted = sum(not task.started() for task in batch)
            spare = unstarted if unstarted < len(batch) else unstarted - 1
            if spare > most:
                victim, most = batch, spare
        if victim is None:
            return False
        stolen: list[_Task] = []
        for _ in range((most + 1) // 2):
            if not self._revoke_claim(victim[-1]):
                break  # its worker just started it, and so everything before it
            stolen.append(victim.pop())
        self._ready.extendleft(stolen)  # reversed twice: original order, at the front
        return bool(stolen)

    def _revoke(self, task: _Task) -> bool:
        """Take back a handed run before its worker starts it; return whether that worked."""
        if not self._revoke_claim(task):
            return False
        for worker, batch in self._batches.items():
            if task in batch:
                batch.remove(task)
                if not batch:  # the worker will find nothing to claim: it is idle now
                    del self._batches[worker]
                    self._idle.append(worker)
                break
        return True

    @staticmethod
    def _revoke_claim(task: _Task) -> bool:
        claim = task.claim
        if claim is None or not claim.take():
            return False
        task.claim = None
        task.state = _State.READY
        return True

    def _take_report(self, worker: int, task_id: TaskId, run: int, *, idle: bool) -> _Task | None:
        batch = self._batches.get(worker)
        if not batch:
            return None  # a stale report (the run was already accounted for, e.g. worker lost)
        task = batch[0]
        if task.task_id != task_id or task.run_count + 1 != run:
            return None
        batch.popleft()
        task.claim = None
        if idle:
            del self._batches[worker]
            self._requeue_unstarted(batch)  # normally none: the worker found nothing to claim
            self._idle.append(worker)
        return task

    def _requeue_unstarted(self, batch: deque[_Task]) -> None:
        """Take back the runs of ``batch`` not yet started; put them at the front of the FIFO, in order."""
        self._ready.extendleft(reversed([task for task in batch if self._revoke_claim(task)]))

    def _fail_run(self, task: _Task, error: BaseException, finished_at: float) -> None:
        run = task.run_count + 1
        task.run_count = run
        failures = task.failures
        if failures is None:
            failures = task.failures = _Failures(None)
        failures.count += 1
        failures.consecutive += 1
        failures.last_error = error
        if self._want_failed:
            self._emit(EventKind.FAILED, task, finished_at, run, error)
        self._after_run(task, finished_at, None, failed=True)

    def _after_run(self, task: _Task, finished_at: float, value: object, *, failed: bool) -> None:
        trigger = task.trigger
        failures = task.failures
        sink = task.sink
        if task.state is _State.RUNNING_CANCELLED or (sink is not None and sink.token_revoked()):
            self._finish(task, _State.CANCELLED, finished_at, None)  # cancelled mid-run
        elif trigger is None:
            self._finish(task, _State.FAILED if failed else _State.COMPLETED, finished_at, value)
        elif failed and failures and failures.limit is not None and failures.consecutive >= failures.limit:
            # Ending it takes the token, unless a cancel just took it first.
            won = sink is None or sink.take_token()
            self._finish(task, _State.FAILED if won else _State.CANCELLED, finished_at, None)
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
        if state is _State.CANCELLED and self._want_cancelled:
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
        self, kind: EventKind, task: _Task, at: float, run: int | None, error: BaseException | None = None
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
            self._heap = [entry for entry in self._heap if entry[2].state is _State.PENDING]
            heapq.heapify(self._heap)
            self._stale = 0
