"""The timetable's side of a recurring task's policies: misses, catch-up runs, queued runs and jitter.

Part of the pure core (see ``actors/core/timetable.py``; a mixin whose state is the timetable's):
``actors/core/policies.py`` decides which due times run; this carries the decision out on the
task's record, the due heap and the effects. The plain path never comes here: a task with the
default policies skips every branch by one identity test (``spec.policies is DEFAULT_POLICIES``),
save for the counting of slots a run overran, which only a late run reaches.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING

from actors.core.policies import (
    CATCH_UP_LATEST,
    DEFAULT_POLICIES,
    MISSED_EVENTS,
    OVERLAP_QUEUE,
    REASON_CATCH_UP,
    REASON_OVERLAP,
    catch_up,
    jitter_delay,
    on_slot,
    slots_between,
)
from actors.core.publishing import Publishing
from actors.core.task_record import TaskRecord, TaskSpec
from actors.sync.claim import REPLACED
from actors.sync.token import request_stop
from messages import EventKind, FixedRate, TaskEvent

if TYPE_CHECKING:
    from actors.core.due_heap import DueHeap

__all__ = ["PolicyRuns", "grid_of", "grid_of_spec"]

Grid = Callable[[float], float | None]
"""A recurring task's slots on the clock: its first slot strictly after a time (``None``: none)."""


def grid_of(task: TaskRecord, wall_offset: float) -> Grid | None:
    """The slots of a fixed-rate or cron task on the clock (``wall_offset``: wall minus clock time).

    ``None`` for a task without a grid (one-time, fixed-delay).
    """
    return grid_of_spec(task.spec, wall_offset)


def grid_of_spec(spec: TaskSpec, wall_offset: float) -> Grid | None:
    """The slots of a task of ``spec`` on the clock (``grid_of``, for a spec not yet a task's)."""
    calendar = spec.calendar
    if calendar is not None:

        def cron_after(at: float) -> float | None:
            try:
                return calendar.next_fire(at + wall_offset) - wall_offset
            except ValueError:  # it fires no more
                return None

        return cron_after
    trigger = spec.trigger
    if isinstance(trigger, FixedRate):
        assert trigger.first_at is not None  # resolved when the task was made
        first, interval = trigger.first_at, trigger.interval

        def rate_after(at: float) -> float | None:
            try:
                slot = math.floor((at - first) / interval) + 1
            except (OverflowError, ValueError):
                return None
            slot = max(slot, 0)
            for _ in range(3):  # the division may round either way by a slot
                if first + slot * interval <= at:
                    slot += 1
                elif slot > 0 and first + (slot - 1) * interval > at:
                    slot -= 1
                else:
                    break
            return first + slot * interval

        return rate_after
    return None


