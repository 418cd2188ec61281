"""An actor-based, in-process task scheduler on pykka.

The public API: ``Scheduler`` (the facade), the actors it runs (``SchedulerActor``,
``WorkerActor``, ``EventBus``), clocks (``Clock``, ``MonotonicClock``, ``FakeClock``),
``TaskHandle``, ``Subscription`` and the errors. The messages live in ``messages``.
"""

import logging

from actors.clock import Clock, FakeClock, MonotonicClock
from actors.errors import (
    DuplicateTaskError,
    InvalidTransitionError,
    JobFileError,
    ProcessDiedError,
    SchedulerError,
    SchedulerShutdownError,
    SchedulerStartError,
    StoreError,
    StoreLockedError,
    UnknownTaskError,
    WorkerLostError,
    WouldDeadlockError,
)
from actors.event_bus import EventBus
from actors.facade import Scheduler
from actors.handles import Subscription, TaskHandle
from actors.scheduler import SchedulerActor
from actors.validation import MAX_WORKERS
from actors.worker import WorkerActor

logging.getLogger(__name__).addHandler(logging.NullHandler())

__all__ = [
    "MAX_WORKERS",
    "Clock",
    "DuplicateTaskError",
    "EventBus",
    "FakeClock",
    "InvalidTransitionError",
    "JobFileError",
    "MonotonicClock",
    "ProcessDiedError",
    "Scheduler",
    "SchedulerActor",
    "SchedulerError",
    "SchedulerShutdownError",
    "SchedulerStartError",
    "StoreError",
    "StoreLockedError",
    "Subscription",
    "TaskHandle",
    "UnknownTaskError",
    "WorkerActor",
    "WorkerLostError",
    "WouldDeadlockError",
]
