"""An actor-based, in-process task scheduler on pykka.

The public API: ``Scheduler`` (the facade), the actors it runs (``SchedulerActor``,
``WorkerActor``, ``ProcessWorkerActor``, ``EventBus``), keyed actor timers (``ActorTimers``,
``TimersMixin``), clocks (``Clock``, ``MonotonicClock``, ``FakeClock``), ``TaskHandle``,
``Subscription``, ``EventKind`` (also in ``messages``), ``current_run``/``RunContext``,
``Retry``, the stores (``Store``,
``SQLiteStore``; ``SharedStore`` and ``PostgresStore`` for a schedule several schedulers share,
with ``SharedTaskHandle`` and ``DatabaseClock``) and the errors. The messages live in
``messages``.
"""

import logging
from typing import TYPE_CHECKING

from actors.api.actor_timers import ActorTimers, TimersMixin
from actors.api.facade import Scheduler
from actors.api.handles import Subscription, TaskHandle
from actors.api.plumbing import LATEST_DUE
from actors.api.shared_handles import SharedTaskHandle
from actors.core.retry import Retry
from actors.errors import (
    DependencyFailedError,
    DuplicateTaskError,
    ExecutorUnavailableError,
    ExecutorWorkerLostError,
    InvalidTransitionError,
    JobFileError,
    MissedRunError,
    NoWorkerProcessesError,
    ProcessDiedError,
    RemoteRunError,
    RemoteTraceback,
    ResultNotKeptError,
    RunCancelled,
    RunLostError,
    SchedulerError,
    SchedulerInternalError,
    SchedulerShutdownError,
    SchedulerStartError,
    SharedStoreUnsupportedError,
    StoreError,
    StoreLockedError,
    TaskTimeoutError,
    UnknownTaskError,
    UnpicklableExceptionError,
    UnpicklableResultError,
    WorkerLostError,
    WouldDeadlockError,
)
from actors.references import MAX_JSON_DEPTH
from actors.runtime.event_bus import EventBus
from actors.runtime.executor_protocol import Executor
from actors.runtime.limits import MAX_PROCESSES, MAX_WORKERS
from actors.runtime.process_worker import ProcessWorkerActor
from actors.runtime.run_context import RunContext, current_run
from actors.runtime.scheduler import SchedulerActor
from actors.runtime.worker import WorkerActor
from actors.shared.clock import DatabaseClock
from actors.store import SharedStore, SQLiteStore, Store
from actors.sync.clock import Clock, FakeClock, MonotonicClock
from messages import (
    EventKind,  # what subscribe(kinds=...) takes: here too, beside Scheduler
    RunRecord,  # what Scheduler.history returns: here too
)

if TYPE_CHECKING:
    from actors.store.postgres import PostgresStore

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "LATEST_DUE",
    "MAX_JSON_DEPTH",
    "MAX_PROCESSES",
    "MAX_WORKERS",
    "ActorTimers",
    "Clock",
    "DatabaseClock",
    "DependencyFailedError",
    "DuplicateTaskError",
    "EventBus",
    "EventKind",
    "Executor",
    "ExecutorUnavailableError",
    "ExecutorWorkerLostError",
    "FakeClock",
    "InvalidTransitionError",
    "JobFileError",
    "MissedRunError",
    "MonotonicClock",
    "NoWorkerProcessesError",
    "PostgresStore",
    "ProcessDiedError",
    "ProcessWorkerActor",
    "RemoteRunError",
    "RemoteTraceback",
    "ResultNotKeptError",
    "Retry",
    "RunCancelled",
    "RunContext",
    "RunLostError",
    "RunRecord",
    "SQLiteStore",
    "Scheduler",
    "SchedulerActor",
    "SchedulerError",
    "SchedulerInternalError",
    "SchedulerShutdownError",
    "SchedulerStartError",
    "SharedStore",
    "SharedStoreUnsupportedError",
    "SharedTaskHandle",
    "Store",
    "StoreError",
    "StoreLockedError",
    "Subscription",
    "TaskHandle",
    "TaskTimeoutError",
    "TimersMixin",
    "UnknownTaskError",
    "UnpicklableExceptionError",
    "UnpicklableResultError",
    "WorkerActor",
    "WorkerLostError",
    "WouldDeadlockError",
    "current_run",
]


def __getattr__(name: str) -> object:
    """Import ``PostgresStore`` when it is first asked for (it needs psycopg, an optional extra)."""
    if name == "PostgresStore":
        from actors import store  # noqa: PLC0415

        return store.PostgresStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
