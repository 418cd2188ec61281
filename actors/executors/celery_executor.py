"""Runs on Celery workers: a run is sent with ``send_task``, its outcome read from the result backend.

The scheduler side (``CeleryExecutor``) sends each run as the task ``TASK_NAME`` with the run's
key as its Celery task id, so a run re-sent after a scheduler crash is the same Celery task.
One poller thread per executor reads the result backend for every run in flight and calls
each run's ``done``. The worker side is ``celery_task(app)``: it registers ``TASK_NAME``, which
imports the function by reference and calls it, with ``acks_late`` (a run whose worker process
dies is not acknowledged before it ran) and without ``reject_on_worker_lost`` (such a run is
recorded ``FAILURE`` with Celery's ``WorkerLostError``, which this executor turns into an
``ExecutorWorkerLostError``: the scheduler counts the run ``FAILED`` and its ``Retry`` applies).

A stored task's run may have been sent before under its key: by this scheduler before a
restart, or by the node of a shared store that held the run and died while it was out. With a
fixed ``namespace`` (the same on every node), the first send of each such key leaves a *sent
mark* in the result backend (Redis: one ``SET NX``, which is also the question "was it sent
before?"). A key already marked is not sent again: the executor waits for that Celery task's
outcome through the backend, as for any run it sent (``_adopt``), so the run's body runs once.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, Final

from actors.errors import ExecutorWorkerLostError, RunCancelled, TaskTimeoutError
from actors.executors.engine_call import call_reference, job_engine_key
from actors.references import check_json_arguments, check_picklable_arguments
from actors.runtime.executor_protocol import DEFAULT_MAX_IN_FLIGHT, Done, Job

__all__ = ["SENT_MARK", "TASK_NAME", "CeleryExecutor", "celery_task"]

logger = logging.getLogger(__name__)

TASK_NAME: Final = "actors.run_reference"
"""The Celery task every run is sent as: it imports ``args[0]`` by reference and calls it."""

SENT_MARK: Final = "actors-sent-"
"""Before a Celery task id in the result backend's Redis: the key that says the run was sent."""


def celery_task(app: Any) -> Any:
    """Register ``TASK_NAME`` on a Celery ``app`` (the worker's; harmless on the sender's); return the task.

    The one line of setup a Celery worker needs to run a scheduler's runs: the worker needs
    this package and the functions' modules importable, and nothing of a scheduler.
    """
    return app.task(name=TASK_NAME, acks_late=True, reject_on_worker_lost=False)(call_reference)


class _Out:
    """One run out on Celery, as the poller sees it (the poller's thread, and ``interrupt``'s)."""

    __slots__ = ("done", "executor", "given_up_at", "id", "result")

    def __init__(self, executor: CeleryExecutor, task_id: str, result: Any, done: Done) -> None:
        self.executor = executor
        self.id = task_id
        self.result = result
        self.done = done
        self.given_up_at: float | None = None  # set by interrupt: when to stop waiting for the revoke

    def interrupt(self) -> None:
        """Revoke the Celery task, terminating it if it runs (any thread)."""
        self.executor._revoke(self)


