"""Operating a durable task of a shared store: pause, resume, run now, reschedule, in the store.

On a shared store a durable task lives in its row, and a node holds it only while it runs one
of its runs (``actors/shared/node.py``). So ``SharedNode.operate`` sends these operations to
the store, whichever node calls them and whichever holds the task: each is one statement,
committed before the reply (``actors/store/postgres_operations.py``). The node that holds or
next claims the row obeys: a paused row is not claimed and its claimed run does not start; a
``run_now`` run is claimable at once (``Lease.grid_due``), or, with a run in flight on any node,
as the task's overlap policy says (``_overlap_of``: refused, or after that run, which
``"replace"`` asks to make way); a new trigger is in the row. The
node that made the change publishes ``PAUSED``/``RESUMED``, as the one whose cancel won
publishes ``CANCELLED``.

What the store needs computed, this computes: a fixed-delay task's delay (its resume), the
overlap policy and the slot after a run in flight (a ``run_now``), a new
trigger's column and first due time on the database's clock (``now`` plus the core's wall
offset, which on a shared node is the database's).

Runs on the scheduler actor's thread (``SharedNode.operate``).
"""

from __future__ import annotations

from typing import assert_never

from actors.core.operations import first_due, respec
from actors.core.policies import OVERLAP_REPLACE, OVERLAP_SKIP, on_slot
from actors.core.policy_runs import grid_of_spec
from actors.core.task_record import TaskSpec
from actors.core.timetable import Timetable
from actors.runtime.durable import stored_spec, trigger_json
from actors.runtime.operations import Operation
from actors.runtime.stored_columns import ColumnDamage
from actors.shared.view import name_of
from actors.store.protocol import SharedStore
from actors.store.trigger_json import decode_trigger
from messages import EventKind, Pause, Reschedule, Resume, RunNow, TaskEvent, Trigger

__all__ = ["operate_stored"]

_PLAIN = TaskSpec()  # respec keeps a spec's options; the row keeps its own, only the trigger goes in


def operate_stored(
    store: SharedStore, message: Operation, core: Timetable, now: float
) -> tuple[bool | ValueError, TaskEvent | None]:
    """Apply ``message`` to the stored row of its task; the reply, and the event to publish.

    Raises:
        StoreError: the store failed (nothing changed, or the statement's commit is unknown).
    """
    task_id = message.task_id
    kind: EventKind | None = None
    match message:
        case Pause():
            done = store.pause(task_id)
            kind = EventKind.PAUSED
        case Resume():
            done = store.resume(task_id, delay=_delay_of(store, task_id))
            kind = EventKind.RESUMED
        case RunNow():
            after_run, replace = _overlap_of(store, task_id, core.wall_offset)
            done = store.run_now(task_id, after_run=after_run, replace=replace)
        case Reschedule(_, trigger):
            try:
                column, next_due = _new_trigger(trigger, now, core.wall_offset)
            except ValueError as error:  # a Cron that never fires: nothing changed
                return error, None
            done = store.reschedule(task_id, column, next_due)
        case _:
            assert_never(message)
    if not done or kind is None or kind not in core.wanted:
        return done, None
    row = store.get(task_id)
    name = task_id if row is None else name_of(row)
    return True, TaskEvent(kind=kind, task_id=task_id, name=name, at=now)


def _delay_of(store: SharedStore, task_id: str) -> float | None:
    """A fixed-delay task's delay (it resumes ``delay`` after now); ``None`` for any other."""
    row = store.get(task_id)
    if row is None or not row.live:
        return None
    try:
        stored = decode_trigger(row.trigger_json)
    except (ValueError, TypeError, KeyError):  # a damaged row keeps its due time
        return None
    return stored.delay if stored.kind == "delay" else None


def _overlap_of(store: SharedStore, task_id: str, wall_offset: float) -> tuple[float | None, bool]:
    """What a ``run_now`` of a task whose run is in flight (on any node) may do: its overlap policy.

    ``(after_run, replace)``: ``after_run`` is the slot the task waits for after the run in
    flight (UTC epoch seconds: the grid's slot after the row's due time, which is that run's; a
    fixed-delay task's counts from the extra run's end, so any time serves), ``None`` for
    ``"skip"`` and a one-time task (its run in flight is its one run: refused, as in memory);
    ``replace``: the run in flight is asked to make way. If no run is in flight the store
    ignores both.
    """
    row = store.get(task_id)
    if row is None or not row.live or row.next_due is None:
        return None, False
    try:
        spec = stored_spec(row, wall_offset)
    except ColumnDamage:  # a damaged row: as "skip"
        return None, False
    overlap = spec.policies.overlap
    if spec.trigger is None or overlap == OVERLAP_SKIP:
        return None, False
    due = float(row.next_due)
    grid = grid_of_spec(spec, wall_offset)
    following = None if grid is None else grid(on_slot(grid, due - wall_offset))
    after_run = due if following is None else following + wall_offset
    return after_run, overlap == OVERLAP_REPLACE


def _new_trigger(trigger: Trigger, now: float, wall_offset: float) -> tuple[str, float]:
    """The ``trigger_json`` of ``trigger`` and its first due time (UTC epoch seconds), from ``now``.

    Raises:
        ValueError: a ``Cron`` that does not parse or never fires.
    """
    spec = respec(_PLAIN, trigger, now=now)
    _, due_wall = first_due(spec, trigger, now=now, wall_offset=wall_offset, durable=True)
    assert due_wall is not None  # durable: a wall-clock instant
    return trigger_json(spec, wall_offset), due_wall
