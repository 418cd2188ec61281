"""The worker actor: runs the runs it is handed, one at a time, and reports how each ended."""

from __future__ import annotations

import logging
import threading
from typing import Any

import pykka

from actors.base import SimpleQueueActor
from actors.clock import Clock
from actors.outbox import Outbox
from messages import (
    Completed,
    Drain,
    Failed,
    RunBatch,
    RunTask,
    Skipped,
    Started,
    WorkerExited,
)

logger = logging.getLogger(__name__)

_DRAIN = Drain()


class WorkerActor(SimpleQueueActor):
    """Runs tasks handed to it by the scheduler, one at a time, on its own thread.

    The scheduler hands a ``RunBatch`` only to an idle worker. The worker runs each run whose
    claim it can take (the scheduler may have taken some back meanwhile, to cancel them or to
    give them to an idle worker) and reports each with ``Completed`` or ``Failed``, or with
    ``Skipped`` when the task's token shows it was cancelled before the run could start.
    Before reporting a run it claims the next one, so the report can say whether it is now idle.
    Whatever a task raises (``BaseException`` included: ``SystemExit``, ``KeyboardInterrupt``...)
    becomes a ``Failed`` report: nothing escapes ``on_receive``, so a task can never kill this
    actor or, through pykka's ``stop_all``, any other. Its thread is a daemon: a task that never
    returns does not keep the interpreter alive.
    """

    def __init__(
        self,
        index: int,
        scheduler: pykka.ActorRef[Any],
        clock: Clock,
        reports: Outbox[Started | Completed | Failed | Skipped] | None = None,
        started_threads: list[threading.Thread] | None = None,
    ) -> None:
        """Create worker number ``index`` reporting to ``scheduler`` (runs on the caller's thread).

        Reports go through ``reports`` (the scheduler is told ``Drain()`` when it must take
        them), or are told to the scheduler one by one without it.
        """
        super().__init__()
        self._index = index
        self._scheduler = scheduler
        self._clock = clock
        self._reports = reports
        self._started_threads = started_threads

    def on_start(self) -> None:
        """Record this actor's thread so shutdown can join it (runs on the worker thread)."""
        if self._started_threads is not None:
            self._started_threads.append(threading.current_thread())

    def on_receive(self, message: Any) -> None:
        """Run a ``RunBatch``, reporting each run to the scheduler (worker thread)."""
        if not isinstance(message, RunBatch):
            logger.warning("worker %d ignored an unexpected message: %r", self._index, message)
            return
        runs = message.runs
        index = _next_claimed(runs, 0)
        while index is not None:
            run = runs[index]
            token = run.token
            # A one-time run takes its task's token; a recurring run needs it not revoked.
            if token is None or (token.take_token() if run.once else not token.token_revoked()):
                report_type, outcome, finished_at = self._run(run)
                index = _next_claimed(runs, index + 1)
                idle = index is None
                self._report(report_type(self._index, run.task_id, run.run, outcome, finished_at, idle))
            else:
                index = _next_claimed(runs, index + 1)
                self._report(Skipped(self._index, run.task_id, run.run, index is None))

    def _report(self, report: Started | Completed | Failed | Skipped) -> None:
        if self._reports is None:
            self._tell(self._scheduler, report)
        elif self._reports.put(report):
            self._tell(self._scheduler, _DRAIN)

    def _run(self, run: RunTask) -> tuple[type[Completed] | type[Failed], Any, float]:
        if run.announce:
            self._report(Started(self._index, run.task_id, run.run, self._clock.now()))
        try:
            value = run.fn(*run.args, **run.kwargs)
        except BaseException as error:  # SystemExit too: a task never takes the worker down
            logger.debug("task %r run %d raised %r", run.task_id, run.run, error)
            return Failed, error, self._clock.now()
        return Completed, value, self._clock.now()

    def on_failure(self, *_: object) -> None:
        """Tell the scheduler this worker died (worker thread, as the actor dies)."""
        self._report_exit("failed")

    def on_stop(self) -> None:
        """Tell the scheduler this worker stopped (worker thread, as the actor stops)."""
        self._report_exit("stopped")

    def _report_exit(self, reason: str) -> None:
        self._tell(self._scheduler, WorkerExited(self._index, reason))

    def _tell(self, ref: pykka.ActorRef[Any], message: object) -> None:
        try:
            ref.tell(message)
        except pykka.ActorDeadError:
            logger.debug("worker %d: %s is gone; dropped %r", self._index, ref, message)


def _next_claimed(runs: tuple[RunTask, ...], start: int) -> int | None:
    """Claim the first run from ``start`` on that the scheduler has not taken back; return its index."""
    for index in range(start, len(runs)):
        if runs[index].claim.take():
            return index
    return None
