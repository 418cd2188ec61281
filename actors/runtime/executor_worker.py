"""An executor's slot: a worker actor whose runs go out to an engine (Celery, Dask...) and back.

An ``ExecutorWorkerActor`` speaks the worker protocol exactly as ``WorkerActor`` does (batches,
claims, tokens, ``Started``/``Completed``/``Failed`` through the scheduler's outbox); only the
call itself is ``Executor.submit``, then a wait, on this slot's thread, for the executor's
``done``. So the pure core's dealer keeps deciding when and whether a run happens, and bounds
the runs in flight per executor (one slot each); timeouts, interrupts, retries, events and a
shared store's start check are the ones every run has.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

import pykka

from actors.errors import ExecutorUnavailableError, RunCancelled
from actors.references import LazyReference, reference_of
from actors.runtime.executor_protocol import Executor, Job, run_key
from actors.runtime.worker import WorkerActor
from actors.sync.clock import Clock
from actors.sync.outbox import Outbox
from actors.sync.threads import ThreadRegistry
from messages import RunTask

logger = logging.getLogger(__name__)


class ExecutorWorkerActor(WorkerActor):
    """One slot of a registered executor: hands each of its runs to the executor, waits for the outcome.

    Runs on its own thread (a pykka actor's); the executor's ``done`` may come from any thread.
    A run asked to stop (``cancel(interrupt=True)``, its ``timeout``) is interrupted on the
    engine through the run's claim's waker, on the thread that asked.
    """

    def __init__(
        self,
        index: int,
        scheduler: pykka.ActorRef[Any],
        clock: Clock,
        name: str,
        executor: Executor,
        reports: Outbox[Any] | None = None,
        threads: ThreadRegistry | None = None,
        start_check: Callable[[RunTask], bool] | None = None,
    ) -> None:
        """Create slot ``index`` of executor ``name`` (runs on the caller's thread)."""
        super().__init__(index, scheduler, clock, reports, threads, start_check)
        self._name = name
        self._executor = executor

    def _call(self, run: RunTask) -> object:
        """Submit the run to the executor; wait (this thread) for its ``done``; return or raise that."""
        fn = run.fn
        seq: int | None = getattr(run.task, "store_seq", None)  # a stored task's row (record = token)
        job = Job(
            run_key(run.task_id, run.run, run.attempt, seq),
            run.task_id,
            run.run,
            run.attempt,
            fn,
            _reference(fn),
            run.args,
            run.kwargs,
            run.timeout,
            seq,
        )
        finished = threading.Event()
        outcome: list[tuple[object, BaseException | None]] = []

        def done(value: object, error: BaseException | None) -> None:  # any thread, once
            if not outcome:
                outcome.append((value, error))
                finished.set()

        try:
            submission = self._executor.submit(job, done)
        except Exception as refused:
            raise ExecutorUnavailableError(
                f"executor {self._name!r} could not take run {run.run} of task {run.task_id!r}: "
                f"{type(refused).__name__}: {refused}"
            ) from refused
        claim = run.claim
        claim.waker = submission.interrupt
        try:
            if claim.stop:  # asked before the waker was there
                submission.interrupt()
            finished.wait()
        finally:
            claim.waker = None
        value, error = outcome[0]
        if error is None:
            return value
        if claim.stop:
            raise RunCancelled(
                f"run {run.run} of task {run.task_id!r} was asked to stop; executor {self._name!r} "
                f"ended it with {type(error).__name__}: {error}"
            ) from error
        raise error


def _reference(fn: object) -> str | None:
    """The ``"module:function"`` a run's function imports by, or ``None`` if it has none.

    A task scheduled by reference keeps it (a ``LazyReference``); a stored task loaded back (a
    restart, a shared store's lease) has its function imported already, whose name is its
    reference.
    """
    if isinstance(fn, LazyReference):
        return fn.reference
    try:
        return reference_of(fn)
    except (TypeError, ValueError):  # a lambda, a bound method...: a local executor may still call it
        return None


def close_executors(executors: Mapping[str, Executor]) -> None:
    """Close each executor once, as the scheduler stops (its thread); one that fails is logged, not raised."""
    for name, executor in executors.items():
        try:
            executor.close()
        except Exception:
            logger.exception("executor %r failed to close", name)
