"""An actor-based, in-process task scheduler on pykka.

The public API: ``Scheduler`` (the facade), the actors it runs (``SchedulerActor``,
``WorkerActor``, ``ProcessWorkerActor``, ``EventBus``), keyed actor timers (``ActorTimers``,
``TimersMixin``), clocks (``Clock``, ``MonotonicClock``, ``FakeClock``), ``TaskHandle``,
``Subscription``, ``current_run``/``RunContext``, ``Retry``, the stores (``Store``,
``SQLiteStore``) and the errors. The messages live in ``messages``.
"""

import logging

from actors.actor_timers import ActorTimers, TimersMixin
from actors.clock import Clock, FakeClock, MonotonicClock
from actors.errors import (
    DependencyFailedError,
    DuplicateTaskError,
    InvalidTransitionError,
    JobFileError,
    MissedRunError,
    ProcessDiedError,
    RemoteTraceback,
    RunCancelled,
    SchedulerError,
    SchedulerShutdownError,
    SchedulerStartError,
    StoreError,
    StoreLockedError,
    TaskTimeoutError,
    UnknownTaskError,
    UnpicklableExceptionError,
    UnpicklableResultError,
    WorkerLostError,
    WouldDeadlockError,
)
from actors.event_bus import EventBus
from actors.facade import Scheduler
from actors.handles import Subscription, TaskHandle
from actors.process_worker import ProcessWorkerActor
from actors.retry import Retry
from actors.run_context import RunContext, current_run
from actors.scheduler import SchedulerActor
from actors.store import SQLiteStore, Store
from actors.validation import MAX_PROCESSES, MAX_WORKERS
from actors.worker import WorkerActor

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "MAX_PROCESSES",
    "MAX_WORKERS",
    "ActorTimers",
    "Clock",
    "DependencyFailedError",
    "DuplicateTaskError",
    "EventBus",
    "FakeClock",
    "InvalidTransitionError",
    "JobFileError",
    "MissedRunError",
    "MonotonicClock",
    "ProcessDiedError",
    "ProcessWorkerActor",
    "RemoteTraceback",
    "Retry",
    "RunCancelled",
    "RunContext",
    "SQLiteStore",
    "Scheduler",
    "SchedulerActor",
    "SchedulerError",
    "SchedulerShutdownError",
    "SchedulerStartError",
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
