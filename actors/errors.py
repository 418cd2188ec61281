"""The scheduler's exceptions. Each also derives from the builtin a caller would catch."""

from __future__ import annotations

from concurrent.futures import CancelledError


class SchedulerError(Exception):
    """Base of every error the scheduler raises on purpose."""


class UnknownTaskError(SchedulerError, KeyError):
    """No live task, and none in the finished-task history, has this id."""

    def __str__(self) -> str:
        # KeyError's __str__ repr()s its argument; keep the sentence readable.
        return str(self.args[0]) if self.args else ""


class DuplicateTaskError(SchedulerError, ValueError):
    """A live task already has this id."""


class SchedulerShutdownError(SchedulerError, RuntimeError):
    """The scheduler has been shut down and takes no new work."""


class WorkerLostError(SchedulerError):
    """The worker running a task stopped before reporting; the run is marked failed with this."""


class StoreError(SchedulerError, OSError):
    """A store cannot be opened, read or written; the message names the file (or server) and why."""


class StoreLockedError(StoreError):
    """Another live scheduler holds this store (one scheduler per SQLite file)."""


class ProcessDiedError(WorkerLostError):
    """The worker process running a task died (``os._exit``, a signal, a crash) before it answered."""


class JobFileError(SchedulerError, ValueError):
    """A job file does not validate. ``problems`` lists every problem found, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class InvalidTransitionError(SchedulerError, RuntimeError):
    """A task was asked to make a move its state does not allow: always a bug in the scheduler."""


class WouldDeadlockError(SchedulerError, RuntimeError):
    """A blocking call was made from a thread it would wait for (a task or listener of this scheduler)."""


class SchedulerStartError(SchedulerError, RuntimeError):
    """The scheduler could not start its threads (for example, the system refused a new thread)."""


class RemoteTraceback(SchedulerError):
    """The traceback of an exception raised in a worker process, as text.

    Attached as the ``__cause__`` of the exception re-raised in the parent, the way
    ``concurrent.futures.ProcessPoolExecutor`` does, so a printed traceback shows where the task
    failed in the child below where the call failed in the parent.
    """

    def __init__(self, traceback: str) -> None:
        super().__init__(traceback)
        self.traceback = traceback

    def __str__(self) -> str:
        return f'\n"""\n{self.traceback}"""'


class UnpicklableExceptionError(SchedulerError):
    """A task in a worker process raised an exception that cannot be sent back to the parent.

    It stands in for that exception: ``error_type`` is its qualified type name, ``error_message``
    its ``str()``, ``traceback`` the formatted traceback from the child, and ``reason`` why it
    could not be pickled (or unpickled).
    """

    def __init__(self, error_type: str, error_message: str, traceback: str, reason: str) -> None:
        super().__init__(
            f"the task raised {error_type}: {error_message} (in the worker process; the exception "
            f"itself cannot be sent back: {reason})"
        )
        self.error_type = error_type
        self.error_message = error_message
        self.traceback = traceback
        self.reason = reason

    def __reduce__(self) -> tuple[type[UnpicklableExceptionError], tuple[str, str, str, str]]:
        # Exception's default reduce passes only ``args`` (the sentence) back to __init__.
        return type(self), (self.error_type, self.error_message, self.traceback, self.reason)


class SharedStoreUnsupportedError(SchedulerError, ValueError):
    """An option a shared store (PostgreSQL) cannot keep for a durable task: raised at the call.

    No option raises it today: every option works on every store (``docs/persistence.md``, the
    store-support table). It was ``overlap="allow"``'s, before the runs of such a task went on
    beside one another under one lease (``docs/scale-out.md``); it stays, exported, for an
    option a shared store may not keep in the future, and for code that catches it.
    """


class ResultNotKeptError(SchedulerError, LookupError):
    """A ``keep_result`` task's run completed on another node, but its value was not kept.

    A value is kept only when it is JSON data of at most 64 KiB (``docs/lifecycle.md``,
    "History"); ``reason`` says why this one was not (not JSON data, too large, or its run
    record has left the store's ledger). The run still counts ``COMPLETED``, and the node that
    ran it returns the value from its handle as usual. Raised by ``TaskHandle.result()`` on the
    other nodes.
    """

    def __init__(self, task_id: str, reason: str) -> None:
        super().__init__(f"task {task_id!r} completed on another node, but its result was not kept: {reason}")
        self.task_id = task_id
        self.reason = reason

    def __reduce__(self) -> tuple[object, ...]:
        return type(self), (self.task_id, self.reason)


class UnpicklableResultError(SchedulerError, TypeError):
    """A task in a worker process returned a value that cannot be pickled back to the parent."""


class NoWorkerProcessesError(SchedulerError, RuntimeError):
    """A run of an ``executor="process"`` task came due on a scheduler without worker processes.

    Only a task loaded from a store gets so far (``schedule_*`` refuses such a task with a
    ``ValueError``): each of its runs fails with this error, and the rest of the store runs.
    """


class SchedulerInternalError(SchedulerError, RuntimeError):
    """The scheduler failed to answer a request (a bug: it is logged with its traceback).

    Raised by the call that asked, instead of a reply of ``None``; the scheduler carries on.
    """


class MissedRunError(SchedulerError):
    """A run was not started: it would have started later than the task's ``misfire_grace``."""


class RemoteRunError(SchedulerError):
    """A task's run failed on another node of a shared store; only its error text is known here.

    ``error`` is that text as the store keeps it (``"TypeName: message"``). Raised by
    ``TaskHandle.result()`` and shown as ``TaskInfo.last_error`` for such a task; a run that
    failed on this node raises its own exception instead.
    """

    def __init__(self, error: str) -> None:
        super().__init__(f"the task's last run failed on another node: {error}")
        self.error = error


class RunCancelled(SchedulerError):
    """Raised inside a run, by ``current_run().check()``, once a stop of the run was requested.

    A stop is requested by ``cancel(interrupt=True)`` or by the task's ``timeout``. A run that
    ends by raising it after an interrupt ends ``CANCELLED`` (not a failure); after a timeout
    it counts as failed with ``TaskTimeoutError``.
    """


class TaskTimeoutError(SchedulerError, TimeoutError):
    """A run took longer than its task's ``timeout`` (and stopped, or was abandoned, only after)."""


class DependencyFailedError(SchedulerError, CancelledError):
    """A task of ``schedule_after`` ended ``CANCELLED`` because a task it waited for did not complete.

    ``dependency`` is the id of that task; ``result()`` of the dependent raises this (it is a
    ``concurrent.futures.CancelledError`` too).
    """

    def __init__(self, message: str, dependency: str) -> None:
        """Make the error; ``dependency`` names the task that failed or was cancelled."""
        super().__init__(message)
        self.dependency = dependency


class ExecutorUnavailableError(SchedulerError, ConnectionError):
    """A run could not be handed to its executor's engine (Celery, Dask...): it is down or unreachable.

    The run counts ``FAILED`` with this error (its message names the executor and the engine's
    own error), the task's ``Retry`` applies, and the scheduler goes on with everything else.
    """


class RunLostError(SchedulerError, RuntimeError):
    """A run on a shared store was lost with its node too many times in a row, so it ends ``FAILED``.

    Each time a node took the run, started it, and then died or stalled past its lease with it
    (``kill -9``, an out-of-memory kill, a task that ends its process), another node took it
    again: after ``PostgresStore(max_lost_runs=...)`` such losses (3 by default) the next node
    does not run it but fails it with this error (the message names the task and the count),
    so a task that kills whatever runs it is not retried for ever. ``task_id`` and ``losses``
    say which and how many.
    """

    def __init__(self, task_id: str, losses: int) -> None:
        """Make the error for ``task_id``, whose run was lost ``losses`` times in a row."""
        super().__init__(
            f"the run of task {task_id!r} was lost with its node {losses} times in a row "
            "(each node that started it died or stalled past its lease): not run again"
        )
        self.task_id = task_id
        self.losses = losses

    def __reduce__(self) -> tuple[type[RunLostError], tuple[str, int]]:
        return (type(self), (self.task_id, self.losses))


class ExecutorWorkerLostError(WorkerLostError):
    """The engine's worker running a run died mid-run (a Celery ``WorkerLostError``, a Dask ``KilledWorker``).

    The run counts ``FAILED`` with this error, and the task's ``Retry`` applies.
    """
