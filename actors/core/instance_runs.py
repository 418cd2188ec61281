"""Overlapping runs of one task (``overlap="allow"``, ``max_instances=N``): each run its own record.

Part of the pure core (see ``actors/core/timetable.py``; a mixin whose state is the timetable's).
Everything else in the core holds a task's run on the task's record: its state (``HANDED``), its
claim, its token, its run number (``run_count + 1``). A task that may have several runs going
at once cannot, so each of its runs gets a record of its own, a ``RunInstance``, which the
dealer, the workers and the reports treat as any record, and whose end is routed back to its
task (its ``parent``) here: the task counts the run, keeps its run record, publishes its events.

The task itself never runs. It waits in the due heap for its next slot as any pending task
does; when the slot comes (``_due_allowed``) a run instance is made and queued if fewer than
``max_instances`` runs are going, else the slot is missed (``"overlap"``, as ``"skip"``'s),
and the task waits for its next slot at once. ``run_now`` makes one more instance the same way
(``_run_instance_now``), leaving the grid alone.

- Each instance has its own token; it may start only while its task's token is ``FREE``
  (``Token.try_start_beside``, one hold of the lock), so a cancel stops every run not yet
  started exactly as a task's own token would.
- A cancelled task whose runs are going is ``CANCELLING`` until the last of them reports (each
  counts); runs not yet started are taken back. A task that reaches its
  ``max_consecutive_failures`` ends ``FAILED`` at once: runs still going finish, uncounted.
- Each run has its own deadline (``timeout``) and its own retries: both wait in the due heap on
  entries keyed apart from the task's id (``DueHeap.push_run``), while the task waits there for
  its next slot. A run waiting for its retry stays one of the runs going (``PENDING``), under
  its run number; a cancel or a shutdown drops it. ``cancel(interrupt=True)`` asks every run
  going to stop (``_interrupt_instances``).
- On a shared store (``durable_runs_once``) the task is held by its node's lease from the claim
  of a slot until its last run going ends: meanwhile it waits here for its next slot as in
  memory (a slot that comes while N go is missed), and each run's end is saved (under the
  lease, which goes on: ``actors/shared/node.py``); when no run goes any more it is saved and
  left to its store (detached), which ends the lease, as a plain leased task after its run.
  A stopping scheduler (``closed``) leaves a durable one to its store the same way, once its
  runs going have ended and been saved.
- The plain path never comes here: the timetable asks ``self._instances`` (empty unless a run
  instance has been made) before any test of a record's type.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from actors.core.effects import RunOutcome
from actors.core.policies import REASON_MISFIRE, REASON_OVERLAP
from actors.core.policy_runs import PolicyRuns
from actors.core.run_log import RunEntry, keep_run, keep_value
from actors.core.task_record import RunInstance, TaskRecord
from actors.core.task_state import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    FAILED,
    FINAL_STATES,
    HANDED,
    PENDING,
    READY,
    State,
    move_to,
)
from actors.errors import MissedRunError, TaskTimeoutError
from messages import Completed, EventKind, TaskId, TaskInfo

if TYPE_CHECKING:
    from actors.core.dealer import Dealer
    from actors.core.effects import Effects
    from actors.core.run_totals import RunCounts
    from actors.sync.claim import Claim

__all__ = ["InstanceRuns", "Instances"]


class Instances:
    """What the timetable keeps of one ``overlap="allow"`` task: its runs going, the last run number."""

    __slots__ = ("going", "numbered", "spent")

    def __init__(self, numbered: int) -> None:
        self.going: list[RunInstance] = []  # made and not yet ended: queued, handed or running
        self.numbered = numbered  # the last run number given
        self.spent = False  # its calendar fires no more: it ends COMPLETED with its last run


class InstanceRuns(PolicyRuns):
    """The ``Timetable``'s side of overlapping runs (a mixin: the state is the timetable's)."""

    if TYPE_CHECKING:  # the timetable's state and methods this part uses
        _dealer: Dealer
        _effects: Effects
        _instances: dict[TaskId, Instances]
        _want_due: bool
        _want_completed: bool
        _want_failed: bool
        _want_missed: bool
        activity: int
        closed: bool
        durable_runs_once: bool
        run_counts: RunCounts | None

        def _finish(self, task: TaskRecord, state: State, at: float, outcome: object) -> None: ...
        def _plan_next(self, task: TaskRecord, after: float, started_at: float | None = None) -> bool: ...
        def _rest(self, task: TaskRecord) -> None: ...
        def _release(self, now: float) -> None: ...
        def _ended_run(self, task: TaskRecord) -> Claim | None: ...
        def _retry(
            self, task: TaskRecord, error: BaseException, traceback: str, finished_at: float
        ) -> bool: ...
        def _end_attempts(self, task: TaskRecord) -> int: ...
        def _detach(self, task: TaskRecord) -> bool: ...

    # -- new runs ---------------------------------------------------------------------------

    def _due_allowed(self, task: TaskRecord, now: float) -> None:
        """An ``overlap="allow"`` task's slot came: run it, or miss it; wait for the next."""
        self.activity += 1
        if not self._start_instance(task, task.due_at, now, manual=False):
            following = self._instances[task.task_id].numbered + 1  # (a miss takes no number)
            self._publish_misses(task, [(task.due_at, REASON_OVERLAP)], now, following)
        if not self._plan_next(task, now, now):  # the slots it passes on the way are missed
            self._end_when_idle(task, COMPLETED, now)  # a calendar that fires no more
            return
        if task.store_seq is not None:
            self._effects.saves.append(task)  # its store learns the next slot
        self._rest(task)

    def _run_instance_now(self, task: TaskRecord, now: float) -> bool:
        """``run_now`` of an ``overlap="allow"`` task: one more run now if fewer than N go; its grid stays."""
        if not self._start_instance(task, now, now, manual=True):
            return False
        self.activity += 1
        self._release(now)
        return True

    def _start_instance(self, task: TaskRecord, due_at: float, now: float, *, manual: bool) -> bool:
        """Queue a new run of ``task`` due at ``due_at``, if fewer than its ``max_instances`` go."""
        runs = self._instances.get(task.task_id)
        if runs is None:
            runs = self._instances[task.task_id] = Instances(task.run_count)
        limit = task.spec.policies.max_instances or 1
        if len(runs.going) >= limit:
            return False
        runs.numbered += 1
        instance = RunInstance(task, runs.numbered, due_at, manual=manual)
        runs.going.append(instance)
        self._dealer.queue(instance)
        if self._want_due:
            self._emit(EventKind.DUE, instance, now, runs.numbered)
        return True

    def _with_active_runs(self, info: TaskInfo) -> TaskInfo:
        """``info`` with its task's runs going (``TaskInfo.active_runs``), if it is an ``"allow"`` task's."""
        runs = self._instances.get(info.task_id)
        if runs is None or not runs.going:
            return info
        return dataclasses.replace(info, active_runs=len(runs.going))

    # -- how runs end -----------------------------------------------------------------------

    def _instance_completed(self, instance: TaskRecord, report: Completed) -> bool:
        """If ``instance`` is a run instance, it returned: its task counts the run; whether it was one.

        Its task keeps its run record, and ``COMPLETED`` is published.
        """
        if not isinstance(instance, RunInstance):
            return False
        self._ended_run(instance)
        self.activity += 1
        if self.run_counts is not None:
            self.run_counts.ended(instance.task_id, instance.due_at, report, "completed")
        task = self._instance_ended(instance)
        if task is None:
            return True
        at = report.finished_at
        task.run_count += 1
        if task.failures is not None:
            task.failures.consecutive = 0
        attempt = self._end_attempts(instance)  # (a retried run: back at its own slot)
        self._keep_instance_run(
            instance, task, report.started_at, at, "completed", None, report.value, attempt=attempt
        )
        if self._want_completed:
            run = instance.run_count + 1
            self._emit(EventKind.COMPLETED, instance, at, run, value=report.value, attempt=attempt)
        self._after_instance(task, at)
        return True

    def _instance_failed(
        self,
        instance: RunInstance,
        error: BaseException,
        traceback: str,
        at: float,
        started_at: float | None,
        *,
        interrupted: bool = False,
    ) -> None:
        """A run instance raised (or its worker was lost): its task counts the failure; publish ``FAILED``.

        Unless its ``Retry`` tries it again: the run's next attempt waits in the heap on an entry
        of its own (``DueHeap.push_run``), still one of the runs going, under its run number.
        """
        parent = instance.parent
        if (
            instance.spec.retry is not None
            and not interrupted
            and parent.state is not CANCELLING
            and parent.state not in FINAL_STATES
            and self._retry(instance, error, traceback, at)
        ):
            return
        attempt = self._end_attempts(instance)
        task = self._instance_ended(instance)
        if task is None:
            return
        task.run_count += 1
        task.count_failure(error, traceback)
        outcome = "timed_out" if isinstance(error, TaskTimeoutError) else "failed"  # as a plain run's
        self._keep_instance_run(
            instance, task, started_at, at, outcome, f"{type(error).__name__}: {error}", attempt=attempt
        )
        ends = task.state is not CANCELLING and task.reached_failure_limit() and task.take()
        if self._want_failed:
            self._emit(
                EventKind.FAILED,
                instance,
                at,
                instance.run_count + 1,
                error=error,
                traceback=traceback,
                final=ends,
                attempt=attempt,
            )
        if ends:  # the runs still going finish, uncounted; those not started never start (taken token)
            self._take_back_instances(task)
            self._unwait(task)
            self._finish(task, FAILED, at, None)
            return
        self._after_instance(task, at)

    def _instance_missed(self, instance: RunInstance, now: float) -> None:
        """A run instance would start later than its task's ``misfire_grace``: it is missed."""
        self.activity += 1
        task = self._instance_ended(instance)
        if task is None:
            return
        run = instance.run_count + 1
        error = MissedRunError(
            f"run {run} of task {task.task_id!r} was not started: it was {now - instance.due_at:.3f} s late, "
            f"more than its misfire_grace of {task.spec.misfire_grace} s"
        )
        task.count_missed()
        if self._want_missed:
            self._emit(EventKind.MISSED, instance, now, run, error=error, reason=REASON_MISFIRE)
        attempt = self._end_attempts(instance)  # (a retry attempt started too late)
        self._keep_instance_run(
            instance, task, None, now, "missed", str(error), reason=REASON_MISFIRE, attempt=attempt
        )
        self._after_instance(task, now)

    def _instance_interrupted(
        self, instance: RunInstance, finished_at: float, started_at: float | None
    ) -> None:
        """A run asked to stop by ``cancel(interrupt=True)`` raised ``RunCancelled``: it ends, uncounted.

        As a plain task's interrupted run: its record says ``"cancelled"``; its task, ``CANCELLING``,
        ends ``CANCELLED`` with its last run.
        """
        self.activity += 1
        attempt = self._end_attempts(instance)
        task = self._instance_ended(instance)
        if task is None:
            return
        self._keep_instance_run(instance, task, started_at, finished_at, "cancelled", None, attempt=attempt)
        self._after_instance(task, finished_at)

    def _instance_skipped(self, instance: RunInstance, now: float) -> None:
        """A worker did not start a run instance: its task's token had ended (cancelled, failed)."""
        self.activity += 1
        task = self._instance_ended(instance)
        if task is not None:
            self._after_instance(task, now)

    def _instance_ended(self, instance: RunInstance) -> TaskRecord | None:
        """A run instance is over: forget it; return its task, ``None`` if the task has ended meanwhile."""
        task = instance.parent
        runs = self._instances.get(task.task_id)
        if runs is not None and instance in runs.going:
            runs.going.remove(instance)
        instance.state = COMPLETED  # (not move_to: an instance's own end is not a task's)
        instance.retire()
        if task.state in FINAL_STATES:
            if runs is not None and not runs.going:
                del self._instances[task.task_id]
            return None
        return task

    def _after_instance(self, task: TaskRecord, at: float) -> None:
        """A run of ``task`` has ended: a task waiting for its runs to end ends with the last one."""
        runs = self._instances.get(task.task_id)
        if runs is not None and runs.going:
            if task.store_seq is not None:
                self._effects.saves.append(task)  # its counters and the run's record; others go on
            return
        if task.state is CANCELLING:
            self._instances.pop(task.task_id, None)
            self._finish(task, CANCELLED, at, None)
        elif runs is not None and runs.spent:  # its calendar fires no more
            self._unwait(task)
            del self._instances[task.task_id]
            self._finish(task, COMPLETED, at, None)
        elif task.store_seq is not None:
            self._effects.saves.append(task)  # its counters and last outcome
            if self.durable_runs_once or self.closed:
                # A shared store's lease ends with the last run going (the next slot is the
                # store's business); a stopping scheduler leaves it to its store.
                self._unwait(task)
                self._instances.pop(task.task_id, None)
                if not self._detach(task):
                    self._finish(task, CANCELLED, at, None)  # a cancel won its token meanwhile

    def _keep_instance_run(
        self,
        instance: RunInstance,
        task: TaskRecord,
        started_at: float | None,
        finished_at: float,
        outcome: str,
        error: str | None,
        value: object = None,
        *,
        reason: str | None = None,
        attempt: int = 1,
    ) -> None:
        """Note how a run instance ended on its task's record (``history``) and a durable task's ledger."""
        due_wall = instance.due_wall if instance.due_wall is not None else instance.due_at + self.wall_offset
        value_json = value_note = None
        if task.spec.keep_result and outcome == "completed":
            value_json, value_note = keep_value(value)
        entry = RunEntry(
            instance.run_count + 1, instance.due_at, due_wall, started_at, finished_at, outcome,
            error, attempt, reason, instance.manual, value_json, value_note,
        )  # fmt: skip
        runs = task.runs
        task.runs = keep_run(runs if isinstance(runs, list) else None, entry)
        if task.store_seq is not None:
            task.last_outcome = outcome
            self._effects.ledger.append(RunOutcome(task, entry))

    # -- the task's end ---------------------------------------------------------------------

    def _cancel_instances(self, task: TaskRecord) -> bool:
        """A cancel of an ``overlap="allow"`` task won: take back its runs not started; whether some go on.

        If some do, the task is ``CANCELLING`` (out of the heap) and ends with the last of them.
        """
        if self._take_back_instances(task) == 0:
            return False
        self._unwait(task)
        move_to(task, CANCELLING)
        return True

    def _interrupt_instances(self, task: TaskRecord) -> bool:
        """``cancel(interrupt=True)`` of an ``overlap="allow"`` task: ask each of its runs going to stop.

        Whether this asked one (a run not started has no claim yet; the cancel's revoke stops it).
        """
        runs = self._instances.get(task.task_id)
        if runs is None:
            return False
        asked = False
        for instance in runs.going:
            asked = instance.interrupt() or asked
        return asked

    def _take_back_instances(self, task: TaskRecord) -> int:
        """Take back the runs of ``task`` not yet started (they never start); return how many go on."""
        runs = self._instances.get(task.task_id)
        if runs is None:
            return 0
        for instance in list(runs.going):
            if instance.state is READY:
                self._dealer.unqueue(instance)
            elif instance.state is PENDING:  # its Retry's next attempt waits in the heap
                if instance.heap_seq is not None:
                    self._heap.remove(instance)
            elif instance.state is not HANDED or not self._dealer.take_back(instance):
                continue  # its worker has it
            runs.going.remove(instance)
            instance.state = CANCELLED
            instance.retire()
        if not runs.going:
            del self._instances[task.task_id]
        return len(runs.going)

    def _end_when_idle(self, task: TaskRecord, state: State, at: float) -> None:
        """End a task now, or, while runs of it go on, once the last of them ends (``_after_instance``)."""
        runs = self._instances.get(task.task_id)
        if runs is not None and runs.going:
            runs.spent = True
            task.due_at = float("inf")
            self._heap.push(task, task.due_at)  # waits (never due) for the last run's end to end it
            return
        self._instances.pop(task.task_id, None)
        self._finish(task, state, at, None)

    def _runs_going(self, task: TaskRecord) -> bool:
        """Whether runs of ``task`` (an ``overlap="allow"`` one) go on: made and not yet ended."""
        runs = self._instances.get(task.task_id)
        return runs is not None and bool(runs.going)

    def _unwait(self, task: TaskRecord) -> None:
        """Take a task out of the heap (or out of its pause), where its next slot waited."""
        if task.heap_seq is not None:
            self._heap.remove(task)
