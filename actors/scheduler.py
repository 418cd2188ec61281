"""The scheduler actor: a thin shell that feeds the ``Timetable`` and carries out its effects.

It owns the timetable, the timer thread, the worker pool and the subscriptions' event kinds,
and changes them only while handling a message on its own thread, one message at a time.
That mailbox discipline is what the seed design's "one Condition guards the heap and the
dict" gives: no other thread ever touches that state, so it needs no lock.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import pykka

from actors.base import SimpleQueueActor, stop_quietly
from actors.clock import Clock
from actors.errors import DuplicateTaskError, SchedulerShutdownError, WorkerLostError
from actors.outbox import Outbox
from actors.timer import TimerThread
from actors.timetable import Effects, Timetable
from actors.worker import WorkerActor
from messages import (
    Cancel,
    Cancelled,
    Completed,
    Drain,
    EventKind,
    Failed,
    Publish,
    QueryNextDue,
    QueryStats,
    QueryTask,
    QueryTasks,
    RunBatch,
    RunTask,
    Schedule,
    SchedulerStats,
    Settle,
    Shutdown,
    Skipped,
    Started,
    Subscribe,
    Tick,
    Unsubscribe,
    Waiter,
    WorkerExited,
)

logger = logging.getLogger(__name__)

Report = Started | Completed | Failed | Skipped


class SchedulerActor(SimpleQueueActor):
    """Owns the heap and the task table; driven only by messages.

    Replies (to ``ask``): ``Schedule`` -> ``True`` if accepted, ``False`` if rejected (the id
    is live, or the scheduler is shutting down; logged); ``Cancel`` -> ``bool``; ``QueryTask``
    -> ``TaskInfo | None``; ``QueryTasks`` -> ``list[TaskInfo]``; ``QueryNextDue`` ->
    ``float | None``; ``QueryStats`` -> ``SchedulerStats``. It never raises out of a handler,
    so a bad ``tell`` cannot kill it. It only ever *tells* the workers and the bus, so no
    actor can deadlock on it.
    """

    def __init__(
        self,
        *,
        clock: Clock,
        bus: pykka.ActorRef[Any],
        workers: int = 4,
        history: int = 10_000,
        timer: bool = True,
        schedules: Outbox[Schedule | Cancelled] | None = None,
        started_threads: list[threading.Thread] | None = None,
    ) -> None:
        """Create the actor (runs on the caller's thread; workers and timer start in ``on_start``).

        Args:
            clock: Where time is read.
            bus: The ``EventBus`` that delivers events.
            workers: Size of the worker pool (at least 1).
            history: How many finished tasks' ``TaskInfo`` to keep.
            timer: Start a timer thread. Without one, only ``Tick`` messages (or ``Settle``)
                make due tasks run: handy in tests that drive the actor by hand.
            schedules: Where the ``Scheduler`` facade puts its ``Schedule`` commands and its
                handles' ``Cancelled`` reports; it tells ``Drain()`` when the scheduler must take
                them (see ``Outbox``).
            started_threads: A list each actor thread appends itself to, so shutdown can join them.
        """
        super().__init__()
        self._clock = clock
        self._bus = bus
        self._core = Timetable(workers=workers, history=history)
        self._pool_size = workers
        self._workers: list[pykka.ActorRef[WorkerActor]] = []
        self._started_threads = started_threads
        self._timer = TimerThread(clock, self.actor_ref) if timer else None
        self._schedules: Outbox[Schedule | Cancelled] = schedules if schedules is not None else Outbox()
        self._reports: Outbox[Report] = Outbox()  # the workers' reports
        self._armed: float | None = None  # the deadline the timer was last given
        self._subscriptions: dict[int, frozenset[EventKind]] = {}
        self._settle_waiters: list[Waiter] = []
        self._drained: list[Waiter] = []  # woken when shut down and nothing runs any more
        self._stopping = False
        self._ticks = 0

    # -- lifecycle (scheduler thread) -------------------------------------------------------

    def on_start(self) -> None:
        """Start the worker pool and the timer (scheduler thread)."""
        if self._started_threads is not None:
            self._started_threads.append(threading.current_thread())
        self._workers = [self._start_worker(index) for index in range(self._pool_size)]
        if self._timer is not None:
            self._timer.start()
            if self._started_threads is not None:
                self._started_threads.append(self._timer.thread)

    def on_stop(self) -> None:
        """Stop the timer, the workers and then the bus (scheduler thread).

        A worker still running a task stops once the task returns; the bus first delivers
        every event already published.
        """
        if self._timer is not None:
            self._timer.stop(timeout=1.0)
        for worker in self._workers:
            stop_quietly(worker)
        stop_quietly(self._bus)

    def on_failure(self, *_: object) -> None:
        """Never expected (handlers catch everything); clean up as ``on_stop`` would."""
        self.on_stop()

    # -- messages (scheduler thread) --------------------------------------------------------

    def on_receive(self, message: Any) -> object:
        """Handle one message, carry out what the timetable decided, re-arm the timer."""
        try:
            reply = self._handle(message)
            effects = self._core.take_effects()
            while effects.events or effects.batches or effects.finished:
                self._carry_out(effects)  # rarely makes more: only when a worker is found dead
                effects = self._core.take_effects()
            self._after_message()
        except Exception:
            logger.exception("scheduler failed to handle %r; state kept, message dropped", message)
            return None
        return reply

    def _handle(self, message: Any) -> object:  # noqa: PLR0911, PLR0912 - one case per message type
        core = self._core
        match message:
            case Drain():
                now = self._clock.now()
                with core.batch(now=now):
                    for command in self._schedules.drain():
                        if type(command) is Schedule:
                            self._schedule(command, now)
                        else:
                            core.cancelled(command.task_id, command.sink, now=now)
                    record = self._record
                    for report in self._reports.drain():
                        record(report, now)
            case Started() | Completed() | Failed() | Skipped():
                self._record(message, self._clock.now())
            case Cancelled(task_id, sink):
                core.cancelled(task_id, sink, now=self._clock.now())
            case Tick():
                self._ticks += 1
                self._armed = None  # the timer disarms itself when it fires
                core.tick(now=self._clock.now())
            case Schedule():
                return self._schedule(message, self._clock.now())
            case Cancel(task_id):
                return core.cancel(task_id, now=self._clock.now())
            case QueryTask(task_id):
                return core.find(task_id)
            case QueryTasks():
                return core.infos()
            case QueryNextDue():
                return core.next_due()
            case QueryStats():
                return self._stats()
            case Settle(waiter):
                core.tick(now=self._clock.now())
                self._settle_waiters.append(waiter)
            case Subscribe(subscription_id, _, kinds):
                self._subscriptions[subscription_id] = kinds
                self._update_wanted()
                self._bus.tell(message)
            case Unsubscribe(subscription_id):
                self._subscriptions.pop(subscription_id, None)
                self._update_wanted()
                self._bus.tell(message)
            case Shutdown(drained):
                self._drained.append(drained)
                core.shut_down(now=self._clock.now())
            case WorkerExited(worker, reason):
                self._on_worker_exited(worker, reason)
            case _:
                logger.warning("scheduler ignored an unexpected message: %r", message)
        return None

    def _schedule(self, command: Schedule, now: float) -> bool:
        try:
            self._core.schedule(command, now=now)
        except (DuplicateTaskError, SchedulerShutdownError) as error:
            logger.warning("Schedule rejected: %s", error)
            self._core.refuse(command)
            return False
        return True

    def _record(self, report: Report, now: float) -> None:
        core = self._core
        # isinstance, not ``match``: class patterns cost every task a few µs.
        if isinstance(report, Completed):
            core.completed(
                report.worker,
                report.task_id,
                report.run,
                report.value,
                finished_at=report.finished_at,
                now=now,
                idle=report.idle,
            )
        elif isinstance(report, Failed):
            core.failed(
                report.worker,
                report.task_id,
                report.run,
                report.error,
                finished_at=report.finished_at,
                now=now,
                idle=report.idle,
            )
        elif isinstance(report, Skipped):
            core.skipped(report.worker, report.task_id, report.run, now=now, idle=report.idle)
        else:
            core.started(report.worker, report.task_id, report.run, started_at=report.started_at)

    # -- carrying out decisions (scheduler thread) ------------------------------------------

    def _carry_out(self, effects: Effects) -> None:
        if effects.events:
            self._bus.tell(Publish(tuple(effects.events)))
        for worker, runs in effects.batches:
            self._hand_batch(worker, runs)
        for sink, final, value in effects.finished:
            try:
                sink.task_finished(final, value)
            except Exception:
                logger.exception("final-state sink %r raised", sink)

    def _hand_batch(self, worker: int, runs: list[RunTask]) -> None:
        try:
            self._workers[worker].tell(RunBatch(tuple(runs)))
        except pykka.ActorDeadError:
            self._replace_worker(worker, "was dead when handed a task")

    def _after_message(self) -> None:
        core = self._core
        if self._timer is not None and not core.closed:
            head = core.next_due()
            if head != self._armed:
                self._armed = head
                self._timer.arm(head)
        if self._settle_waiters and core.is_settled(self._clock.now()):
            waiters, self._settle_waiters = self._settle_waiters, []
            for waiter in waiters:
                waiter.set_result(None)
        if core.closed and not core.busy and not self._stopping:
            self._stopping = True
            for waiter in self._drained:
                waiter.set_result(None)
            self.stop()  # handled after the messages already queued

    def _update_wanted(self) -> None:
        wanted: frozenset[EventKind] = frozenset()
        for kinds in self._subscriptions.values():
            wanted |= kinds
        self._core.wanted = wanted

    def _stats(self) -> SchedulerStats:
        core = self._core
        return SchedulerStats(
            live_tasks=core.live_count,
            running=core.running_count,
            heap_size=core.heap_size,
            workers=self._pool_size,
            ticks=self._ticks,
            timer_wakeups=self._timer.wakeups if self._timer is not None else 0,
        )

    # -- the worker pool (scheduler thread) -------------------------------------------------

    def _start_worker(self, index: int) -> pykka.ActorRef[WorkerActor]:
        return WorkerActor.start(index, self.actor_ref, self._clock, self._reports, self._started_threads)

    def _on_worker_exited(self, index: int, reason: str) -> None:
        if self._core.closed or index >= len(self._workers) or self._workers[index].is_alive():
            return  # shutting down, or a report from a worker already replaced
        self._replace_worker(index, reason)

    def _replace_worker(self, index: int, reason: str) -> None:
        logger.error("worker %d %s; replacing it", index, reason)
        now = self._clock.now()
        self._core.worker_lost(index, WorkerLostError(f"worker {index} {reason} during the run"), now=now)
        self._workers[index] = self._start_worker(index)
        self._core.add_worker(index, now=now)