class CeleryExecutor:
    """An ``Executor`` that runs each run on a Celery worker (``Scheduler(executors={"celery": ...})``).

    Args:
        app: The Celery app whose broker the runs are sent through and whose result backend
            (it must have one) their outcomes are read from.
        queue: The Celery queue to send runs to (``None``: the app's default).
        max_in_flight: Runs out on Celery at once; more due runs wait in the scheduler.
        namespace: Put before each run key to make the Celery task id. Give a fixed one, unique
            to the store (and the same on every node of a shared store), for a durable schedule:
            a stored task's run already sent under its key, before a restart or by a node that
            died, is then found on Celery and waited for instead of run again. ``None`` (the
            default): a fresh random one per executor, so that two schedulers, or one started
            again on memory, never read each other's results (and nothing is ever found).
        poll_interval: Seconds between two reads of the result backend for the runs in flight.
        revoke_grace: Seconds an interrupted run waits for Celery to confirm the revoke (no
            worker may be there to) before it ends anyway, as cancelled.

    Threads: ``submit`` on the scheduler's slot threads; one daemon poller thread (started with
    the first run) reads the backend and calls ``done``; ``close`` on the scheduler's thread.
    """

    remote = True

    def __init__(
        self,
        app: Any,
        *,
        queue: str | None = None,
        max_in_flight: int = DEFAULT_MAX_IN_FLIGHT,
        namespace: str | None = None,
        poll_interval: float = 0.02,
        revoke_grace: float = 5.0,
    ) -> None:
        """Wrap ``app``; nothing is sent or started yet (caller's thread)."""
        self.app = app
        self.queue = queue
        self.max_in_flight = max_in_flight
        self.namespace = uuid.uuid4().hex[:12] if namespace is None else namespace
        self._fresh = namespace is None  # no key of this namespace was ever sent before this executor
        # Under a fixed namespace, what keeps a memory task's keys apart from an earlier process's.
        self._incarnation = None if self._fresh else uuid.uuid4().hex[:8]
        self.adopted = 0  # runs found on Celery, sent before, and waited for instead of sent again
        self._poll_interval = poll_interval
        self._revoke_grace = revoke_grace
        self._lock = threading.Lock()  # guards _out, _poller and adopted
        self._out: dict[str, _Out] = {}  # Celery task id -> run out on Celery
        self._poller: threading.Thread | None = None
        self._wake = threading.Event()  # a new run is out, or closing: the poller looks now
        self._closed = False

    def __repr__(self) -> str:
        return f"CeleryExecutor({self.app.main or 'celery'!r}, queue={self.queue!r})"

    def check_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Raise ``TypeError`` unless the app's task serializer can carry the arguments (caller's thread)."""
        if self.app.conf.task_serializer == "json":
            check_json_arguments(args, kwargs)
        else:
            check_picklable_arguments(args, kwargs)

    def submit(self, job: Job, done: Done) -> _Out:
        """Send the run (a slot's thread); raise if the broker cannot take it."""
        if self._closed:
            raise RuntimeError("the executor is closed")
        if job.reference is None:
            raise ValueError(f"task {job.task_id!r} has no function reference to send")
        task_id = job_engine_key(self.namespace, job, self._incarnation)
        if job.seq is not None and not self._fresh and not self._first_send(task_id):
            return self._adopt(job, task_id, done)
        options: dict[str, Any] = {"task_id": task_id, "retry": False}
        if self.queue is not None:
            options["queue"] = self.queue
        if job.timeout is not None:
            # Celery's hard limit a little after the scheduler's deadline, which asks first.
            options["time_limit"] = job.timeout + 1.0
            options["soft_time_limit"] = job.timeout
        result = self.app.send_task(
            TASK_NAME, args=(job.reference, list(job.args), dict(job.kwargs)), **options
        )
        return self._watch(_Out(self, task_id, result, done))

    def _first_send(self, task_id: str) -> bool:
        """Mark ``task_id`` sent; whether it was its first send (a slot's thread; raises if Redis is down).

        The mark goes before the send, so a run on Celery always has one: a node that dies
        between the two leaves a mark and no run, and the node after it waits for that run
        until the task's ``timeout`` (the one window where a stored run without a timeout
        waits for ever; a run that ran twice is the other way round, and worse).
        """
        backend = self.app.backend
        client = getattr(backend, "client", None)  # a Redis backend's connection
        if client is not None and callable(getattr(client, "set", None)):
            expires = self.app.conf.result_expires  # the mark lasts as long as the result
            if isinstance(expires, timedelta):
                expires = expires.total_seconds()
            ttl = None if expires is None else max(1, int(expires))
            return bool(client.set(SENT_MARK + task_id, "1", nx=True, ex=ttl))
        # Another backend: no atomic mark; a run that started or ended is found, a queued one not.
        from celery import states  # noqa: PLC0415  (as in _outcome)

        return bool(self.app.AsyncResult(task_id).state == states.PENDING)

    def _adopt(self, job: Job, task_id: str, done: Done) -> _Out:
        """Wait for the outcome of a run sent before under this key, instead of sending it again."""
        logger.info(
            "run %s of task %r was sent to Celery before (task %s): waiting for its outcome, not resending",
            job.run,
            job.task_id,
            task_id,
        )
        return self._watch(_Out(self, task_id, self.app.AsyncResult(task_id), done), adopted=True)

    def _watch(self, out: _Out, *, adopted: bool = False) -> _Out:
        """Hand a run out on Celery to the poller (a slot's thread); ``adopted``: one sent before."""
        with self._lock:
            self.adopted += adopted
            self._out[out.id] = out
            if self._poller is None:
                self._poller = threading.Thread(target=self._poll, name="celery-executor-poller", daemon=True)
                self._poller.start()
        self._wake.set()
        return out

    def close(self) -> None:
        """Stop the poller; runs still out are left to Celery (the scheduler's thread)."""
        self._closed = True
        self._wake.set()
        with self._lock:
            poller = self._poller
        if poller is not None:
            poller.join(timeout=2.0)

    # -- the poller's thread --------------------------------------------------------------

    def _revoke(self, out: _Out) -> None:
        out.given_up_at = time.monotonic() + self._revoke_grace
        try:
            self.app.control.revoke(out.id, terminate=True, signal="SIGTERM")
        except Exception:  # the broker is down: the grace ends the run
            logger.warning("could not revoke Celery task %s", out.id, exc_info=True)

    def _poll(self) -> None:
        """Read the backend for every run out, end those that have ended; until closed (poller thread)."""
        while not self._closed:
            with self._lock:
                outs = list(self._out.values())
            for out in outs:
                outcome = self._outcome(out)
                if outcome is None:
                    continue
                with self._lock:
                    del self._out[out.id]
                value, error = outcome
                try:
                    out.done(value, error)
                except Exception:
                    logger.exception("a run's done callback failed")
            self._wake.wait(self._poll_interval)
            self._wake.clear()

    def _outcome(self, out: _Out) -> tuple[object, BaseException | None] | None:  # noqa: PLR0911
        """The run's outcome if the backend has it (or its revoke's grace is over); else ``None``."""
        # Imported here: the [celery] extra is needed only by whoever makes a CeleryExecutor.
        from billiard.exceptions import TimeLimitExceeded, WorkerLostError  # noqa: PLC0415
        from celery import states  # noqa: PLC0415
        from celery.exceptions import TaskRevokedError  # noqa: PLC0415

        try:
            state = out.result.state
        except Exception as error:  # the backend is down: the run's outcome is not known yet
            logger.debug("result backend unreachable for %s: %r", out.id, error)
            state = None
        if state == states.SUCCESS:
            return out.result.result, None
        if state in (states.FAILURE, states.REVOKED):
            failure = out.result.result
            if isinstance(failure, WorkerLostError):
                return None, ExecutorWorkerLostError(
                    f"the Celery worker running task {out.id} was lost: {failure}"
                )
            if isinstance(failure, TimeLimitExceeded):
                return None, TaskTimeoutError(f"Celery stopped task {out.id} at its time limit: {failure}")
            if isinstance(failure, TaskRevokedError) or state == states.REVOKED:
                return None, RunCancelled(f"Celery task {out.id} was revoked")
            if isinstance(failure, BaseException):
                return None, failure
            return None, RuntimeError(f"Celery task {out.id} failed: {failure!r}")
        if out.given_up_at is not None and time.monotonic() >= out.given_up_at:
            return None, RunCancelled(f"Celery task {out.id} was revoked (no worker confirmed it)")
        return None
