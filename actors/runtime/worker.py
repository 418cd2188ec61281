"""The worker actor: runs the runs it is handed, one at a time, and reports how each ended."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import traceback
from collections.abc import Callable
from typing import Any, cast

import pykka

from actors.core.effects import PlainDone, PlainRun, as_run_task
from actors.errors import RunCancelled
from actors.runtime.base import LibraryActor
from actors.runtime.run_context import CURRENT_RUN
from actors.sync.clock import Clock
from actors.sync.outbox import Outbox
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.token import START_HELD, STARTED_CLAIMED
from messages import Completed, Drain, Failed, RunBatch, RunTask, Skipped, Started, WorkerExited

logger = logging.getLogger(__name__)

_DRAIN = Drain()

Report = Started | Completed | Failed | Skipped | PlainDone


class WorkerActor(LibraryActor):
    """Runs tasks handed to it by the scheduler, one at a time, on its own thread.

    The scheduler hands a ``RunBatch`` only to an idle worker. The worker runs each run whose
    claim it can take (the scheduler may have taken some back meanwhile, to cancel them or to
    give them to an idle worker), and only if the task's token lets it start
    (``try_start``) and, where the scheduler's home gave it a ``start_check``
    (``actors/runtime/home.py``: a shared store's, which asks the database), only if that
    check agrees first; it reports each with ``Completed`` or ``Failed``, or ``Skipped`` when the
    token says the task was cancelled. Before reporting a run it claims the next one, so the
    report can say whether it is now idle. Whatever a task raises (``BaseException``
    included: ``SystemExit``, ``KeyboardInterrupt``...) becomes a ``Failed`` report: nothing
    escapes ``on_receive``, so a task can never kill this actor or, through pykka's
    ``stop_all``, any other. Its thread is a daemon: a task that never returns does not keep
    the interpreter alive.
    """

    role = Role.WORKER

    def __init__(
        self,
        index: int,
        scheduler: pykka.ActorRef[Any],
        clock: Clock,
        reports: Outbox[Any] | None = None,
        threads: ThreadRegistry | None = None,
        start_check: Callable[[RunTask], bool] | None = None,
    ) -> None:
        """Create worker number ``index`` reporting to ``scheduler`` (runs on the caller's thread).

        Reports go through ``reports`` (the scheduler is told ``Drain()`` when it must take
        them), or are told to the scheduler one by one without it. ``start_check``, if given,
        is asked on this worker's thread before each run's token moves (``run_batch``).
        """
        super().__init__(threads)
        self._start_check = start_check
        self._index = index
        self._scheduler = scheduler
        self._clock = clock
        self._reports = reports
        self._loop: asyncio.AbstractEventLoop | None = None  # runs async def tasks; this thread's alone

    def on_receive(self, message: Any) -> None:
        """Run a ``RunBatch``, reporting each run to the scheduler (worker thread)."""
        if not isinstance(message, RunBatch) or type(message.runs) is not list:
            logger.warning("worker %d ignored an unexpected message: %r", self._index, message)
            return
        runs = cast("list[RunTask | PlainRun]", message.runs)
        run_batch(runs, self._index, self._clock, self._call, self._report, self._start_check)

    def _call(self, run: RunTask) -> object:
        """Run the task's function (here, on this thread; ``ProcessWorkerActor`` does it elsewhere)."""
        if run.coroutine:
            return self._await(run)
        return run.fn(*run.args, **run.kwargs)

    def _await(self, run: RunTask) -> object:
        """Run an ``async def`` task to its end on this worker's event loop (made at its first such run)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.new_event_loop()
        return loop.run_until_complete(_stoppable(run, loop))

    def _report(self, report: Report) -> None:
        if self._reports is None:
            self._tell(report)
        elif self._reports.put(report):
            self._tell(_DRAIN)

    def on_failure(self, *_: object) -> None:
        """Tell the scheduler this worker died (worker thread, as the actor dies)."""
        logger.error("worker %d failed; the scheduler will replace it", self._index)
        self._tell(WorkerExited(self._index, "failed"))

    def on_stop(self) -> None:
        """Close its event loop; tell the scheduler this worker stopped (worker thread, as it stops)."""
        if self._loop is not None:
            self._loop.close()
        self._tell(WorkerExited(self._index, "stopped"))

    def _tell(self, message: object) -> None:
        try:
            self._scheduler.tell(message)
        except pykka.ActorDeadError:
            logger.debug("worker %d: the scheduler is gone; dropped %r", self._index, message)


def run_batch(  # noqa: PLR0912, PLR0915 - one loop, on purpose (below)
    runs: list[RunTask | PlainRun],
    worker: int,
    clock: Clock,
    call: Callable[[RunTask], object],
    report: Callable[[Report], None],
    start_check: Callable[[RunTask], bool] | None = None,
) -> None:
    """Run a batch as worker ``worker``: each run whose claim and token allow, reporting each.

    On the calling thread: a ``WorkerActor``'s, or the scheduler's for the runs it makes itself
    (a message task's ``tell``). ``call`` runs one ``RunTask``'s function; ``report`` sends a
    report. ``start_check`` (the scheduler's home's, ``actors/runtime/home.py``; ``None``
    without a shared store) is asked first, before the token moves: ``False`` skips the run.
    Clears ``runs`` at the end (pykka keeps the last message: it must not keep the arguments).

    A plain task's run comes as a ``PlainRun`` tuple (``actors/core/effects.py``; only thread
    workers and the scheduler's inline runs are dealt them, so its function is called here)
    and, if it returns, is reported as a ``PlainDone`` tuple: no message object is made for
    the common run, either way. Any other ending of it is reported as for a ``RunTask``.

    One loop, the run itself written out in it: a call saved here is saved for every run, on
    the busiest path there is (``docs/performance.md``).
    """
    now = clock.now
    count = len(runs)
    index = _next_claimed(runs, 0)
    while index < count:
        run = runs[index]
        plain = type(run) is tuple
        if plain:
            task, claim, fn, args, kwargs, _ = run  # type: ignore[misc]
            one_time, announce, manual = True, False, False
        else:
            task, claim = run.task, run.claim  # type: ignore[union-attr]
            one_time, announce, manual = run.one_time, run.announce, run.manual  # type: ignore[union-attr]
        verdict = (
            task.try_start(one_time, manual) if start_check is None or start_check(as_run_task(run)) else 0
        )
        if verdict > 0:
            if verdict == STARTED_CLAIMED and not manual:  # rare: the run a run_now claimed
                run = dataclasses.replace(as_run_task(run), manual=True)
                plain = False  # reported whole: the scheduler counts it as the manual run
            started_at = now()
            try:
                if announce:
                    report(Started(worker, run.task_id, run.run, started_at))  # type: ignore[union-attr]
                failure: tuple[BaseException, str] | None = None
                reset = CURRENT_RUN.set((run, started_at, clock))
                try:
                    if not plain:
                        value = call(run)  # type: ignore[arg-type]
                    elif kwargs:
                        value = fn(*args, **kwargs)
                    else:
                        value = fn(*args)
                except BaseException as error:  # SystemExit too: a task never takes the worker down
                    logger.debug("task %r run %d raised %r", _id_of(run), _run_of(run), error)
                    value, failure = None, _detach(error)
                finally:
                    CURRENT_RUN.reset(reset)
                finished_at = now()
            finally:  # even if this worker fails now (its clock raised): its task must be able to run again
                ours = task.end_run(claim)
            if not ours:  # abandoned while it ran: the task, and this worker's place, are others' now
                break
            index += 1  # _next_claimed(runs, index + 1), written out: the next run this worker claims
            while index < count:
                after = runs[index]
                if (after[1] if type(after) is tuple else after.claim).take():  # type: ignore[union-attr]
                    break
                index += 1
            if failure is None:
                if plain:
                    result: Report = (worker, task, value, started_at, finished_at, index == count)
                else:
                    run_id, number = run.task_id, run.run  # type: ignore[union-attr]
                    result = Completed(worker, run_id, number, value, finished_at, index == count, started_at)
            else:
                raised, formatted = failure
                result = Failed(
                    worker,
                    _id_of(run),
                    _run_of(run),
                    raised,
                    formatted,
                    finished_at,
                    index == count,
                    started_at,
                )
        else:
            index = _next_claimed(runs, index + 1)
            result = Skipped(worker, _id_of(run), _run_of(run), index == count, verdict == START_HELD)
        report(result)
    runs.clear()


def _id_of(run: RunTask | PlainRun) -> str:
    """The task id of a dealt run."""
    if type(run) is tuple:
        return run[0].task_id
    return run.task_id  # type: ignore[union-attr]


def _run_of(run: RunTask | PlainRun) -> int:
    """The run number of a dealt run (a ``PlainRun``'s is its task's next: ``run_count + 1``)."""
    if type(run) is tuple:
        return run[0].run_count + 1
    return run.run  # type: ignore[union-attr]


async def _stoppable(run: RunTask, loop: asyncio.AbstractEventLoop) -> object:
    """Await the run's coroutine as a task that a stop request cancels (``RunCancelled`` then)."""
    task: asyncio.Task[object] = loop.create_task(run.fn(*run.args, **run.kwargs))  # type: ignore[arg-type]
    claim = run.claim

    def wake() -> None:  # on the thread that asks the run to stop
        loop.call_soon_threadsafe(task.cancel)

    claim.waker = wake
    try:
        if claim.stop:  # asked before the waker was there
            task.cancel()
        return await task
    except asyncio.CancelledError:
        if claim.stop:
            raise RunCancelled(f"run {run.run} of task {run.task_id!r} was asked to stop") from None
        raise
    finally:
        claim.waker = None


def _detach(error: BaseException) -> tuple[BaseException, str]:
    """Format ``error``'s traceback, then drop the tracebacks of it and its chain.

    A traceback holds the frames it passed through, and their locals: the run's arguments,
    among others. Kept in a task's history, it would keep them alive for as long as the task
    is remembered; the formatted text is all a person needs.
    """
    formatted = "".join(traceback.format_exception(error))
    seen: set[int] = set()
    chain: list[BaseException | None] = [error]
    while chain:
        link = chain.pop()
        if link is None or id(link) in seen:
            continue
        seen.add(id(link))
        link.__traceback__ = None
        chain += (link.__cause__, link.__context__)
        if isinstance(link, BaseExceptionGroup):
            chain.extend(link.exceptions)
    return error, formatted


def _next_claimed(runs: list[RunTask | PlainRun], start: int) -> int:
    """Claim the first run from ``start`` on that the scheduler has not taken back; its index.

    ``len(runs)`` if none is left (an int either way: the loop compares, never tests ``None``).
    """
    for index in range(start, len(runs)):
        run = runs[index]
        if (run[1] if type(run) is tuple else run.claim).take():  # type: ignore[union-attr]
            return index
    return len(runs)
