"""The pure core: the task table, the history, and every task's life.

Rule 1: every decision about *when* and *whether* a task runs is made in the pure core: this
module and its parts (``actors/core/run_endings.py``, ``stopping.py``, ``queries.py``), with
``actors/core/due_heap.py`` (pending tasks by due time), ``actors/core/dealer.py`` (due tasks, idle
workers, batches), ``actors/core/task_record.py`` and ``actors/core/task_state.py`` (a task's record
and the table of its states), and ``actors/core/recurrence.py`` (the arithmetic).

Rule 2: the core starts no thread, reads no clock, calls no user code and imports neither
``threading``, ``time`` nor ``pykka``. Time comes in as ``now``; what should happen goes out as
``Effects`` (batches to hand to workers, events to publish, final states to publish), which the
``SchedulerActor`` carries out. Every method runs on whichever single thread owns the
``Timetable`` (the scheduler actor's); it is not thread-safe and needs no lock.

Rule 3: the core never decides by looking at state another thread may change. It meets other
threads at two places, both atomic *moves* whose result it takes as an input, as it takes a
report: a task's token (``actors/sync/token.py``: a caller's cancel and a worker's start race for
it) and a handed run's claim (``actors/sync/claim.py``: the worker's start and the core's take-back
race for it). Whoever moves first wins; the loser learns it from its own move, or from the
``Cancelled`` or ``Skipped`` report that follows.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from actors.core.dealer import Dealer
from actors.core.dependencies import Blocked, Dependencies
from actors.core.due_heap import DueHeap
from actors.core.effects import Effects
from actors.core.instance_runs import Instances
from actors.core.operations import Operations
from actors.core.parked import Parcel, ParkedTasks
from actors.core.policies import DEFAULT_POLICIES
from actors.core.run_totals import RunCounts
from actors.core.task_record import PLAIN, PROCESSES, Failures, RunInstance, TaskRecord, TaskSpec
from actors.core.task_state import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    HANDED,
    PENDING,
    READY,
    WAITING,
    State,
    move_to,
)
from actors.core.wall_tasks import WallTasks
from actors.errors import (
    DependencyFailedError,
    DuplicateTaskError,
    NoWorkerProcessesError,
    SchedulerShutdownError,
)
from actors.sync.token import FREE, RAN, RUNNING
from messages import (
    Cancelled,
    EventKind,
    FixedDelay,
    FixedRate,
    Schedule,
    TaskEvent,
    TaskId,
)


class Timetable(Operations):
    """Every task's schedule and state, and which worker holds what.

    Mutators take ``now`` (clock seconds) and record what should happen; ``take_effects``
    hands that over. Reports about runs carry their own ``finished_at``.

    This class holds the state, the commands and the release of due tasks to the workers;
    its parts, each built on the ones before, hold the rest: ``RunEndings`` (how a run ends,
    ``actors/core/run_endings.py``) and ``Queries`` (what it answers about its tasks,
    ``actors/core/queries.py``), ``Stopping`` (shutting down and abandoning,
    ``actors/core/stopping.py``), ``Operations`` (pause, resume, run now, reschedule,
    ``actors/core/operations.py``).
    """

    def __init__(
        self,
        *,
        workers: int,
        processes: int = 0,
        executors: Mapping[str, int] | None = None,
        history: int = 10_000,
        tasks: dict[TaskId, TaskRecord] | None = None,
        hung_grace: float = 5.0,
        parked: ParkedTasks | None = None,
    ) -> None:
        """Start empty and idle, keeping ``history`` finished tasks.

        ``hung_grace``: seconds a run that outlived its ``timeout`` still gets, once asked to
        stop, before its worker is abandoned.

        Workers ``0 .. workers-1`` run tasks on threads, the next ``processes`` numbers in
        worker processes (tasks with ``executor="process"``), then, per registered executor
        in ``executors`` (name -> most runs in flight), that many numbers: its slots.

        ``tasks`` is the (empty) dict to keep the live tasks in, for an owner that lets
        another thread read it (the facade cancels by id with one lookup); only the
        timetable ever writes it. ``parked``: the tasks a store's loader parked
        (``actors/runtime/durable.py``), which wait once their heap entries come (``adopt_parked``).
        """
        if workers < 1:
            raise ValueError(f"workers must be at least 1, got {workers!r}")
        if history < 0:
            raise ValueError(f"history must not be negative, got {history!r}")
        self._wanted: frozenset[EventKind] = frozenset()
        # One flag per kind: enum hashing is Python code, too slow for the per-task path.
        self._want_due = self._want_started = self._want_completed = False
        self._want_failed = self._want_cancelled = self._want_missed = self._want_jumped = False
        self._want_timed_out = False
        self.run_counts: RunCounts | None = None  # metrics' totals: None until asked (run_totals.py)
        self.closed = False
        self._tasks: dict[TaskId, TaskRecord] = (
            tasks if tasks is not None else {}
        )  # live, in scheduling order
        self._tasks_view: Mapping[TaskId, TaskRecord] = MappingProxyType(self._tasks)
        # Tasks of schedule_many wait parked, as plain data, until they need a record (they
        # are live, but not in _tasks); actors/core/parked.py says why.
        self._parked = parked if parked is not None else ParkedTasks()
        self._heap = DueHeap(self._tasks, self._parked.entries)  # pending tasks by due time
        self._dealer = Dealer(workers, processes, executors)  # due tasks, idle workers, batches
        self._plain_ready = self._dealer.plain_ready  # where a plain task due now goes (add)
        self._history: OrderedDict[TaskId, TaskRecord] = OrderedDict()  # finished records, oldest first
        self._history_limit = history
        self._effects = Effects()
        self._deferred = False  # inside batch(): hand out work once, at the end
        self.activity = 0  # counts releases, reports and endings: Scheduler.settle compares it
        self._hung_grace = hung_grace
        self.wall_offset = 0.0  # wall-clock time minus clock time: observe_wall_offset sets it
        # Nothing due after it is released (Settle(until=...)): while Scheduler.advance steps
        # through a window, the window's end; after a window a run overran (it moved a
        # FakeClock past it), the clock reading then. A Settle without until lifts it.
        self.hold: float | None = None
        # A shared store's node holds a durable task for one leased run only: after that run
        # (or a missed one) the task goes back to its store (detached), which says when it is
        # due next and which node runs it; it never waits for its next run here.
        self.durable_runs_once = False
        self._wall_tasks = WallTasks()  # the live tasks due at a wall-clock instant
        self._dependencies = Dependencies()  # who waits for whom (schedule_after)
        # What pause, run_now and reschedule keep per task (actors/core/operations.py says why).
        self._paused: dict[TaskId, float] = {}
        self._manual: dict[TaskId, tuple[float, float | None]] = {}
        self._respec: dict[TaskId, tuple[TaskSpec, float, float | None]] = {}
        self._queued_now: dict[TaskId, float] = {}
        self._dealer.manual = self._manual  # the dealer marks their runs manual
        # Tasks with catch_up="all" running their missed slots in turn: the last slot to run.
        self._catching_up: dict[TaskId, float] = {}
        # Tasks with overlap="allow" that have had a run: their runs going (instance_runs.py).
        self._instances: dict[TaskId, Instances] = {}

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
        self._want_missed = EventKind.MISSED in kinds
        self._want_jumped = EventKind.CLOCK_JUMPED in kinds
        self._want_timed_out = EventKind.TIMED_OUT in kinds

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

    def schedule(self, cmd: Schedule, *, now: float, task_id: TaskId | None = None) -> TaskRecord:
        """Add the task a ``Schedule`` describes (``task_id`` replaces a ``None`` id); return its record.

        Raises:
            DuplicateTaskError, SchedulerShutdownError: as ``add``.
        """
        task_id = cmd.task_id or task_id or ""
        task = TaskRecord.from_schedule(cmd, task_id, now=now, wall_offset=self.wall_offset)
        self.add(task, now=now)
        return task

    def add(self, task: TaskRecord, now: float) -> None:
        """Own a new task; hand it to a worker at once if it is due and one is idle.

        Raises:
            DuplicateTaskError: a live task has the same id (nothing changes).
            SchedulerShutdownError: the timetable was shut down.
        """
        if self.closed:
            raise SchedulerShutdownError(f"scheduler is shut down; task {task.task_id!r} rejected")
        if task.task_id in self._tasks or task.task_id in self._parked.entries:  # its dict: no call
            raise DuplicateTaskError(f"a live task already has id {task.task_id!r}")
        self._tasks[task.task_id] = task
        spec = task.spec
        if spec is PLAIN:  # most tasks: one test, not one per option
            due_at = task.due_at
            if (
                due_at <= now
                and task.state is PENDING
                and self.hold is None
                and not self._want_due
                and not self._heap.due_by(due_at)
            ):
                # _push_or_queue and Dealer.queue written out, for the task due now (the plain path)
                self.activity += 1
                task.state = READY  # PENDING -> READY, the move the table allows: a new task is PENDING
                self._plain_ready.append(task)
                if not self._deferred:
                    self._release(now)
                return
            self._push_or_queue(task, now)
        elif spec.after:
            self._wait_for(task, now)  # it may be due at once: what it waits for has completed
        else:
            if spec.on_wall:
                self._plan_on_wall(task)
            if spec.policies is DEFAULT_POLICIES:
                self._push_or_queue(task, now)
            else:
                self._push_slot(task)
        if task.due_at <= now and (task.state is PENDING or task.state is READY) and not self._deferred:
            self._release(now)

    def _push_or_queue(self, task: TaskRecord, now: float) -> None:
        """Put a new task in the heap, or straight in the ready FIFO when the heap would release it now.

        A task due now, with nothing in the heap due at or before it, goes where the heap's next
        release would put it, without the push and the pop; a ``hold`` or a ``DUE`` listener
        makes it take the heap (the release decides and announces there).
        """
        heap = self._heap
        if task.due_at > now or self.hold is not None or self._want_due or heap.due_by(task.due_at):
            heap.push(task, task.due_at)
        else:
            self.activity += 1
            self._dealer.queue(task)

    def add_caught_up(self, task: TaskRecord, *, now: float) -> None:
        """Own a task whose due time passed while nothing ran, as ``add``; its ``catch_up`` decides first.

        As a restart's load decides (``add_many``): every due time before ``now`` passed while
        the scheduler was down. A shared store's node adds so a leased run that was due before
        the whole fleet came back; if the policy moves its run to a later slot, the task goes
        back to its store at once (saved, detached), with its misses published.

        Raises:
            DuplicateTaskError, SchedulerShutdownError: as ``add`` (nothing changes).
        """
        if self.closed:
            raise SchedulerShutdownError(f"scheduler is shut down; task {task.task_id!r} rejected")
        if task.task_id in self._tasks or task.task_id in self._parked:
            raise DuplicateTaskError(f"a live task already has id {task.task_id!r}")
        moved = (
            task.spec.policies is not DEFAULT_POLICIES
            and not task.spec.after
            and task.due_at < now
            and self._caught_up(task, now, restart=True)
        )
        self.add(task, now=now)
        if moved and task.state is PENDING:
            self._heap.remove(task)
            self._wait_for_later_slot(task, now)

    def add_many(self, tasks: list[TaskRecord], *, now: float) -> None:
        """Own many new tasks at once (a store's load: a million must take seconds, not minutes).

        Raises:
            DuplicateTaskError: an id is live or repeated (nothing changes).
            SchedulerShutdownError: the timetable was shut down.
        """
        if self.closed:
            raise SchedulerShutdownError("scheduler is shut down; loaded tasks rejected")
        ids = {task.task_id for task in tasks}
        if (
            len(ids) != len(tasks)
            or not ids.isdisjoint(self._tasks)
            or not ids.isdisjoint(self._parked.entries)
        ):
            raise DuplicateTaskError("loaded tasks repeat an id, or have the id of a live task")
        live = self._tasks
        policed: list[TaskRecord] = []  # with a catch_up policy of their own
        waiting: list[TaskRecord] = []  # schedule_after's, stored waiting (actors/runtime/durable_after.py)
        for task in tasks:
            live[task.task_id] = task
            if task.spec.after:
                waiting.append(task)
            elif task.spec.on_wall:
                self._plan_on_wall(task)
            if task.spec.policies is not DEFAULT_POLICIES:
                policed.append(task)
        for task in policed:  # due times that passed while the scheduler was down: their catch_up
            if task.due_at < now:
                self._caught_up(task, now, restart=True)
        if waiting:
            tasks = [task for task in tasks if not task.spec.after]
        self._heap.push_many(tasks, [task.due_at for task in tasks])  # type: ignore[arg-type]
        for task in waiting:  # in load order: what a task waits for is in the table already
            if task.task_id in live:  # (not ended by a dependency that was blocked just before)
                self._wait_for(task, now)
        self._release(now)

    def park(self, parcel: Parcel, now: float) -> None:
        """Own the one-time tasks of a ``schedule_many`` parcel, parked until they are needed.

        Their ids are new (minted). A task already due is handed to a worker at once, as ``add``.

        Raises:
            SchedulerShutdownError: the timetable was shut down (nothing changes).
        """
        if self.closed:
            raise SchedulerShutdownError(f"scheduler is shut down; {len(parcel.task_ids)} tasks rejected")
        seqs = self._heap.push_parked(parcel.task_ids, parcel.due_at)
        self._parked.park(parcel, seqs)
        if parcel.due_at and min(parcel.due_at) <= now and not self._deferred:
            self._release(now)

    def adopt_parked(self, due: list[tuple[float, int, str]], *, now: float) -> None:
        """Make the tasks parked by a store's loader wait: ``due`` are their heap entries (at start, first).

        ``due`` holds ``(due_at, seq, task_id)`` in heap order, with seqs counting from 0 (the list
        becomes the heap), one per task of the ``parked`` this timetable was made with.

        Raises:
            SchedulerShutdownError: the timetable was shut down (nothing changes).
        """
        if self.closed:
            raise SchedulerShutdownError("scheduler is shut down; loaded tasks rejected")
        self._heap.adopt(due)
        self._release(now)

    def replace(self, live: TaskRecord, new: TaskRecord, *, now: float) -> None:
        """Give the live task ``live`` the definition of ``new``, keeping its counters and token.

        The definition is the function, arguments, name, trigger and options; the counters,
        token and handles stay (``if_exists="replace"``).

        A task waiting for its due time waits for the new one; a run already handed to a worker
        goes on as it was, and the new trigger decides the run after it. A replacement adds no
        run the new trigger does not call for: an interval task that has run here counts the new
        interval from the end of its last run, so re-declaring it at every start with another
        interval does not run it again right after the (catch-up) run it just made.
        """
        if live.state is PENDING:
            _put_off(new, _replaced_due(live, new))
        live.fn, live.args, live.kwargs, live.name, live.spec = (
            new.fn,
            new.args,
            new.kwargs,
            new.name,
            new.spec,
        )
        if new.store_seq is not None:
            live.store_seq = new.store_seq
        self._wall_tasks.track(live)
        self.activity += 1
        if live.state is PENDING:
            self._heap.remove(live)
            live.due_at, live.due_wall = new.due_at, new.due_wall
            if live.spec.on_wall:
                self._plan_on_wall(live)
            self._heap.push(live, live.due_at)
            if live.due_at <= now:
                self._release(now)
        if live.store_seq is not None:
            self._effects.saves.append(live)

    def refuse(self, task: TaskRecord, *, now: float) -> None:
        """End a task that was never added (refused): it finishes ``CANCELLED``, so no one waits for ever.

        Tasks already waiting for it (``schedule_after``) end ``CANCELLED`` too.
        """
        task.revoke()
        move_to(task, CANCELLED)
        if self._dependencies.waiters:
            self._pass_on(task, CANCELLED, now)
        task.retire()
        self._effects.finished.append((task, None))

    def cancel(self, task_id: TaskId, *, now: float, interrupt: bool = False) -> bool:
        """Cancel a task; return whether that prevented a run, or (``interrupt``) signalled one.

        A task whose run has not started never runs. A running recurring task finishes its
        run and is not rescheduled (``True``); a running one-time task just finishes
        (``False``). So does a task a caller has already cancelled through its token, whose
        ``Cancelled`` report is still on its way (``False``). With ``interrupt`` a run in
        progress is also asked to stop (``True`` if it was not asked already): a one-time
        task so interrupted ends ``CANCELLED`` however its run ends.
        """
        task = self.record(task_id)
        if task is None:
            return False
        signalled = interrupt and task.interrupt()
        if interrupt and self._instances:  # overlap="allow": its runs going are asked to stop
            signalled = self._interrupt_instances(task) or signalled
        if task.state is CANCELLING:
            return signalled
        before = task.revoke()
        if before is not FREE and before is not RUNNING and before is not RAN:
            return signalled  # a one-time run started, the task is ending, or a caller cancelled it first
        self._end_cancelled(task, now, mid_run=before is not FREE)
        return True

    def cancelled(self, report: Cancelled, now: float) -> None:
        """Record that a caller cancelled a task by revoking its token (``Cancelled`` report)."""
        task = report.task
        if (
            isinstance(task, TaskRecord)
            and self._tasks.get(task.task_id) is task
            and task.state is not CANCELLING
        ):
            if self._deferred:
                self._queue_due(self._due_by(now))  # what fell due before this cancel is released first
            self._end_cancelled(task, now, mid_run=report.mid_run)

    def tick(self, *, now: float) -> None:
        """Move every task due at ``now`` to the ready FIFO and hand out as much as workers allow."""
        self._release(now)

    def observe_wall_offset(self, offset: float, *, now: float) -> None:
        """Take the wall-clock time minus the clock time, read now; re-plan wall-clock tasks after a jump.

        After a jump (more than ``JUMP_THRESHOLD`` seconds either way since the last plan)
        every wall-clock task waiting for its time is due at its wall-clock instant on the
        clock as it now stands: after a jump forward what became due runs (once, late, under
        its ``misfire_grace``); after a jump back nothing runs early, and a slot that ran
        never comes back (cron counts from the last slot). ``CLOCK_JUMPED`` is published.
        """
        self.wall_offset = offset
        jump = self._wall_tasks.observe(offset)
        if jump is None:
            return
        self.activity += 1
        heap = self._heap
        for task in self._wall_tasks:
            if task.due_wall is None or task.state is HANDED or task.state is CANCELLING:
                continue  # a run already handed out keeps the due time it was handed with
            task.due_at = task.due_wall - offset
            if task.heap_seq is not None:
                heap.remove(task)
                heap.push(task, task.due_at)
        if self._want_jumped:
            event = TaskEvent(kind=EventKind.CLOCK_JUMPED, task_id="", name="", at=now, jump=jump)
            self._effects.events.append(event)
        self._release(now)

    @property
    def watched_wall_offset(self) -> float | None:
        """The wall-clock offset tasks were planned with, while any wall-clock task is live; else ``None``.

        The owner's timer compares the clocks against it, to notice a jump while it sleeps.
        """
        return self._wall_tasks.watched_offset

    def add_worker(self, worker: int, *, now: float) -> None:
        """Make ``worker`` (new, or a replacement) available for tasks."""
        self._dealer.add(worker)
        self._release(now)

    # -- queries ----------------------------------------------------------------------------

    def take_effects(self) -> Effects:
        """Return what should happen because of the calls since the last ``take_effects``."""
        effects = self._effects
        if not effects:
            return Effects()  # never hand out the live object: later effects would show in it
        self._effects = Effects()
        return effects

    # -- internals --------------------------------------------------------------------------

    def _release(self, now: float) -> None:
        """Move the tasks due at ``now`` to the ready FIFO, then deal to the idle workers.

        A run that would start later than its task's ``misfire_grace`` is not dealt: it is
        missed (``_missed``); a recurring task's next slot may be due at once, hence the loop.
        """
        if self._deferred:
            return
        counts = self.run_counts
        if counts is not None and counts.pending:  # the runs this message ended: metrics count them
            counts.fold()
        due_by = self._due_by(now)
        missed: list[TaskRecord] = []
        stranded: list[TaskRecord] = []
        while True:
            self._queue_due(due_by)
            self._dealer.deal(
                self._effects.batches, announce=self._want_started, now=now, missed=missed, stranded=stranded
            )
            if not missed and not stranded:
                return
            for task in missed:
                self._missed(task, now)
            for task in stranded:  # loaded from a store by a scheduler without worker processes
                self._fail_run(task, _no_processes(task), "", now)
            missed.clear()
            stranded.clear()

    def _due_by(self, now: float) -> float:
        """The latest due time released at ``now``: ``now``, or the ``hold`` if that is earlier."""
        hold = self.hold
        return now if hold is None or hold > now else hold

    def _queue_due(self, now: float) -> None:
        """Move the tasks due at ``now`` from the heap to the ready FIFO.

        Taken from the heap a list at a time (``DueHeap.take_due``), and queued a list at a
        time (``Dealer.queue_all``): the release of 100k tasks due at once pays for a few calls
        per list, not per task. What the loop pushes back due by ``now`` (a deadline's end) is
        taken by the next turn.
        """
        heap = self._heap
        due = heap.take_due(now)
        while due:
            want_due = self._want_due
            queued: list[TaskRecord] = []
            for item in due:
                task: TaskRecord | None = item
                if type(item) is str:  # a parked task: it gets its record now
                    task = self._unpark(item, waiting=False)
                    assert task is not None  # the heap yields only live entries
                assert task is not None
                if task.state is HANDED or task.state is CANCELLING:
                    self._overdue(task, now)  # not a due time: a running task's deadline
                    continue
                policies = task.spec.policies
                # (a run of an overlap="allow" task due here is its Retry's next attempt: it is queued)
                if policies is not DEFAULT_POLICIES and not (policies.allows and type(task) is RunInstance):
                    if self._caught_up(task, now, restart=False):
                        self._wait_for_later_slot(task, now)  # its catch_up skipped what passed
                        continue
                    if policies.allows:  # overlap="allow": each slot's run is a run instance of its own
                        if queued:  # FIFO at the same instant: the tasks before it go first
                            self.activity += len(queued)
                            self._dealer.queue_all(queued)
                            queued = []
                        self._due_allowed(task, now)
                        continue
                queued.append(task)
                if want_due:
                    self._emit(EventKind.DUE, task, now, task.run_count + 1)
            if queued:
                self.activity += len(queued)
                self._dealer.queue_all(queued)
            due = heap.take_due(now)
        # (a task due too long ago for its misfire_grace is caught by the dealer, as it deals)

    def _wait_for_later_slot(self, task: TaskRecord, now: float) -> None:
        """A pending task's ``catch_up`` moved its next run to a later slot (out of the heap): it waits.

        Here in the heap; a shared store's leased task in its store (saved and detached, as after
        a missed run: ``durable_runs_once``), so no lease is held while it waits; but for an
        ``overlap="allow"`` task whose runs go on, which waits here under its lease.
        """
        if self.durable_runs_once and task.store_seq is not None and not self._runs_going(task):
            self._effects.saves.append(task)
            if not self._detach(task):
                self._finish(task, CANCELLED, now, None)  # a cancel won its token meanwhile
            return
        self._push_slot(task)

    def _end_cancelled(self, task: TaskRecord, now: float, *, mid_run: bool) -> None:
        """End a task whose cancel has won, or mark it to end when its worker reports.

        ``mid_run``: a run may be in progress. It is, if a worker has claimed the run: the
        task then ends when the run reports. Without ``mid_run`` a leased run cannot start
        (the token is revoked): the task ends now, and the worker's ``Skipped`` report only
        frees the worker.
        """
        if task.state is HANDED and not self._dealer.take_back(task) and mid_run:
            move_to(task, CANCELLING)  # its worker runs it, or skips it, then reports
            return
        if self._instances and self._cancel_instances(task):
            return  # overlap="allow": its runs going end it, the last of them (instance_runs.py)
        if task.heap_seq is not None:
            self._heap.remove(task)
        self._finish(task, CANCELLED, now, None)
        self._release(now)  # a take-back may have left a worker idle

    def _unpark(self, task_id: TaskId, *, waiting: bool) -> TaskRecord | None:
        """Give a parked task its record, in the table from now on; ``None`` if it is not parked."""
        task = self._parked.take(task_id, waiting=waiting)
        if task is not None:
            self._tasks[task_id] = task
        return task

    def _plan_on_wall(self, task: TaskRecord) -> None:
        """Track a wall-clock task, and place its due time on the clock as the core sees it now.

        Its creator placed it too, on another thread, a moment ago: the wall clock may have
        jumped since, and only the offset this core plans with is re-planned after a jump.
        """
        self._wall_tasks.track(task)
        if task.due_wall is not None:
            task.due_at = task.due_wall - self.wall_offset

    def _wait_for(self, task: TaskRecord, now: float) -> None:
        """Make a new task of ``schedule_after`` wait for its dependencies (it is in the table already)."""
        task.state = WAITING  # where such a task starts, instead of PENDING
        verdict = self._dependencies.wait(task)
        if verdict is True:
            self._release_dependent(task, now)
        elif verdict is not False:
            self._end_blocked(verdict, now)

    def _release_dependent(self, task: TaskRecord, now: float) -> None:
        """Every task a waiting task depends on has completed: it is due ``delay`` from now."""
        move_to(task, PENDING)
        task.due_at = now + task.spec.delay
        if task.store_seq is not None:  # a durable one: its store learns when it is due
            task.due_wall = task.due_at + self.wall_offset
            self._effects.saves.append(task)
        self._rest(task)  # in the heap, or PAUSED if it was paused while it waited

    def _end_blocked(self, blocked: Blocked, at: float) -> None:
        """A task a waiting task depends on did not complete: the waiting one ends ``CANCELLED``."""
        task, dependency, state = blocked
        error = DependencyFailedError(
            f"task {task.task_id!r} was cancelled: task {dependency.task_id!r}, which it waited for, "
            f"ended {state.name} instead of COMPLETED",
            dependency.task_id,
        )
        failures = task.failures = task.failures or Failures()
        failures.last_error = error
        if task.revoke() is FREE:  # else a caller's cancel won: its report ends the task the same way
            self._finish(task, CANCELLED, at, None)

    def _pass_on(self, task: TaskRecord, state: State, at: float) -> None:
        """Tell the tasks waiting for ``task`` how it ended: they run, or end too."""
        released, blocked = self._dependencies.ended(task, state)
        for waiter in released:
            self._release_dependent(waiter, at)
        for each in blocked:
            self._end_blocked(each, at)

    def _finish(self, task: TaskRecord, state: State, at: float, outcome: object) -> None:
        if state is COMPLETED and task.state is HANDED:
            task.state = COMPLETED  # the move of nearly every end, which the table allows
        else:
            move_to(task, state)
        del self._tasks[task.task_id]
        if self._catching_up:
            self._catching_up.pop(task.task_id, None)
        if task.spec.on_wall:
            self._wall_tasks.forget(task)
        self.activity += 1
        if self._paused or self._manual or self._respec or self._queued_now:
            self._forget_operated(task.task_id)
        if task.store_seq is not None:
            self._effects.saves.append(task)
        if state is CANCELLED and self._want_cancelled:
            self._emit(EventKind.CANCELLED, task, at, None, final=True)
        if self._dependencies.waiters:
            self._pass_on(task, state, at)
        task.retire()  # frozen from here on: handles and the history may share it
        if self._history_limit:
            history = self._history
            history.pop(task.task_id, None)
            history[task.task_id] = task
            if len(history) > self._history_limit:
                history.popitem(last=False)
        self._effects.finished.append((task, outcome))


def _no_processes(task: TaskRecord) -> NoWorkerProcessesError:
    """The error a run fails with when it needs a worker process (or an executor) the scheduler lacks."""
    executor = task.spec.executor
    if executor != PROCESSES:
        return NoWorkerProcessesError(
            f"task {task.task_id!r} runs on executor {executor!r}, but this scheduler has no such "
            f"executor: register it with Scheduler(executors={{{executor!r}: ...}}) to run it"
        )
    return NoWorkerProcessesError(
        f'task {task.task_id!r} runs in a worker process (executor="process"), but this scheduler '
        "has no process pool: start it with Scheduler(processes=N) to run it"
    )


__all__ = ["Timetable"]


def _replaced_due(live: TaskRecord, new: TaskRecord) -> float:
    """When a pending task replaced by ``new`` is due: as ``new`` says, or later (``replace``).

    Never sooner than the new interval after the end of the task's last run here, for an
    interval task (a task loaded from a store that has not run yet is due as ``new`` says: its
    due time here may be a placeholder, as the command line's hold-back makes it).
    """
    since, trigger = live.counted_from, new.spec.trigger
    if since is None or not isinstance(trigger, FixedRate | FixedDelay):
        return new.due_at
    every = trigger.interval if isinstance(trigger, FixedRate) else trigger.delay
    return max(new.due_at, since + every)


def _put_off(task: TaskRecord, due_at: float) -> None:
    """Make a new (not yet owned) record first due at ``due_at``, later than it was.

    A fixed-rate grid starts there (its slots are ``due_at + k * interval``), and a durable
    task's wall-clock due time, which its store keeps, moves with it.
    """
    later = due_at - task.due_at
    if later <= 0:
        return
    task.due_at = due_at
    if task.due_wall is not None:
        task.due_wall += later
    trigger, spec = task.spec.trigger, task.spec
    if isinstance(trigger, FixedRate):
        task.spec = spec.replace(trigger=dataclasses.replace(trigger, first_at=due_at))
