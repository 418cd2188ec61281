"""The executor protocol: how the scheduler hands a run to another engine (Celery, Dask, your own).

The scheduler still decides when and whether a run happens (the pure core deals it to one of
the executor's *slots*, as it deals a thread run to an idle worker); the slot, a worker actor
(``actors/runtime/executor_worker.py``), builds a ``Job`` and calls ``Executor.submit`` on its
own thread; the executor calls ``done`` once, from any thread, when the engine has the run's
outcome; ``Submission.interrupt`` asks the engine to stop the run (``cancel(interrupt=True)``,
or the task's ``timeout``); ``Executor.close`` is called once when the scheduler stops.

Three checks happen at the ``schedule_*`` call, on the caller's thread: an executor with
``remote = True`` gets its functions by reference (``"package.module:function"``), and its
``check_arguments`` says whether the engine can serialise a task's arguments.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["DEFAULT_MAX_IN_FLIGHT", "Done", "Executor", "Job", "Submission", "run_key"]

DEFAULT_MAX_IN_FLIGHT = 16
"""Runs an executor has out on its engine at once unless it says otherwise (``max_in_flight``)."""

Done = Callable[[object, BaseException | None], None]
"""How an executor reports a run's outcome: ``done(value, None)`` or ``done(None, error)``, once."""


def run_key(task_id: str, run: int, attempt: int = 1, seq: int | None = None) -> str:
    """The key of run ``run`` of task ``task_id`` on an engine: the same after a scheduler restart.

    ``"<task id>:<run>"``; a run's later attempts (its ``Retry``) are new engine tasks, so they
    get keys of their own: ``"<task id>:<run>:<attempt>"``. A stored task's keys name its row's
    incarnation too (``seq``: ``"<task id>@<seq>:<run>"``): derived from the row alone, so the
    node that takes a run over from one that died computes the key the dead one sent, and a
    task added again under the same id never meets the keys of the one it followed.
    """
    head = task_id if seq is None else f"{task_id}@{seq}"
    return f"{head}:{run}" if attempt == 1 else f"{head}:{run}:{attempt}"


@dataclass(frozen=True, slots=True)
class Job:
    """One run, as an executor sees it.

    ``key`` is ``run_key(task_id, run, attempt, seq)``: the engine's id for the run (a Celery task id,
    a Dask key), so a run re-sent after a scheduler crash is the same engine task, not a second one.
    ``seq`` is the stored row's incarnation, ``None`` for a memory task. A job with a ``seq`` may
    have been sent before under its key (by this scheduler before a restart, or by the node of a
    shared store that held the run and died while it was out): an executor that can find a run
    by its key should look for it first, and wait for that run's outcome instead of sending it
    again (``CeleryExecutor`` does; ``docs/executors.md``).
    ``reference`` is the function's ``"module:function"`` (``None`` only when the function has
    none: a local executor may still call ``fn``). ``timeout`` is the task's, in seconds: an
    engine that has time limits should use it as the run's.
    """

    key: str
    task_id: str
    run: int
    attempt: int
    fn: Callable[..., object]
    reference: str | None
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    timeout: float | None
    seq: int | None = None


class Submission(Protocol):
    """A run out on an engine, as ``Executor.submit`` returns it."""

    def interrupt(self) -> None:
        """Ask the engine to stop the run (any thread; may be called after ``done``: then a no-op).

        The run still ends through ``done`` (with the engine's error, or its value if it won the race).
        """


@runtime_checkable
class Executor(Protocol):
    """Runs a scheduler's runs elsewhere; register one with ``Scheduler(executors={"name": ...})``.

    Attributes:
        max_in_flight: How many of its runs may be out on the engine at once (at least 1): the
            scheduler keeps one slot, a thread that waits for the run's outcome, per run in flight;
            more due runs wait their turn in the scheduler.
        remote: Whether runs leave this process: then a task's function must be importable by
            reference and ``check_arguments`` must accept its arguments, at the ``schedule_*`` call.
    """

    max_in_flight: int
    remote: bool

    def check_arguments(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        """Raise ``TypeError`` if the engine cannot serialise these arguments (caller's thread)."""

    def submit(self, job: Job, done: Done) -> Submission:
        """Send ``job`` to the engine; return at once (on the slot's thread).

        Raising means the engine could not take it (it is down): the run fails with
        ``ExecutorUnavailableError`` naming the executor. Else ``done`` is called exactly once,
        from any thread, with the run's value or its error.
        """

    def close(self) -> None:
        """Let go of the engine (the scheduler's thread, once, as it stops; no run is out any more)."""
