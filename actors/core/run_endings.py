"""How runs end, in the pure core: the workers' reports, deadlines, retries and next slots.

The ``Timetable`` is made of this and ``actors/core/timetable.py``: this half takes a run's end
(``Completed``, ``Failed``, ``Skipped``, a lost or abandoned worker, a missed slot, a deadline)
and decides what follows: the task's counters and state, its next run or its end, a retry, the
run ledger of a durable task. The rules of ``actors/core/timetable.py``'s docstring hold here too:
no clock, no threads, no user code; everything goes out as ``Effects``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actors.core.effects import PlainDone, RunOutcome
from actors.core.instance_runs import InstanceRuns
from actors.core.policies import REASON_MISFIRE
from actors.core.recurrence import next_cron, next_fixed_delay, next_fixed_rate
from actors.core.run_log import RunEntry, keep_run, keep_value
from actors.core.task_record import PLAIN, Failures, RunInstance, TaskRecord, TaskSpec
from actors.core.task_state import (
    CANCELLED,
    CANCELLING,
    COMPLETED,
    FAILED,
    FINAL_STATES,
    HANDED,
    PAUSED,
    PENDING,
    State,
    move_to,
)
from actors.errors import MissedRunError, RunCancelled, TaskTimeoutError
from actors.sync.claim import INTERRUPTED, NOT_STOPPED, REPLACED, TIMED_OUT, Claim
from actors.sync.token import TAKEN, request_stop
from messages import Completed, EventKind, Failed, FixedDelay, FixedRate, Skipped, Started, TaskId

if TYPE_CHECKING:
    from actors.core.dealer import Dealer
    from actors.core.due_heap import DueHeap
    from actors.core.effects import Effects
    from actors.core.run_totals import RunCounts

__all__ = ["RunEndings"]


class RunEndings(InstanceRuns):
    """The half of the ``Timetable`` that takes runs' ends (a mixin: the state is the timetable's)."""

    if TYPE_CHECKING:  # the timetable's state and methods this half uses
        _dealer: Dealer
        _heap: DueHeap
        _effects: Effects
        _deferred: bool
        _hung_grace: float
        _want_started: bool
        _want_completed: bool
        _want_failed: bool
        _want_missed: bool
        _want_timed_out: bool
        activity: int
        closed: bool
        wall_offset: float
        durable_runs_once: bool
        run_counts: RunCounts | None

        def _release(self, now: float) -> None: ...
        def _finish(self, task: TaskRecord, state: State, at: float, outcome: object) -> None: ...
        def _detach(self, task: TaskRecord) -> bool: ...
        def _rest(self, task: TaskRecord) -> None: ...
        def _plan_operated(self, task: TaskRecord, after: float) -> bool: ...
        def _start_queued_now(self, task: TaskRecord, after: float) -> None: ...
        def _queued_now_is_due(self, task: TaskRecord, now: float) -> None: ...

        _paused: dict[TaskId, float]
        _manual: dict[TaskId, tuple[float, float | None]]
        _respec: dict[TaskId, tuple[TaskSpec, float, float | None]]
        _queued_now: dict[TaskId, float]

    # -- reports ----------------------------------------------------------------------------

    def completed(self, report: Completed, now: float) -> None:
        """Record that a worker finished a run normally.

        The busiest method of the core (every run of every task ends here): what a plain run
        needs is written out, and each option costs one test.
        """
        task = self._dealer.report(report.worker, report.task_id, report.run, idle=report.idle)
        if task is None or (self._instances and self._instance_completed(task, report)):
            self._release(now)  # a stale report; or a run of an overlap="allow" task, counted by its task
            return
        claim = self._ended_run(task)  # (not _reported: the busiest report reads the stop only if needed)
        if task.state in FINAL_STATES:
            self._release(now)  # the report may have freed its worker
            return
        counts = self.run_counts
        if counts is not None:  # metrics count it (run_totals.py): four appends, counted in bulk by _release
            pending = counts.pending
            pending.append(task.task_id)
            pending.append(task.due_at)
            pending.append(report.started_at)
            pending.append(report.finished_at)
        self.activity += 1
        task.run_count += 1
        attempt = 1 if task.failures is None else self._succeeded(task)
        spec = task.spec
        # The plain path: its report is its run record (not a run_now run's: it is marked manual).
        if spec.plain and task.store_seq is None and not self._manual:
            task.runs = report
        else:
            self._record_run(
                task,
                report.run,
                report.started_at,
                report.finished_at,
                "completed",
                None,
                attempt,
                report.value,
            )
        if spec.trigger is None and task.state is HANDED:  # the common case: it just ends
            # Interrupted, it returned anyway: the run counts, the task ends CANCELLED.
            interrupted = claim is not None and bool(task.stop_reasons(claim) & INTERRUPTED)
            if not spec.single_start:  # a retryable one: a cancel may have won its token meanwhile
                task.run_reported()
                interrupted = not task.take() or interrupted
            if self._want_completed:
                self._emit(
                    EventKind.COMPLETED,
                    task,
                    report.finished_at,
                    report.run,
                    value=report.value,
                    final=not interrupted,
                    attempt=attempt,
                )
            if interrupted:
                self._finish(task, CANCELLED, report.finished_at, None)
            else:
                self._finish(task, COMPLETED, report.finished_at, report.value)
        else:
            self._ran(task, report, attempt)
        if not self._deferred:
            self._release(now)

    def completed_plain(self, done: PlainDone, now: float) -> None:
        """Record that a plain run returned (a thread worker's ``PlainDone``): ``completed``, written out.

        The plain path only: a one-time task with no options, none of whose runs anything
        watches (no ``COMPLETED`` listener, no run of ``run_now``; run totals count it as
        ``completed`` does), not interrupted. Anything else, and a stale report, goes to ``completed`` as the
        ``Completed`` the tuple stands for, which decides as it always did.
        """
        worker, task, value, started_at, finished_at, idle = done
        claim = task.claim
        if (
            task.spec is not PLAIN
            or task.state is not HANDED
            or claim is None
            or task.stop_reasons(claim)  # asked to stop (interrupted): it ends CANCELLED, completed says
            or task.failures is not None
            or task.store_seq is not None
            or self._want_completed
            or self._manual
            or self._instances
            or not self._dealer.report_plain(worker, task, idle)
        ):
            report = Completed(worker, task.task_id, task.run_count + 1, value, finished_at, idle, started_at)
            self.completed(report, now)
            return
        task.claim = None
        if task.heap_seq is not None:
            self._heap.remove(task)  # (a plain run has no deadline: never, but as _ended_run)
        counts = self.run_counts
        if counts is not None:  # metrics count it as completed does: four appends, counted in bulk
            pending = counts.pending
            pending.append(task.task_id)
            pending.append(task.due_at)
            pending.append(started_at)
            pending.append(finished_at)
        self.activity += 1
        task.run_count += 1
        task.runs = (started_at, finished_at)  # its one run's line, when asked (run_log.entries)
        self._finish(task, COMPLETED, finished_at, value)
        if not self._deferred:
            self._release(now)

    def _succeeded(self, task: TaskRecord) -> int:
        """A run of a task that has failed before completed: the failures in a row end; its attempt."""
        assert task.failures is not None
        task.failures.consecutive = 0
        return self._end_attempts(task)

    def _ran(self, task: TaskRecord, report: Completed, attempt: int) -> None:
        """A recurring run (or one of a task cancelled mid-run) completed: publish it, then what follows."""
        task.run_reported()
        if self._want_completed:
            self._emit(
                EventKind.COMPLETED,
                task,
                report.finished_at,
                report.run,
                value=report.value,
                attempt=attempt,
            )
        self._after_run(task, report.finished_at, report.started_at)

    def failed(self, report: Failed, now: float) -> None:
        """Record that a worker finished a run by raising.

        A run that raised ``RunCancelled`` because it was asked to stop is no failure after an
        interrupt (the task ends ``CANCELLED``); after its timeout it failed with
        ``TaskTimeoutError``.
        """
        task, stop = self._reported(report)
        if task is not None and task.state not in FINAL_STATES:
            error = report.error
            if self.run_counts is not None:
                ending = "cancelled" if stop & INTERRUPTED and isinstance(error, RunCancelled) else "failed"
                self.run_counts.ended(task.task_id, task.due_at, report, ending)
            if stop & INTERRUPTED and isinstance(error, RunCancelled):
                self._end_interrupted(
                    task, report.finished_at, report.started_at
                )  # its timeout may have come too
            elif stop & REPLACED and isinstance(error, RunCancelled):
                self._made_way(task, report)
            else:
                if stop & TIMED_OUT and isinstance(error, RunCancelled):
                    error = _timeout_error(task, report.run, self._hung_grace, abandoned=False)
                interrupted = bool(stop & INTERRUPTED)
                self._fail_run(
                    task,
                    error,
                    report.traceback,
                    report.finished_at,
                    report.started_at,
                    interrupted=interrupted,
                )
        self._release(now)  # the report freed its worker

    def _made_way(self, task: TaskRecord, report: Failed) -> None:
        """A run asked to stop for its task's next slot (``overlap="replace"``) did: it counts, unfailed."""
        self.activity += 1
        task.run_count += 1
        if task.store_seq is not None:
            self._record_run(task, report.run, report.started_at, report.finished_at, "cancelled", None)
        task.run_reported()
        self._after_run(task, report.finished_at, report.started_at)

    def skipped(self, report: Skipped, now: float) -> None:
        """Record that a worker did not start a run: the task's token said it was cancelled (or paused).

        ``paused``: paused (its token was held), not cancelled: the run goes back as a run taken
        back before it started: the task rests ``PAUSED``, or, resumed since, is due again at once.
        """
        task, _ = self._reported(report)
        if report.paused and task is not None and task.state is HANDED:
            self.activity += 1
            if task.task_id in self._paused:
                move_to(task, PAUSED)
                self._queued_now_is_due(task, now)
            else:
                self._dealer.requeue([task])  # resumed before its report came: it runs now
        elif task is not None and self._instances and isinstance(task, RunInstance):
            self._instance_skipped(task, now)  # its task's token had ended: it ends (or has) as such
        elif task is not None and task.state not in FINAL_STATES:  # else it ended when cancelled
            self.activity += 1
            self._finish(task, CANCELLED, now, None)
        self._release(now)  # the report freed its worker

    def started(self, report: Started) -> None:
        """Record that a worker started a run: publish ``STARTED``; a run with a timeout gets its deadline."""
        task = self._dealer.handed(report.worker, report.task_id, report.run)
        if task is None:
            return
        if self._want_started:
            self._emit(EventKind.STARTED, task, report.started_at, report.run)
        timeout = task.spec.timeout
        if timeout is not None and task.heap_seq is None:
            # The heap holds only waiting tasks' due times; a running task's entry is its deadline.
            self._push_deadline(task, report.started_at + timeout)
        elif task.spec.policies.replaces:  # (no timeout: the two do not combine)
            self._watch_for_replacement(task)

    def worker_lost(self, worker: int, error: BaseException, *, now: float) -> None:
        """Forget ``worker`` until ``add_worker``.

        Runs it had started fail with ``error`` (their outcome is unknown); runs it had not
        started go back to the front of the ready FIFO.
        """
        self._lose(worker, error, now)
        self._release(now)

    def _lose(self, worker: int, error: BaseException, now: float) -> None:
        """Forget ``worker``: its started runs fail with ``error``, the others go back to the ready FIFO.

        A run that was interrupted (``cancel(interrupt=True)``) fails all the same, but is not
        retried, and its task ends ``CANCELLED``, as if the run had raised.
        """
        started, taken_back = self._dealer.lose(worker)
        self._dealer.requeue(taken_back)
        for task in started:
            claim = self._ended_run(task)
            stop = NOT_STOPPED if claim is None else task.stop_reasons(claim)
            if task.state not in FINAL_STATES:
                # An interrupted run ends its task CANCELLED however it ends: lost or abandoned too.
                self._fail_run(task, error, "", now, interrupted=bool(stop & INTERRUPTED))

    def _reported(self, report: Completed | Failed | Skipped) -> tuple[TaskRecord | None, int]:
        """Take a worker's report: the run's task (``None`` if stale), and how the run was asked to stop."""
        task = self._dealer.report(report.worker, report.task_id, report.run, idle=report.idle)
        if task is None:
            return None, NOT_STOPPED
        claim = self._ended_run(task)
        return task, NOT_STOPPED if claim is None else task.stop_reasons(claim)

    def _ended_run(self, task: TaskRecord) -> Claim | None:
        """``task``'s run is over for the core: take its claim off it (returned) and its deadline out."""
        claim, task.claim = task.claim, None
        if task.heap_seq is not None:
            self._heap.remove(task)  # the run's deadline
        return claim

    def _overdue(self, task: TaskRecord, now: float) -> None:
        """A running task's deadline came: ask the run to stop; at the second deadline, abandon its worker.

        The first deadline is ``timeout`` after the run started: the run is asked to stop and
        ``TIMED_OUT`` is published. The second, ``hung_grace`` later, finds it still going:
        the run counts ``FAILED`` with ``TaskTimeoutError``, its worker is given up
        (``Effects.abandoned``) and its other runs go back to the ready FIFO.
        """
        claim = task.claim
        worker = self._dealer.worker_of(task)
        if claim is None or worker is None:
            return  # cannot happen: a report removes the deadline
        self.activity += 1
        if task.spec.policies.replaces:  # not a deadline: its next slot (a replacing task has no timeout)
            self._replace(task)
            return
        if request_stop(claim, TIMED_OUT):  # the first deadline
            if self._want_timed_out:
                self._emit(EventKind.TIMED_OUT, task, now, task.run_count + 1)
            self._push_deadline(task, now + self._hung_grace)
            return
        # The second deadline, or the run has just ended (then its report is on its way, and
        # abandon_run refuses). From now on its worker's end_run moves nothing.
        if not task.abandon_run(claim):
            return
        self._effects.abandoned.append(worker)
        self._lose(worker, _timeout_error(task, task.run_count + 1, self._hung_grace, abandoned=True), now)

    def _push_deadline(self, task: TaskRecord, at: float) -> None:
        """Make a running task wait in the heap for its deadline ``at``.

        A run of an ``overlap="allow"`` task has its own entry, keyed apart from its task's id
        (its task waits there for its next slot meanwhile): ``DueHeap.push_run``.
        """
        if self._instances and isinstance(task, RunInstance):
            self._heap.push_run(task, at)
        else:
            self._heap.push(task, at)

    def _end_interrupted(self, task: TaskRecord, finished_at: float, started_at: float | None = None) -> None:
        """A run asked to stop by ``cancel(interrupt=True)`` raised ``RunCancelled``: the task ends."""
        if self._instances and isinstance(task, RunInstance):  # overlap="allow": with its last run
            self._instance_interrupted(task, finished_at, started_at)
            return
        self.activity += 1
        if task.spec.trigger is not None or not task.spec.single_start:
            task.run_reported()
        attempt = self._end_attempts(task)
        self._record_run(task, task.run_count + 1, started_at, finished_at, "cancelled", None, attempt)
        self._finish(task, CANCELLED, finished_at, None)

    def _end_attempts(self, task: TaskRecord) -> int:
        """A run has ended for good: a retried one's task is due at the run's own slot again (for the next).

        Returns the attempt that ended it.
        """
        failures = task.failures
        if failures is None or failures.attempt == 1:
            return 1
        attempt, failures.attempt = failures.attempt, 1
        task.due_at, task.due_wall = failures.slot_due_at, failures.slot_due_wall
        return attempt

    def _retry(self, task: TaskRecord, error: BaseException, traceback: str, finished_at: float) -> bool:
        """Schedule the next attempt of a failed run, if its ``Retry`` allows one; whether it did."""
        retry = task.spec.retry
        failures = task.failures
        attempt = 1 if failures is None else failures.attempt
        if retry is None or task.state is not HANDED or self.closed or not retry.applies(error, attempt):
            return False
        if failures is None:
            failures = task.failures = Failures()
        if attempt == 1:
            failures.slot_due_at, failures.slot_due_wall = task.due_at, task.due_wall
        failures.attempt = attempt + 1
        failures.last_error, failures.last_traceback = error, traceback
        run = task.run_count + 1
        wait = retry.delay_before(attempt + 1, f"{task.task_id}:{run}:{attempt + 1}")
        task.run_reported()  # the attempt's token goes back to FREE: a cancel still wins before the next
        if self._want_failed:
            self._emit(
                EventKind.FAILED, task, finished_at, run, error=error, traceback=traceback, retrying=True
            )
        move_to(task, PENDING)
        task.due_at = finished_at + wait
        if task.due_wall is not None:
            task.due_wall = task.due_at + self.wall_offset
        if self._instances and isinstance(task, RunInstance):
            # A run of an overlap="allow" task: its own entry (its task waits for its next slot),
            # and its attempt goes on through a pause, as the task's runs going do.
            self._heap.push_run(task, task.due_at)
        else:
            self._rest(task)  # a paused task's next attempt waits for the resume
        return True

    def _fail_run(
        self,
        task: TaskRecord,
        error: BaseException,
        traceback: str,
        finished_at: float,
        started_at: float | None = None,
        *,
        interrupted: bool = False,
    ) -> None:
        """Count a failed run (``interrupted``: one asked to stop, which raised something else)."""
        self.activity += 1
        if self._instances and isinstance(task, RunInstance):  # overlap="allow": its task counts it
            self._instance_failed(task, error, traceback, finished_at, started_at, interrupted=interrupted)
            return
        attempt = 1
        if task.spec.retry is not None:
            if not interrupted and self._retry(task, error, traceback, finished_at):
                return
            attempt = self._end_attempts(task)
        run = task.run_count = task.run_count + 1
        task.count_failure(error, traceback)
        outcome = "timed_out" if isinstance(error, TaskTimeoutError) else "failed"
        self._record_run(
            task, run, started_at, finished_at, outcome, f"{type(error).__name__}: {error}", attempt
        )
        if not task.spec.single_start:
            task.run_reported()
        if task.state is CANCELLING or interrupted:
            ending: State | None = CANCELLED
        elif task.spec.trigger is None:
            # FAILED, unless a caller's cancel won the token first: a run its lost worker had
            # claimed but not started, a retried run after its attempt. (After a failed take,
            # revoke moves nothing: it only says whether the run's start took the token.)
            ending = FAILED if task.take() or task.revoke() is TAKEN else CANCELLED
        elif task.reached_failure_limit():
            ending = FAILED if task.take() else CANCELLED  # a cancel may have just won the token
        else:
            ending = None
        if self._want_failed:
            final = ending is FAILED
            self._emit(
                EventKind.FAILED,
                task,
                finished_at,
                run,
                error=error,
                traceback=traceback,
                final=final,
                attempt=attempt,
            )
        if ending is None:
            self._reschedule(task, finished_at, started_at)
        else:
            self._finish(task, ending, finished_at, None)

    def _after_run(self, task: TaskRecord, finished_at: float, started_at: float | None = None) -> None:
        """A recurring run (or a cancelled one) returned: end the task or schedule its next run."""
        if task.state is CANCELLING:
            self._finish(task, CANCELLED, finished_at, None)  # cancelled mid-run
        elif task.spec.trigger is None:
            self._finish(task, COMPLETED, finished_at, None)
        else:
            self._reschedule(task, finished_at, started_at)

    def _reschedule(self, task: TaskRecord, finished_at: float, started_at: float | None = None) -> None:
        if not self._plan_next(task, finished_at, started_at):
            self._finish(task, COMPLETED, finished_at, None)  # a calendar that fires no more
            return
        if self._queued_now:
            self._start_queued_now(task, finished_at)  # a run_now waited for this run's end
        move_to(task, PENDING)
        if task.store_seq is not None:
            self._effects.saves.append(task)
        if self.closed or (self.durable_runs_once and task.store_seq is not None):
            # Shutting down, or a shared store's lease: the next run is the store's business.
            if not (task.store_seq is not None and self._detach(task)):
                self._finish(task, CANCELLED, finished_at, None)
            return
        if self._paused:
            self._rest(task)  # PAUSED if it was paused during its run
        else:
            self._push_slot(task)

    def _plan_next(self, task: TaskRecord, after: float, started_at: float | None = None) -> bool:
        """Set a recurring task's next due time, counted from its last slot and ``after`` (clock time).

        The slots skipped on the way are missed (or one of them queued: ``_overran``);
        ``started_at`` is when the run that ended started (``None``: it did not start).
        Returns ``False``, changing nothing, if its calendar fires no more.
        """
        if (self._manual or self._respec) and self._plan_operated(task, after):
            return True  # after a run_now run, or a reschedule's new trigger
        trigger = task.spec.trigger
        calendar = task.spec.calendar
        ran_at = task.due_at
        if calendar is not None:
            ran_wall = task.due_wall if task.due_wall is not None else task.due_at + self.wall_offset
            due_wall = next_cron(calendar, ran_wall, after + self.wall_offset)
            if due_wall is None:
                return False
            task.due_at, task.due_wall = due_wall - self.wall_offset, due_wall
            self._overran(task, ran_at, started_at, after)
            return True
        if isinstance(trigger, FixedRate):
            assert trigger.first_at is not None  # resolved when the task was made
            due_at = next_fixed_rate(trigger.first_at, trigger.interval, task.due_at, after)
            if due_at - ran_at > 1.5 * trigger.interval:  # slots were skipped (rare: a late run)
                task.due_at = due_at
                if task.store_seq is not None:
                    task.due_wall = due_at + self.wall_offset
                self._overran(task, ran_at, started_at, after)
                return True
        else:
            assert isinstance(trigger, FixedDelay)
            due_at = next_fixed_delay(trigger.delay, after)
        task.due_at = due_at
        task.counted_from = after
        if task.store_seq is not None:
            task.due_wall = due_at + self.wall_offset
        return True

    def _record_run(
        self,
        task: TaskRecord,
        run: int,
        started_at: float | None,
        finished_at: float,
        outcome: str,
        error: str | None,
        attempt: int = 1,
        value: object = None,
        *,
        reason: str | None = None,
    ) -> None:
        """Note how a run ended: on its record (``history``), and for a durable task the store's ledger."""
        due_wall = task.due_wall if task.due_wall is not None else task.due_at + self.wall_offset
        value_json = value_note = None
        if task.spec.keep_result and outcome == "completed":
            value_json, value_note = keep_value(value)
        # A run_now run is the one whose task is in _manual until the run's end plans the next
        # (_plan_next, after this): the dealer marked the run manual by the same test.
        manual = bool(self._manual) and task.task_id in self._manual
        entry = RunEntry(
            run, task.due_at, due_wall, started_at, finished_at, outcome,
            error, attempt, reason, manual, value_json, value_note,
        )  # fmt: skip
        runs = task.runs  # (a plain task's report is its last run: it runs no more)
        task.runs = keep_run(runs if isinstance(runs, list) else None, entry)
        if task.store_seq is not None:
            task.last_outcome = outcome
            self._effects.ledger.append(RunOutcome(task, entry))

    def _missed(self, task: TaskRecord, now: float) -> None:
        """A run of a ``READY`` task would start later than its ``misfire_grace`` allows: skip it.

        A recurring task waits for its next slot; a one-time task ends ``FAILED`` with a
        ``MissedRunError`` (unless a cancel has just won its token).
        """
        if self._instances and isinstance(task, RunInstance):  # overlap="allow": its task counts it
            self._instance_missed(task, now)
            return
        self.activity += 1
        run = task.run_count + 1
        late = now - task.due_at
        error = MissedRunError(
            f"run {run} of task {task.task_id!r} was not started: it was {late:.3f} s late, "
            f"more than its misfire_grace of {task.spec.misfire_grace} s"
        )
        if self._manual and task.task_id in self._manual:
            task.drop_claim()  # a manual run missed: nothing is promised any more
        trigger = task.spec.trigger
        ends = trigger is None and task.take()  # a one-time task ends (unless a cancel won its token)
        task.count_missed()
        if self._want_missed:
            self._emit(EventKind.MISSED, task, now, run, error=error, final=ends, reason=REASON_MISFIRE)
        self._record_run(task, run, None, now, "missed", str(error), reason=REASON_MISFIRE)
        if trigger is None:
            if ends:
                task.count_failure(error, "")
                self._finish(task, FAILED, now, None)
            else:  # a caller cancelled it meanwhile: its Cancelled report would find it gone
                self._finish(task, CANCELLED, now, None)
            return
        if not self._plan_next(task, now, now):
            self._finish(task, COMPLETED, now, None)  # a calendar that fires no more
            return
        if self._queued_now:
            self._start_queued_now(task, now)  # a run_now waited for this run
        move_to(task, PENDING)
        if task.store_seq is not None:
            self._effects.saves.append(task)
            if self.durable_runs_once:  # a shared store's lease: the next run is the store's business
                if not self._detach(task):
                    self._finish(task, CANCELLED, now, None)  # a cancel won its token meanwhile
                return
        self._rest(task)


def _timeout_error(task: TaskRecord, run: int, hung_grace: float, *, abandoned: bool) -> TaskTimeoutError:
    """The error of a run that outlived its task's timeout."""
    how = (
        f"and was still running {hung_grace} s after it was asked to stop: its worker was abandoned"
        if abandoned
        else "and stopped when asked"
    )
    return TaskTimeoutError(
        f"run {run} of task {task.task_id!r} took longer than its timeout of {task.spec.timeout} s {how}"
    )
