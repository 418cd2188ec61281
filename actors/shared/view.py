"""What a task of a shared store looks like to a caller: a stored row as a ``TaskInfo``.

On a shared store a durable task lives in the database, and any node may be running it; a
node's ``info``/``tasks``/``TaskHandle.info`` show it from its row (and the runs in flight on
every node). Pure: the row, the run in flight and the offset between the database's clock and
the node's come in; nothing is read here.
"""

from __future__ import annotations

import json
import math
import re
from datetime import UTC, datetime
from typing import Any

from actors.errors import DependencyFailedError, RemoteRunError
from actors.references import parse_reference
from actors.store.protocol import RunInFlight, StoredTask
from actors.store.trigger_json import StoredTrigger, decode_trigger
from messages import Cron, FixedDelay, FixedRate, Once, TaskInfo, TaskStatus, Trigger

__all__ = ["dependency_failed", "info_of", "name_of"]

# The stored text of a DependencyFailedError (the store's, or the core's: the same words).
_DEPENDENCY_FAILED = re.compile(
    r"DependencyFailedError: task .* was cancelled: task '(.*)', which it waited for"
)


# What decoding a column edited by hand into something no scheduler writes raises (a damaged
# row: actors/runtime/durable.py). A snapshot shows such a row as well as it can, never raises.
_DAMAGE = (ValueError, TypeError, KeyError, AttributeError, RecursionError)


def dependency_failed(last_error: str | None) -> DependencyFailedError | None:
    """The ``DependencyFailedError`` a cancelled row's stored error text is, or ``None`` if it is not one."""
    found = _DEPENDENCY_FAILED.match(last_error or "")
    if found is None:
        return None
    assert last_error is not None
    return DependencyFailedError(last_error.removeprefix("DependencyFailedError: "), found.group(1))


def name_of(row: StoredTask) -> str:
    """The task's name: the one it was given, else its function's qualified name (or its reference)."""
    name = _options(row).get("name")
    if isinstance(name, str):
        return name
    try:
        return parse_reference(row.fn_ref)[1]
    except _DAMAGE:
        return str(row.fn_ref)


def info_of(
    row: StoredTask,
    flight: RunInFlight | None,
    *,
    wall_offset: float,
    waiting_for: tuple[str, ...] = (),
    paused: bool = False,
) -> TaskInfo:
    """The snapshot of a stored task; ``flight`` is its run in flight on some node, if any.

    ``paused``: the row is paused (``TaskStatus.PAUSED`` while live, a run in flight or not,
    and no next run, as in memory).

    ``wall_offset`` is the database's clock (UTC epoch seconds) minus the node's clock, to turn
    stored times into clock times. ``waiting_for``: the ids a ``schedule_after`` row still
    waits for (its status is then ``WAITING``).
    """
    options = _options(row)
    status = TaskStatus(row.status)  # a stored status is a TaskStatus's value
    if flight is not None and flight.seq != row.seq:
        flight = None
    if status is TaskStatus.SCHEDULED and flight is not None and flight.started:
        status = TaskStatus.RUNNING
    elif status is TaskStatus.SCHEDULED and waiting_for:
        status = TaskStatus.WAITING
    if paused and row.live:  # a run in flight or not, as in memory
        status = TaskStatus.PAUSED
    next_wall = row.next_due if status is TaskStatus.SCHEDULED else None  # none while PAUSED
    error: BaseException | None = None
    if row.last_error is not None:
        error = dependency_failed(row.last_error) or RemoteRunError(row.last_error)
    return TaskInfo(
        task_id=row.task_id,
        name=name_of(row),
        trigger=_shown_trigger(row, wall_offset),
        status=status,
        run_count=row.run_count,
        failure_count=row.failure_count,
        consecutive_failures=row.consecutive_failures,
        next_run_at=None if next_wall is None else next_wall - wall_offset,
        last_error=error,
        next_run_wall=_wall(next_wall),
        last_traceback=row.last_error,
        end_reason=_end_reason(row, options),
        node=None if flight is None else flight.owner,
        waiting_for=waiting_for if status is TaskStatus.WAITING else (),
    )


def _options(row: StoredTask) -> dict[str, Any]:
    """The row's options; none if they do not decode (a damaged row)."""
    try:
        options = json.loads(row.options_json)
    except _DAMAGE:
        return {}
    return options if isinstance(options, dict) else {}


def _shown_trigger(row: StoredTask, wall_offset: float) -> Trigger:
    """The row's trigger; a damaged one shows as a one-time trigger, as its stand-in runs (once, failing)."""
    try:
        return _trigger(decode_trigger(row.trigger_json), row, wall_offset)
    except _DAMAGE:
        return _trigger(StoredTrigger(kind="once"), row, wall_offset)


def _trigger(trigger: StoredTrigger, row: StoredTask, wall_offset: float) -> Trigger:
    if trigger.kind == "rate":
        return FixedRate(trigger.rate, trigger.anchor - wall_offset)
    if trigger.kind == "delay":
        return FixedDelay(trigger.delay, 0.0)  # the store keeps the next due time, not the first
    if trigger.kind == "cron":
        return Cron(trigger.cron, trigger.tz)
    # A one-time task: due at its next due time; once ended, about when it ended.
    at = row.next_due if row.next_due is not None else row.updated_at
    return Once(at - wall_offset)


def _end_reason(row: StoredTask, options: dict[str, Any]) -> str | None:
    if row.status == "scheduled":
        return None
    if row.status == "failed":
        limit = options.get("max_consecutive_failures")
        if limit is not None and row.consecutive_failures >= limit:
            return f"stopped after {limit} consecutive failures (max_consecutive_failures={limit})"
        return "the run failed"
    return row.status


def _wall(stamp: float | None) -> datetime | None:
    if stamp is None or not math.isfinite(stamp):
        return None
    try:
        return datetime.fromtimestamp(stamp, UTC)
    except (OverflowError, ValueError, OSError):
        return None
