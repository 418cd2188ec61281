"""The scheduler actor: a thin shell that feeds the ``Timetable`` and carries out its effects.

It owns the timetable, the timer thread, the worker pool, the event bus and the
subscriptions, and changes them only while handling a message on its own thread, one message
at a time. That mailbox discipline does what a lock around the heap and the task table does in
a classic scheduler: no other thread ever touches that state, so it needs no lock.

Memory, a plain store (SQLite) and a shared store (PostgreSQL) go through one code path: what
differs is the actor's ``Home`` (``actors/runtime/home.py``), whose every method runs here, on
the scheduler's thread (its ``start_check`` alone runs on the workers').
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from typing import Any, Final

import pykka

from actors.core.dealer import INLINE_WORKER
from actors.core.effects import Effects, PlainRun
from actors.core.parked import Parcel, ParkedTasks
from actors.core.run_totals import RunCounts
from actors.core.subscriptions import Subscriptions
from actors.core.task_record import TaskRecord
from actors.core.timetable import Timetable
from actors.errors import DuplicateTaskError, SchedulerInternalError, SchedulerShutdownError, WorkerLostError
from actors.process.slot import ProcessSlot
from actors.runtime.base import LibraryActor, stop_quietly, tell_quietly
from actors.runtime.event_bus import EventBus
from actors.runtime.executor_protocol import Executor
from actors.runtime.executor_worker import ExecutorWorkerActor, close_executors
from actors.runtime.home import Home, MemoryHome
from actors.runtime.limits import MAX_PROCESSES, MAX_WORKERS, check_count
from actors.runtime.minting import IdMint
from actors.runtime.operations import OPERATIONS, operate_by_token
from actors.runtime.process_worker import ProcessWorkerActor
from actors.runtime.timer import TimerThread
from actors.runtime.worker import Report, WorkerActor, run_batch
from actors.store.protocol import TaskDefinition
from actors.sync.clock import Clock
from actors.sync.outbox import Outbox
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.token import Token
from messages import (
    AddTask,
    BusExited,
    Cancel,
    Cancelled,
    CancelledInStore,
    Claimed,
    Completed,
    Drain,
    Failed,
    FindTask,
    Flush,
    OutcomesSaved,
    Pause,
    Paused,
    Publish,
    QueryHistory,
    QueryNextDue,
    QueryRecentRuns,
    QueryRunTotals,
    QueryStats,
    QueryTask,
    QueryTasks,
    QueryTaskTable,
    Reschedule,
    Resume,
    Resumed,
    RetrySaves,
    RunBatch,
    RunNow,
    RunNowClaimed,
    RunTask,
    Schedule,
    SchedulerStats,
    Settle,
    Shutdown,
    Skipped,
    Started,
    Subscribe,
    TaskEvent,
    Tick,
    Unsubscribe,
    Waiter,
    WorkerExited,
)

logger = logging.getLogger(__name__)

_ANSWERED: Final = (
    AddTask,
    Cancel,
    FindTask,
    QueryHistory,
    QueryNextDue,
    QueryRecentRuns,
    QueryRunTotals,
    QueryStats,
    QueryTask,
    QueryTasks,
    QueryTaskTable,
    Schedule,
    *OPERATIONS,
)
"""The messages whose reply someone reads: a handler that fails replies a ``SchedulerInternalError``."""

OutboxItem = TaskRecord | Parcel | Cancelled | Paused | Resumed | RunNowClaimed | Report
"""What reaches the scheduler through its outbox, in the order it was put: new tasks (minted
ids) and handles' cancels from callers, and the workers' reports. One outbox, so that the
order between them is the order they happened in (a task that cancels another while it runs
puts its ``Cancelled`` after its worker's ``Started``)."""

STOPPED_BY_FORCE: Final = "the scheduler was stopped before this run finished"


class SchedulerActor(LibraryActor):
    """Owns the heap and the task table; driven only by messages.

    Replies (to ``ask``): ``Schedule`` -> ``True``, or the minted id if it had none, or
    ``False`` if refused (the id is live, or the scheduler is shutting down; logged);
    ``Cancel`` -> ``bool``; ``QueryTask`` -> ``TaskInfo | None``; ``QueryTasks`` ->
    ``list[TaskInfo]``; ``QueryNextDue`` -> ``float | None``; ``QueryStats`` ->
    ``SchedulerStats``; ``QueryHistory`` -> ``list[RunRecord] | None``; ``QueryRunTotals`` ->
    ``RunTotals``; ``QueryTaskTable`` -> ``TaskTable``; ``QueryRecentRuns`` ->
    ``tuple[RecentRuns, ...]``. It never raises out
    of a handler, so a bad ``tell`` cannot kill it. It
    only ever *tells* the workers and the bus, so no actor can deadlock on it. It starts the
    workers, the timer, (unless given one) the event bus and its home's threads in
    ``on_start``, on its own thread, and replaces any of them that dies but the home's.
    """

    role = Role.SCHEDULER

    def __init__(
        self,
        *,
        clock: Clock,
        bus: pykka.ActorRef[Any] | None = None,
        workers: int = 4,
        processes: int = 0,
        executors: Mapping[str, Executor] | None = None,
        history: int = 10_000,
        timer: bool = True,
        outbox: Outbox[OutboxItem] | None = None,
        threads: ThreadRegistry | None = None,
        mint: IdMint | None = None,
        started: Future[None] | None = None,
        stopped: Future[None] | None = None,
        live: dict[str, TaskRecord] | None = None,
        home: Home | None = None,
        loaded: list[TaskRecord] | None = None,
        parked: ParkedTasks | None = None,
        paused: frozenset[str] = frozenset(),
        due: list[tuple[float, int, str]] | None = None,
        hung_grace: float = 5.0,
        subscriptions: list[Subscribe] | None = None,
    ) -> None:
        """Create the actor (runs on the caller's thread; workers, bus and timer start in ``on_start``).

        Args:
            clock: Where time is read.
            bus: The ``EventBus`` that delivers events; by default the actor starts its own.
            workers: Size of the worker pool (1 to ``MAX_WORKERS``).
            processes: How many worker processes run ``executor="process"`` tasks (0 to
                ``MAX_PROCESSES``); each child process starts with its first run.
            executors: The registered executors by name (``actors/runtime/executor_protocol.py``):
                each gets ``max_in_flight`` slots, the worker numbers after the processes'.
            history: How many finished tasks' ``TaskInfo`` to keep.
            timer: Start a timer thread. Without one, only ``Tick`` messages (or ``Settle``)
                make due tasks run: handy in tests that drive the actor by hand.
            outbox: Where the ``Scheduler`` facade puts the tasks it builds and its handles'
                ``Cancelled`` reports, and the workers their reports; whoever puts the first
                item since the last drain tells ``Drain()``.
            threads: Where every thread the scheduler starts is recorded.
            mint: Where minted task ids come from (shared with the facade).
            started: Set once ``on_start`` has started everything (or to the error that stopped it).
            stopped: Set when the actor has stopped, however it stopped.
            live: The (empty) dict the timetable keeps its live tasks in; the facade reads it.
            home: Where durable tasks live (``actors/runtime/home.py``): memory (the default),
                a plain store (``StoreHome``) or a node of a shared store (``SharedNode``). This
                actor saves their changes and runs' outcomes there, cancels and adds through
                it, and closes it when it stops.
            loaded: The live tasks read from the store, to own from the start.
            parked: The one-time tasks read from the store and kept parked (``actors/core/parked.py``).
            paused: The ids of the tasks read from the store that are paused (they stay paused).
            due: The heap entries of ``parked`` (``Timetable.adopt_parked``).
            hung_grace: Seconds a run past its ``timeout`` gets, once asked to stop, before its
                worker is abandoned (and replaced).
            subscriptions: Listeners subscribed from the start: their bus has them before the
                loaded tasks are taken, so they see those tasks' first events too.
        """
        super().__init__(threads)
        check_count("workers", workers, 1, MAX_WORKERS)
        check_count("processes", processes, 0, MAX_PROCESSES)
        check_count("history", history, 0)
        self._clock = clock
        self._bus = bus
        self._own_bus = bus is None
        self._core = Timetable(
            workers=workers,
            processes=processes,
            executors={name: executor.max_in_flight for name, executor in (executors or {}).items()},
            history=history,
            tasks=live,
            hung_grace=hung_grace,
            parked=parked,
        )
        self._pool_size = workers
        # One slot per process worker, made here: killing a child must not wait for its worker.
        self._slots = [ProcessSlot(f"process-worker-{index}") for index in range(processes)]
        # Worker numbers past the processes': each executor's slots, in order (one per run in flight).
        self._executors = dict(executors or {})
        self._executor_slots = [
            (name, executor)
            for name, executor in self._executors.items()
            for _ in range(executor.max_in_flight)
        ]
        self._workers: list[pykka.ActorRef[Any]] = []
        self._timer = TimerThread(clock, self.actor_ref, threads=threads) if timer else None
        self._outbox: Outbox[OutboxItem] = outbox if outbox is not None else Outbox()
        self._mint = mint or IdMint()
        self._started = started
        self._stopped = stopped
        self._home: Home = home if home is not None else MemoryHome()
        self._loaded = loaded or []
        self._paused = paused
        self._due = due or []
        # A shared store's leased task goes back to the store after its run.
        self._core.durable_runs_once = self._home.durable_runs_once
        self._armed: float | None = None  # the deadline the timer was last given
        self._watched: float | None = None  # the wall-clock offset it was last told to watch
        self._subscriptions = Subscriptions()
        for subscription in subscriptions or ():
            self._subscriptions.add(subscription)
        self._core.wanted = self._subscriptions.wanted
        self._settle_waiters: list[Waiter] = []
        self._drained: list[Waiter] = []  # woken when shut down and nothing runs any more
        self._stopping = False
        self._ticks = 0
        self._replaced = 0
        self._abandoned = 0
        core = self._core
        # What takes each kind of outbox item: the core's own methods where they fit (no
        # wrapper: a report and a new task each cost one call here, and there are two per task).
        self._takers: dict[type, Callable[[Any, float], object]] = {
            Completed: core.completed,
            tuple: core.completed_plain,  # a thread worker's PlainDone (actors/core/effects.py)
            TaskRecord: core.add,  # refused (a duplicate id, shut down): _refused, by the caller
            Parcel: core.park,
            Failed: core.failed,
            Skipped: core.skipped,
            Started: lambda report, now: core.started(report),
            Cancelled: core.cancelled,
            Paused: core.paused,  # decisions callers made on tokens (actors/api/operations.py)
            Resumed: core.resumed,
            RunNowClaimed: core.run_now_claimed,
        }

    # -- lifecycle (scheduler thread) -------------------------------------------------------

    def on_start(self) -> None:
        """Start the event bus, the worker pool and the timer (scheduler thread).

        If a thread cannot start (the system refuses one), everything started so far is
        stopped and ``started`` gets the error, so the ``Scheduler`` can raise it.
        """
        try:
            # The offset tasks are planned against, read before any call can plan one: a jump
            # before the first message is then a jump, not the first reading.
            self._observe_wall_offset()
            if self._bus is None:
                self._bus = self._start_bus()
            for subscription in self._subscriptions:  # before any task: see them all
                self._tell_bus(subscription)
            for index in range(
                self._pool_size + len(self._slots) + len(self._executor_slots)
            ):  # one by one: on_stop stops those
                self._workers.append(self._start_worker(index))  # started so far if one fails
            if self._timer is not None:
                self._timer.start()
            self._home.start(self.actor_ref, self._threads)
        except BaseException as error:
            logger.error("scheduler could not start its threads: %s", error)
            if self._started is not None:
                self._started.set_exception(error)
            self.stop()
            return
        if (self._loaded or self._due) and not self._take_loaded():
            return
        if self._started is not None:
            self._started.set_result(None)

    def _take_loaded(self) -> bool:
        """Own the tasks read from the store (on start); whether that worked (else the actor stops)."""
        try:
            self._observe_wall_offset()
            now = self._clock.now()
            with self._core.batch(now=now):  # what is due already is handed out once, at the end
                if self._due:
                    self._core.adopt_parked(self._due, now=now)  # before any other push
                if self._loaded:
                    self._core.add_many(self._loaded, now=now)
                if self._paused:
                    self._core.restore_paused(self._paused, now=now)  # before anything is released
        except Exception as error:
            logger.exception("scheduler could not take the tasks loaded from its store")
            if self._started is not None:
                self._started.set_exception(error)
            self.stop()
            return False
        self._loaded, self._due = [], []
        self._carry_out_all()
        self._after_message()
        return True

    def on_stop(self) -> None:
        """End every live task, then stop the timer, the workers and the bus (scheduler thread).

        On the normal path nothing is live any more (shutdown waited for it). On a forced
        stop (a shutdown that ran out of time, ``ActorRegistry.stop_all()``) every task still
        live ends here, so that no handle waits for ever: pending ones ``CANCELLED``, a run
        still going ``FAILED`` with ``SchedulerShutdownError``. A worker still running a task
        stops once the task returns; the bus first delivers every event already published.
        """
        try:
            if self._core.abandon(SchedulerShutdownError(STOPPED_BY_FORCE), now=self._clock.now()):
                for slot in self._slots:  # a run abandoned in a child process must not go on
                    slot.kill()
            self._carry_out_all()
        except Exception:
            logger.exception("scheduler failed to end its live tasks while stopping")
        if self._timer is not None:
            self._timer.stop(timeout=1.0)
        for worker in self._workers:
            stop_quietly(worker)
        close_executors(self._executors)
        if self._bus is not None:
            stop_quietly(self._bus)
        for waiter in self._settle_waiters:
            _wake(waiter, None)
        self._settle_waiters = []
        self._home.close()  # its threads, then its store
        if self._stopped is not None and not self._stopped.done():
            self._stopped.set_result(None)

    def on_failure(self, *_: object) -> None:
        """Never expected (handlers catch everything); clean up as ``on_stop`` would."""
        self.on_stop()

    # -- messages (scheduler thread) --------------------------------------------------------

    def on_receive(self, message: Any) -> object:
        """Handle one message, carry out what the timetable decided, re-arm the timer."""
        try:
            self._observe_wall_offset()
            reply = self._handle(message)
            self._carry_out_all()
            self._after_message()
        except Exception as error:
            logger.exception("scheduler failed to handle %r; state kept, message dropped", message)
            if isinstance(message, _ANSWERED):  # whoever asks must not take None for an answer
                # The text only, not the error: its traceback would keep the handler's frames alive.
                return SchedulerInternalError(
                    f"the scheduler failed to handle {type(message).__name__} "
                    f"({type(error).__name__}: {error}); it was logged, and the scheduler carries on"
                )
            return None
        return reply

    def _handle(self, message: Any) -> object:  # noqa: PLR0911, PLR0912, PLR0915 - one case per message type
        core = self._core
        match message:
            case Drain():
                self._drain(self._clock.now())
            case Started() | Completed() | Failed() | Skipped() | Cancelled():
                self._take(message, self._clock.now())
            case Tick():
                self._ticks += 1
                self._armed = self._watched = None  # the timer disarms itself when it fires
                core.tick(now=self._clock.now())
            case Schedule():
                return self._schedule(message)
            case AddTask(task, if_exists, definition):
                if not isinstance(task, TaskRecord):
                    return None
                return self._add_by_id(task, if_exists, definition, self._clock.now())
            case FindTask(task_id, finished):
                return core.record(task_id, finished=finished)
            case Cancel(task_id, interrupt):
                return self._cancel(task_id, interrupt)
            case Pause() | Resume() | RunNow() | Reschedule():
                now = self._clock.now()
                self._drain(now)  # what callers decided on tokens before this message, first
                by_token = operate_by_token(core, message, self._outbox.put)  # a memory task's
                if by_token is not None:
                    self._drain(now)  # its report: the bookkeeping is done when the reply goes
                    return by_token
                reply, events = self._home.operate(message, core, now)  # home.py
                self._publish(events)
                return reply
            case QueryTask(task_id):
                return core.find(task_id, wall_offset=self._wall_offset())
            case QueryTasks(offset, limit):
                return core.infos(wall_offset=self._wall_offset(), offset=offset, limit=limit)
            case QueryNextDue():
                return core.next_due()
            case QueryHistory(task_id, limit):  # Scheduler.history (actors/api/history.py)
                return core.runs(task_id, limit, wall_offset=self._wall_offset() or 0.0)
            case QueryStats():
                return self._stats()
            case QueryRunTotals(max_tasks):  # actors.metrics (a scrape): counting starts at the first
                if core.run_counts is None:
                    core.run_counts = RunCounts(max_tasks)
                return core.run_counts.snapshot(self._home.store_totals(), self._stats())  # home: its store's
            case QueryTaskTable(offset, limit):  # the status page's refresh: one question
                return core.table(wall_offset=self._wall_offset(), offset=offset, limit=limit)
            case QueryRecentRuns(task_ids):
                return core.recent(task_ids)
            case Settle(waiter, until):
                core.hold = until
                core.tick(now=self._clock.now())
                self._settle_waiters.append(waiter)
            case Subscribe() | Unsubscribe():
                self._change_subscriptions(message)
            case Shutdown(drained):
                self._drained.append(drained)
                core.shut_down(now=self._clock.now())
                self._home.shut_down()  # a shared node claims no more, gives back what has not started
            case WorkerExited(worker, reason):
                self._on_worker_exited(worker, reason)
            case BusExited(reason):
                self._replace_bus(reason)
            case Claimed() | CancelledInStore() | OutcomesSaved() | RetrySaves():  # a shared node's own
                self._publish(self._home.on_message(message, core, self._clock.now()))
            case _:
                logger.warning("scheduler ignored an unexpected message: %r", message)
        return None

    def _drain(self, now: float) -> None:
        """Take everything in the outbox, in order (a ``Drain``; before and after an operation)."""
        with self._core.batch(now=now):
            takers = self._takers  # self._take, written out: this loop is every task's, twice
            for item in self._outbox.drain():
                try:
                    takers[type(item)](item, now)
                except (DuplicateTaskError, SchedulerShutdownError) as error:
                    self._refused(item, error, now)

    def _schedule(self, command: Schedule) -> bool | str:
        """Add the task of a ``Schedule`` (a hand-sent one); reply ``True``, its minted id, or ``False``."""
        task_id = command.task_id if command.task_id is not None else self._mint.memory()
        now = self._clock.now()
        try:
            task = TaskRecord.from_schedule(command, task_id, now=now, wall_offset=self._core.wall_offset)
        except ValueError as error:  # a cron expression or zone that does not parse, or never fires
            logger.warning("task %r refused: %s", task_id, error)
            return False
        if not self._add(task, now):
            return False
        return True if command.task_id is not None else task_id

    def _cancel(self, task_id: str, interrupt: bool) -> bool | Exception:
        """Cancel a task (a ``Cancel`` message); a durable one's cancel is committed before the reply.

        Replies the store's error if the commit failed (the task is cancelled here all the same).
        """
        task = self._core.record(task_id)  # a parked task is unparked: it is being cancelled
        cancelled, events = self._home.cancel(
            task_id, task, self._core, self._clock.now(), interrupt=interrupt
        )
        self._publish(events)
        return cancelled

    def _add_by_id(self, task: TaskRecord, if_exists: str, definition: object, now: float) -> object:
        """Add a task with a caller-chosen id, as ``if_exists`` says; reply as ``AddTask`` documents."""
        core = self._core
        live = core.record(task.task_id)
        try:
            if live is not None and if_exists == "keep":
                return live
            if live is not None and if_exists == "replace":
                if isinstance(definition, TaskDefinition):
                    self._home.add(task, definition, "replace")
                core.replace(live, task, now=now)
                return live
            if live is not None or core.closed:
                return None
            if isinstance(definition, TaskDefinition):
                self._home.add(task, definition, "error")
        except Exception as error:  # the store's error goes back to the caller, who raises it
            return error
        return task if self._add(task, now) else None

    def _add(self, task: TaskRecord, now: float) -> bool:
        try:
            self._core.add(task, now=now)
        except (DuplicateTaskError, SchedulerShutdownError) as error:
            logger.warning("task refused: %s", error)
            self._core.refuse(task, now=now)
            return False
        return True

    def _refused(self, item: OutboxItem, error: Exception, now: float) -> None:
        """The core refused a new task or parcel from the outbox: end the task, or log the parcel."""
        if isinstance(item, TaskRecord):
            logger.warning("task refused: %s", error)
            self._core.refuse(item, now=now)
        else:  # a parcel: the facade stops sending before shutdown, so not expected
            logger.warning("tasks refused: %s", error)

    def _take(self, item: OutboxItem, now: float) -> None:
        """Handle one item from the outbox: a report, a new task, or a handle's cancel."""
        try:
            self._takers[type(item)](item, now)  # by type, not ``match``: this costs every task twice
        except (DuplicateTaskError, SchedulerShutdownError) as error:
            self._refused(item, error, now)

    # -- carrying out decisions (scheduler thread) ------------------------------------------

    def _carry_out_all(self) -> None:
        core = self._core
        effects = core.take_effects()
        while effects:
            self._carry_out(effects)  # rarely makes more: only when a worker is found dead
            effects = core.take_effects()

    def _carry_out(self, effects: Effects) -> None:
        if effects.saves or effects.ledger:
            self._home.save(effects, self._core)  # before anything makes the changes visible
        if effects.events:
            self._tell_bus(Publish(tuple(effects.events)))
        for worker in effects.abandoned:
            self._abandon_worker(worker)
        for worker, runs in effects.batches:
            self._hand_batch(worker, runs)
        if effects.finished:
            Token.finish_all(effects.finished)  # type: ignore[arg-type]

    def _hand_batch(self, worker: int, runs: list[RunTask | PlainRun]) -> None:
        if worker == INLINE_WORKER:
            self._run_inline(runs)
            return
        if not tell_quietly(self._workers[worker], RunBatch(runs)):
            self._replace_worker(worker, "was dead when handed a task")

    def _publish(self, events: Sequence[TaskEvent | None]) -> None:
        published = tuple(event for event in events if event is not None)
        if published:
            self._tell_bus(Publish(published))

    def _run_inline(self, runs: list[RunTask | PlainRun]) -> None:
        """Make the runs of message tasks here and now (each a quick ``tell``), and take their reports.

        Their reports go to the core at once; what it decides then is carried out by the
        ``_carry_out_all`` loop this is called from.
        """
        reports: list[Report] = []
        run_batch(runs, INLINE_WORKER, self._clock, _call, reports.append, self._home.start_check)
        now = self._clock.now()
        for report in reports:
            self._take(report, now)

    def _after_message(self) -> None:
        core = self._core
        self._home.after_message(core)
        if self._timer is not None and not core.closed:
            head = core.next_release()  # a FakeClock past a held-back task must not tick for ever
            watched = core.watched_wall_offset
            if head != self._armed or watched != self._watched:
                self._armed, self._watched = head, watched
                self._timer.arm(head, watched)
        if self._settle_waiters and core.is_settled(self._clock.now()) and not self._home.saving():
            waiters, self._settle_waiters = self._settle_waiters, []
            for waiter in waiters:  # the bus answers once it has delivered every event so far
                if not self._tell_bus(Flush(waiter, core.activity)):
                    _wake(waiter, core.activity)
        if core.closed and not core.busy and not self._stopping and not self._home.saving():
            self._stopping = True
            for waiter in self._drained:
                _wake(waiter, None)
            self.stop()  # handled after the messages already queued

    def _change_subscriptions(self, message: Subscribe | Unsubscribe) -> None:
        """Add or drop a subscription, here (the kinds the core builds) and on the bus."""
        subscriptions = self._subscriptions
        if isinstance(message, Subscribe):
            changed = subscriptions.add(message)
        else:
            changed = subscriptions.remove(message.subscription_id)
        if changed:
            self._core.wanted = subscriptions.wanted
        self._tell_bus(message)

    def _observe_wall_offset(self) -> None:
        """Tell the core how wall-clock time relates to clock time now (it re-plans after a jump)."""
        offset = self._wall_offset()
        if offset is not None:
            self._core.observe_wall_offset(offset, now=self._clock.now())

    def _wall_offset(self) -> float | None:
        """Wall-clock time minus clock time now (to show wall-clock times in snapshots)."""
        try:
            return self._clock.wall().timestamp() - self._clock.now()
        except (OverflowError, ValueError, OSError):
            return None

    def _stats(self) -> SchedulerStats:
        core = self._core
        return SchedulerStats(
            live_tasks=core.live_count,
            running=core.running_count,
            heap_size=core.waiting_in_heap,
            workers=self._pool_size,
            processes=len(self._slots),
            ticks=self._ticks,
            timer_wakeups=self._timer.wakeups if self._timer is not None else 0,
            replaced_threads=self._replaced,
            abandoned_workers=self._abandoned,
            stale_heap_entries=core.heap_size - core.waiting_in_heap,
        )

    # -- the threads it runs (scheduler thread) ---------------------------------------------

    def _start_worker(self, index: int) -> pykka.ActorRef[Any]:
        if index < self._pool_size:
            return WorkerActor.start(
                index, self.actor_ref, self._clock, self._outbox, self._threads, self._home.start_check
            )
        if index >= self._pool_size + len(self._slots):  # a registered executor's slot
            name, executor = self._executor_slots[index - self._pool_size - len(self._slots)]
            return ExecutorWorkerActor.start(
                index,
                self.actor_ref,
                self._clock,
                name,
                executor,
                self._outbox,
                self._threads,
                self._home.start_check,
            )
        slot = self._slots[index - self._pool_size]
        return ProcessWorkerActor.start(
            index, self.actor_ref, self._clock, slot, self._outbox, self._threads, self._home.start_check
        )

    def _start_bus(self) -> pykka.ActorRef[EventBus]:
        return EventBus.start(self._threads, self.actor_ref)

    def _tell_bus(self, message: object) -> bool:
        """Tell the bus ``message``; a bus found dead is replaced first (its ``BusExited`` may be late)."""
        if self._bus is None:
            return False
        if tell_quietly(self._bus, message):
            return True
        self._replace_bus("was dead when handed a message")
        return tell_quietly(self._bus, message)

    def _on_worker_exited(self, index: int, reason: str) -> None:
        if self._core.closed or not 0 <= index < len(self._workers) or self._workers[index].is_alive():
            return  # shutting down, or a report from a worker already replaced
        self._replace_worker(index, reason)

    def _replace_worker(self, index: int, reason: str) -> None:
        logger.error("worker %d %s; replacing it", index, reason)
        self._replaced += 1
        now = self._clock.now()
        self._core.worker_lost(index, WorkerLostError(f"worker {index} {reason} during the run"), now=now)
        self._workers[index] = self._start_worker(index)
        self._core.add_worker(index, now=now)

    def _abandon_worker(self, index: int) -> None:
        """Give up on a worker stuck in a run past its timeout and grace; put a fresh one in its place.

        A thread cannot be killed: it is left to finish the run on its own (a daemon that
        shutdown does not wait for), and told to stop then; whatever it reports is stale. A
        worker process's child is killed instead, and the worker goes on with a new child.
        """
        logger.error("worker %d is stuck in a run past its timeout and hung_grace; replacing it", index)
        self._abandoned += 1
        if not 0 <= index - self._pool_size < len(self._slots):  # a thread, or an executor's slot
            old = self._workers[index]
            if self._threads is not None:
                self._threads.abandon(old.actor_urn)
            stop_quietly(old)
            self._workers[index] = self._start_worker(index)
        else:
            self._slots[index - self._pool_size].kill()
        self._core.add_worker(index, now=self._clock.now())

    def _replace_bus(self, reason: str) -> None:
        if self._stopping or not self._own_bus or (self._bus is not None and self._bus.is_alive()):
            return
        logger.error("event bus %s; replacing it", reason)
        self._replaced += 1
        self._bus = self._start_bus()
        for subscription in self._subscriptions:
            self._tell_bus(subscription)


def _call(run: RunTask) -> object:
    return run.fn(*run.args, **run.kwargs)


def _wake(waiter: Waiter, result: object) -> None:
    """Set ``waiter``'s result, ignoring one set already (a facade that gave up waiting)."""
    try:
        waiter.set_result(result)
    except Exception:  # an InvalidStateError from a future already set: nobody waits any more
        logger.debug("waiter %r was already set", waiter)
