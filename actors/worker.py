"""The worker actor: runs one task at a time and reports how it ended."""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import pykka

from actors.base import SimpleQueueActor
from actors.clock import Clock
from messages import Completed, Failed, RunTask, WorkerExited

logger = logging.getLogger(__name__)


class WorkerActor(SimpleQueueActor):
    """Runs tasks handed to it by the scheduler, one at a time, on its own thread.

    The scheduler sends ``RunTask`` only while this worker is idle, so its inbox holds at most
    one task. Whatever the task raises (``BaseException`` included: ``SystemExit``,
    ``KeyboardInterrupt``...) becomes a ``Failed`` report; nothing escapes ``on_receive``, so
    a task can never kill this actor or, through pykka's ``stop_all``, any other.
    """

    # Daemon (from the base): a task that never returns must not keep the interpreter alive.

    def __init__(
        self,
        index: int,
        scheduler: pykka.ActorRef[Any],
        clock: Clock,
        started_threads: list[threading.Thread] | None = None,
    ) -> None:
        """Create worker number ``index`` reporting to ``scheduler`` (runs on the caller's thread)."""
        super().__init__()
        self._index = index
        self._scheduler = scheduler
        self._clock = clock
        self._started_threads = started_threads

    def on_start(self) -> None:
        """Record this actor's thread so shutdown can join it (runs on the worker thread)."""
        if self._started_threads is not None:
            self._started_threads.append(threading.current_thread())

    def on_receive(self, message: Any) -> None:
        """Run a ``RunTask`` and tell the scheduler ``Completed``/``Failed`` (worker thread)."""
        if not isinstance(message, RunTask):
            logger.warning("worker %d ignored an unexpected message: %r", self._index, message)
            return
        try:
            value = message.fn(*message.args, **message.kwargs)
        except BaseException as error:  # SystemExit too: a task never takes the worker down
            logger.debug("task %r run %d raised %r", message.task_id, message.run, error)
            report: Completed | Failed = Failed(
                self._index, message.task_id, message.run, error, self._clock.now()
            )
        else:
            report = Completed(self._index, message.task_id, message.run, value, self._clock.now())
        try:
            self._scheduler.tell(report)
        except pykka.ActorDeadError:
            logger.debug("scheduler gone; report for task %r dropped", message.task_id)

    def on_failure(self, *_: object) -> None:
        """Tell the scheduler this worker died (worker thread, as the actor dies)."""
        self._report_exit("failed")

    def on_stop(self) -> None:
        """Tell the scheduler this worker stopped (worker thread, as the actor stops)."""
        self._report_exit("stopped")

    def _report_exit(self, reason: str) -> None:
        with contextlib.suppress(pykka.ActorDeadError):
            self._scheduler.tell(WorkerExited(self._index, reason))
