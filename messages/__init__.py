"""Plain data exchanged by the scheduler's actors: commands, reports, triggers and events.

Nothing here starts a thread, reads a clock or imports ``actors``.
"""

from messages.commands import (
    Cancel,
    FinalStateSink,
    Flush,
    Listener,
    Publish,
    QueryNextDue,
    QueryStats,
    QueryTask,
    QueryTasks,
    RunTask,
    Schedule,
    Settle,
    Shutdown,
    Subscribe,
    Tick,
    Unsubscribe,
    Waiter,
)
from messages.events import (
    TERMINAL_STATUSES,
    EventKind,
    SchedulerStats,
    TaskEvent,
    TaskId,
    TaskInfo,
    TaskStatus,
)
from messages.reports import Completed, Failed, WorkerExited
from messages.triggers import FixedDelay, FixedRate, Once, Trigger

__all__ = [
    "TERMINAL_STATUSES",
    "Cancel",
    "Completed",
    "EventKind",
    "Failed",
    "FinalStateSink",
    "FixedDelay",
    "FixedRate",
    "Flush",
    "Listener",
    "Once",
    "Publish",
    "QueryNextDue",
    "QueryStats",
    "QueryTask",
    "QueryTasks",
    "RunTask",
    "Schedule",
    "SchedulerStats",
    "Settle",
    "Shutdown",
    "Subscribe",
    "TaskEvent",
    "TaskId",
    "TaskInfo",
    "TaskStatus",
    "Tick",
    "Trigger",
    "Unsubscribe",
    "Waiter",
    "WorkerExited",
]