class PolicyRuns(Publishing):
    """The policy half of the ``Timetable``'s run endings (a mixin: the state is the timetable's)."""

    if TYPE_CHECKING:  # the timetable's state this half uses
        _heap: DueHeap
        _want_missed: bool
        wall_offset: float
        _catching_up: dict[str, float]
        _manual: dict[str, tuple[float, float | None]]

    def _push_slot(self, task: TaskRecord) -> None:
        """Make a pending task wait for its due time plus its jitter (``due_at`` stays the slot)."""
        jitter = task.spec.policies.jitter
        if not jitter or (self._manual and task.task_id in self._manual):  # run_now's runs: no jitter
            self._heap.push(task, task.due_at)
            return
        seed = task.due_wall if task.due_wall is not None else task.due_at
        self._heap.push(task, task.due_at + jitter_delay(task.task_id, seed, jitter))

    def _publish_misses(
        self, task: TaskRecord, misses: list[tuple[float, str]], now: float, run: int | None = None
    ) -> None:
        """Count due times that did not get their run, and publish ``MISSED`` for (the newest of) them.

        Each names ``run``, the number the task's next run has (``run_count + 1`` when not given).
        """
        if not misses:
            return
        task.count_missed(len(misses))
        if not self._want_missed:
            return
        run = task.run_count + 1 if run is None else run
        events = self._effects.events
        name = task.label()
        for due_at, reason in misses[-MISSED_EVENTS:]:
            events.append(
                TaskEvent(
                    kind=EventKind.MISSED,
                    task_id=task.task_id,
                    name=name,
                    at=now,
                    run=run,
                    due_at=due_at,
                    reason=reason,
                )
            )

    def _set_due(self, task: TaskRecord, due_at: float) -> None:
        """Move a task's next due time (its wall-clock instant too, where it keeps one)."""
        task.due_at = due_at
        if task.spec.on_wall or task.store_seq is not None:
            task.due_wall = due_at + self.wall_offset if math.isfinite(due_at) else None

    def _overran(self, task: TaskRecord, ran_at: float, started_at: float | None, now: float) -> None:
        """A run due at ``ran_at`` ended at ``now``, ``task.due_at`` its next slot: count the slots skipped.

        The slots between the one that ran and the next were skipped: those due before the run
        started (or before ``now``, when it never started) passed while nothing ran
        (``"catch_up"``), the others came due during the run (``"overlap"``). With
        ``overlap="queue"`` the latest of the latter runs right after, instead. With
        ``catch_up="all"`` still catching up, the next slot runs instead of any skip.
        """
        grid = grid_of(task, self.wall_offset)
        if grid is None:
            return
        ran_at = on_slot(grid, ran_at)  # (a stored due time may sit a hair before its slot)
        policies = task.spec.policies
        if policies is not DEFAULT_POLICIES and self._catching_up:
            until = self._catching_up.get(task.task_id)
            if until is not None:
                following = grid(ran_at)
                if following is not None and following <= until:
                    self._set_due(task, following)
                    return
                del self._catching_up[task.task_id]
        following = grid(ran_at)
        if following is None or following >= task.due_at:
            return  # the plain case: the next slot is the one after the slot that ran
        skipped = slots_between(grid, ran_at, task.due_at, inclusive=False)
        since = now if started_at is None else started_at
        misses = [(slot, REASON_CATCH_UP if slot <= since else REASON_OVERLAP) for slot in skipped]
        queues = policies.overlap == OVERLAP_QUEUE or policies.replaces
        if queues and misses and misses[-1][1] == REASON_OVERLAP:
            queued, _ = misses.pop()
            self._set_due(task, queued)  # due already: it runs right after this run
        self._publish_misses(task, misses, now)

    def _watch_for_replacement(self, task: TaskRecord) -> None:
        """A run of an ``overlap="replace"`` task started: its next slot, when it comes, asks it to stop."""
        grid = grid_of(task, self.wall_offset)
        following = None if grid is None else grid(task.due_at)
        if following is not None and task.heap_seq is None:
            self._heap.push(task, following)  # a running task's entry: see _queue_due and _replace

    def _replace(self, task: TaskRecord) -> None:
        """A replacing task's next slot came while its run goes on: ask the run to stop (it runs next)."""
        claim = task.claim
        if claim is not None:
            request_stop(claim, REPLACED)

    def _caught_up(self, task: TaskRecord, now: float, *, restart: bool) -> bool:
        """Apply a pending task's ``catch_up`` policy to the due times that have passed at ``now``.

        On the live path (``restart=False``) only a task behind by more than one slot has
        anything to catch up; after a restart every due time before ``now`` passed while the
        scheduler was down. Returns whether the task's next run moved to a later time (it must
        wait again, rather than run now).
        """
        policies = task.spec.policies
        if policies.catch_up == CATCH_UP_LATEST or task.spec.trigger is None:
            return False
        grid = grid_of(task, self.wall_offset)
        if grid is None:  # fixed delay: one due time, run (all, latest) or skipped (none)
            if not restart or task.due_at >= now or policies.catch_up != "none":
                return False
            trigger = task.spec.trigger
            delay = getattr(trigger, "delay", 0.0)
            self._publish_misses(task, [(task.due_at, REASON_CATCH_UP)], now)
            self._set_due(task, now + delay)
            return True
        due_at = on_slot(grid, task.due_at)  # (a stored due time may sit a hair before its slot)
        if not restart:
            following = grid(due_at)
            if following is None or following > now:
                return False
        decision = catch_up(policies, grid, due_at, now, task.spec.misfire_grace)
        if decision is None:
            return False
        self._publish_misses(task, decision.missed, now)
        self._set_due(task, decision.due_at)
        if decision.until is not None and decision.until > decision.due_at:
            self._catching_up[task.task_id] = decision.until
        return not decision.run_now
