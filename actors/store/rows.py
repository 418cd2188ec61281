"""The plain data a store trades: what it keeps of a task and of a run, and their checks.

Frozen, slotted rows, free of any backend (``actors/store/protocol.py`` is the contract that
trades them, and re-exports them): ``TaskDefinition`` (a new task), ``StoredTask`` (a row as it
is), ``TaskUpdate`` (what a run changed), ``LedgerRow`` (one run in the ledger), the stored
statuses and ``IfExists``. Times are UTC epoch seconds; JSON is kept verbatim.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal, final, get_args

from actors.store.edges import Dependency
from messages.events import TERMINAL_STATUSES as TERMINAL_TASK_STATUSES
from messages.events import StoredStatus

__all__ = [
    "LIVE_STATUS",
    "STATUSES",
    "TERMINAL_STATUSES",
    "IfExists",
    "LedgerRow",
    "StoredStatus",
    "StoredTask",
    "TaskDefinition",
    "TaskUpdate",
    "check_batch",
    "check_definitions",
    "check_if_exists",
]

STATUSES: Final[frozenset[str]] = frozenset(get_args(StoredStatus))
LIVE_STATUS: Final = "scheduled"
TERMINAL_STATUSES: Final[frozenset[str]] = frozenset(status.value for status in TERMINAL_TASK_STATUSES)
"""The values of ``messages.TERMINAL_STATUSES``: the stored statuses a row never leaves."""

IfExists = Literal["error", "keep", "replace"]
"""What ``Store.add`` does when the task id is live: raise, keep the stored row, or replace it."""

_IF_EXISTS: Final[frozenset[str]] = frozenset(get_args(IfExists))


def _check_time(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, float | int) or not math.isfinite(value):
        raise TypeError(f"{name} must be a finite number of UTC epoch seconds, got {value!r}")


def _check_count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be an int >= 0, got {value!r}")


def _check_text(name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {value!r}")


def check_if_exists(if_exists: object) -> None:
    """Raise ``ValueError`` unless ``if_exists`` is one of ``IfExists``."""
    if if_exists not in _IF_EXISTS:
        raise ValueError(f"if_exists must be 'error', 'keep' or 'replace', got {if_exists!r}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskDefinition:
    """A task as the scheduler asks the store to keep it: what ``Store.add`` takes.

    Exactly the fields a ``replace`` swaps in; the store adds the rest (``seq``, status,
    counters). The JSON fields are opaque to the store and come back verbatim.

    Attributes:
        task_id: The task's id (given by the caller, or minted ``"task-<n>"``).
        fn_ref: The function's reference, ``"package.module:qualified.name"``.
        args_json: The positional arguments, as JSON text.
        kwargs_json: The keyword arguments, as JSON text.
        trigger_json: The trigger, as JSON text.
        options_json: Everything else the scheduler needs to rebuild the task, as JSON text.
        next_due: When the next run is due (UTC epoch seconds); ``None`` if not known, and
            for a task that waits (``after``): the store sets it when they have completed.
        after: The stored tasks it waits for (``schedule_after``), not completed yet: ``add``
            keeps one edge each, in the same transaction as the row (``KeepsDependencies``).
    """

    task_id: str
    fn_ref: str
    args_json: str
    kwargs_json: str
    trigger_json: str
    options_json: str
    next_due: float | None
    after: tuple[Dependency, ...] = ()

    def __post_init__(self) -> None:
        due = self.next_due
        if (  # the common case in one expression (add_many builds thousands): exact types, finite due
            type(self.task_id) is str
            and self.task_id
            and type(self.fn_ref) is str
            and type(self.args_json) is str
            and type(self.kwargs_json) is str
            and type(self.trigger_json) is str
            and type(self.options_json) is str
            and (due is None or (type(due) is float and due - due == 0.0))
            and self.after == ()
        ):
            return
        if not isinstance(self.task_id, str) or not self.task_id:
            raise TypeError(f"task_id must be a non-empty str, got {self.task_id!r}")
        for name in ("fn_ref", "args_json", "kwargs_json", "trigger_json", "options_json"):
            _check_text(name, getattr(self, name))
        _check_time("next_due", self.next_due, optional=True)
        if not isinstance(self.after, tuple) or not all(isinstance(d, Dependency) for d in self.after):
            raise TypeError(f"after must be a tuple of Dependency, got {self.after!r}")


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class StoredTask:
    """One stored task as the store holds it: its definition, status and counters.

    Attributes:
        task_id: The task's id.
        seq: The row's incarnation: assigned when the row was inserted, kept by a
            ``replace``, never reused. Live tasks load in ``seq`` order.
        fn_ref: The function's reference.
        args_json: The positional arguments, as JSON text.
        kwargs_json: The keyword arguments, as JSON text.
        trigger_json: The trigger, as JSON text.
        options_json: The scheduler's other options, as JSON text.
        status: ``"scheduled"`` (live) or a terminal status.
        next_due: When the next run is due (UTC epoch seconds); ``None`` when terminal or
            not known (for instance a fixed-delay task whose run was in flight).
        run_count: Runs finished so far.
        failure_count: Runs that failed so far.
        consecutive_failures: Runs that failed since the last one that did not.
        last_error: The last failed run's error text, if any.
        last_outcome: The last run's outcome (``"completed"``, ``"failed"``, ...), if any.
        updated_at: When the row was last written (UTC epoch seconds, the store's clock).
    """

    task_id: str
    seq: int
    fn_ref: str
    args_json: str
    kwargs_json: str
    trigger_json: str
    options_json: str
    status: StoredStatus
    next_due: float | None
    run_count: int
    failure_count: int
    consecutive_failures: int
    last_error: str | None
    last_outcome: str | None
    updated_at: float

    @property
    def live(self) -> bool:
        """Whether the task is still scheduled (not completed, failed or cancelled)."""
        return self.status == LIVE_STATUS


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class TaskUpdate:
    """A task's new state after a run, or at its end: one element of ``Store.save``.

    Counters are absolute values (the scheduler's), not increments, so saving the same
    update twice is harmless.

    Attributes:
        task_id: The task's id.
        seq: The incarnation this update is for (``StoredTask.seq``); an update whose
            ``seq`` is no longer stored under ``task_id`` is ignored.
        status: The task's new status.
        next_due: Its next due time (UTC epoch seconds); must be ``None`` when terminal.
        run_count: Runs finished so far.
        failure_count: Runs that failed so far.
        consecutive_failures: Runs that failed since the last one that did not.
        last_error: The last failed run's error text, if any.
        last_outcome: The last run's outcome, if any.
        fence: For a shared store only: the fence of the ``Lease`` this outcome is for. The
            update is then applied only while the row is still owned by this node with that
            fence, and applying it gives the row up (the lease ends); if it is fenced out,
            the ledger rows of the same ``save`` for its ``seq`` are dropped too. ``None``:
            applied whoever owns the row (a backend without leases ignores the field).
        paused: Whether the task is paused (``Scheduler.pause``); ``None`` leaves the stored
            flag as it is. Kept by a store that ``KeepsPaused``; others ignore it.
        trigger_json: The task's new trigger, as JSON text (``Scheduler.reschedule``); ``None``
            leaves the stored trigger as it is. Kept by a plain ``Store`` (SQLite); a shared
            store writes a new trigger with its own ``SharedStore.reschedule``.
        hold: With a ``fence``: applied as any fenced update, but the lease goes on (an
            ``overlap="allow"`` task's run ended while others of it go on under the same
            lease, or its next slot came). A backend without leases ignores it.
    """

    task_id: str
    seq: int
    status: StoredStatus
    next_due: float | None
    run_count: int
    failure_count: int
    consecutive_failures: int
    last_error: str | None
    last_outcome: str | None
    fence: int | None = None
    paused: bool | None = None
    trigger_json: str | None = None
    hold: bool = False

    def __post_init__(self) -> None:
        _check_text("task_id", self.task_id)
        _check_text("trigger_json", self.trigger_json, optional=True)
        if self.paused is not None and not isinstance(self.paused, bool):
            raise TypeError(f"paused must be a bool or None, got {self.paused!r}")
        if not isinstance(self.hold, bool):
            raise TypeError(f"hold must be a bool, got {self.hold!r}")
        _check_count("seq", self.seq)
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {sorted(STATUSES)}, got {self.status!r}")
        _check_time("next_due", self.next_due, optional=True)
        if self.next_due is not None and self.status != LIVE_STATUS:
            raise ValueError(f"a {self.status} task has no next due time, got {self.next_due!r}")
        _check_count("run_count", self.run_count)
        _check_count("failure_count", self.failure_count)
        _check_count("consecutive_failures", self.consecutive_failures)
        _check_text("last_error", self.last_error, optional=True)
        _check_text("last_outcome", self.last_outcome, optional=True)
        if self.fence is not None:
            _check_count("fence", self.fence)


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerRow:
    """One finished run, as kept in the run ledger. Unique per ``(task_seq, run)``.

    Attributes:
        task_id: The task's id.
        task_seq: The task's incarnation (``StoredTask.seq``): run numbers start again at 1
            when a finished task's id is scheduled afresh, so the id alone is not a key.
        run: The run's number within the task, from 1.
        due: When the run was due (UTC epoch seconds).
        started: When it started; ``None`` if it never did (a missed run).
        finished: When its outcome was decided.
        outcome: ``"completed"``, ``"failed"``, ``"missed"``, ... (the store keeps any
            non-empty text, so new outcomes need no schema change).
        error: The error text of a failed run, if any.
        attempt: Which attempt of the run this outcome ended (``Retry``), from 1.
        reason: Why a missed run was missed (``"misfire"``, ...), else ``None``.
        node: The node that ran it, on a shared store (``SharedStore.node``); else ``None``.
        manual: Whether it was an extra run outside the schedule (``run_now``).
        value_json: The run's return value as JSON text, for a task with ``keep_result``
            whose value is JSON data of at most 64 KiB (``actors.core.run_log``); else ``None``.
        value_note: Why a ``keep_result`` run's value was not kept (not JSON data, too
            large), else ``None``.

    The public face of a row is ``actors.RunRecord`` (clock times and aware datetimes, the
    value decoded): this is the store's own row, in UTC epoch seconds and JSON text.
    """

    task_id: str
    task_seq: int
    run: int
    due: float
    started: float | None
    finished: float
    outcome: str
    error: str | None
    attempt: int = 1
    reason: str | None = None
    node: str | None = None
    manual: bool = False
    value_json: str | None = None
    value_note: str | None = None

    def __post_init__(self) -> None:
        _check_text("task_id", self.task_id)
        _check_count("task_seq", self.task_seq)
        if isinstance(self.run, bool) or not isinstance(self.run, int) or self.run < 1:
            raise ValueError(f"run must be an int >= 1, got {self.run!r}")
        _check_time("due", self.due, optional=False)
        _check_time("started", self.started, optional=True)
        _check_time("finished", self.finished, optional=False)
        if not isinstance(self.outcome, str) or not self.outcome:
            raise ValueError(f"outcome must be a non-empty str, got {self.outcome!r}")
        _check_text("error", self.error, optional=True)
        if isinstance(self.attempt, bool) or not isinstance(self.attempt, int) or self.attempt < 1:
            raise ValueError(f"attempt must be an int >= 1, got {self.attempt!r}")
        _check_text("reason", self.reason, optional=True)
        _check_text("node", self.node, optional=True)
        if not isinstance(self.manual, bool):
            raise TypeError(f"manual must be a bool, got {self.manual!r}")
        _check_text("value_json", self.value_json, optional=True)
        _check_text("value_note", self.value_note, optional=True)


def check_batch(updates: Sequence[TaskUpdate], runs: Sequence[LedgerRow]) -> None:
    """Raise ``TypeError`` unless ``updates`` and ``runs`` hold what their names say."""
    for update in updates:
        if not isinstance(update, TaskUpdate):
            raise TypeError(f"updates must hold TaskUpdate objects, got {update!r}")
    for record in runs:
        if not isinstance(record, LedgerRow):
            raise TypeError(f"runs must hold LedgerRow objects, got {record!r}")


def check_definitions(tasks: Sequence[TaskDefinition]) -> None:
    """Raise ``TypeError`` unless ``tasks`` holds ``TaskDefinition`` objects only (``add_many``)."""
    for task in tasks:
        if not isinstance(task, TaskDefinition):
            raise TypeError(f"tasks must hold TaskDefinition objects, got {task!r}")
