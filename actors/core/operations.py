"""Operating a live task, in the pure core: pause, resume, run now, reschedule (issue 24).

``Operations`` is a part of the ``Timetable`` (a mixin: the state is the timetable's,
``actors/core/timetable.py``), and the rules of that module's docstring hold here: no clock, no
threads, no user code; time comes in as ``now``, what should happen goes out as ``Effects``.
Every method runs on the thread that owns the timetable (the scheduler actor's).

Three dicts hold what these operations add to a task, so a task nobody operates pays nothing
(its record has no field for it; the hot paths test a dict for emptiness, one C call):

- ``_paused``: ``task_id -> when it was paused``. A paused task with no run in flight rests in
  ``State.PAUSED``, out of the heap, its ``due_at`` the due time it will have missed. One whose
  run is in flight (or that waits for its dependencies) is only marked here: where it would
  next wait in the heap (``_rest``) it moves to ``PAUSED`` instead.
- ``_manual``: ``task_id -> (due_at, due_wall)`` of the slot a ``run_now`` run left: the grid
  the run does not move. The dealer marks the run ``manual`` (``RunContext.manual``); when it
  ends, ``_plan_after_manual`` puts the task back on its grid.
- ``_respec``: ``task_id -> (spec, due_at, due_wall)``: a new trigger given to a task whose run
  is in flight, applied when that run ends (``_plan_respec``).
- ``_queued_now``: ``task_id -> when run_now was asked``: a ``run_now`` of a task whose run was
  in flight, that its overlap policy (``"queue"``, ``"replace"``) let wait for that run's end
  (``_start_queued_now``, as the task is planned after it); at most one per task.

The catch-up policy of a resumed task is one function, ``due_on_resume``: the policies of
issue 24 (``catch_up="all"``, ``"none"``) extend it there.

Who decides (``token_decides``): for a memory task (no store to commit to first) that is not
``overlap="allow"``, the task's token decides ``pause`` and ``resume`` (its ``HELD`` bit), and,
with ``overlap="skip"``, ``run_now`` (its ``CLAIMED`` bit), on whichever thread asks
(``actors/sync/token.py``): the facade's caller, without waiting for the scheduler. The core
then only does the bookkeeping, in the order the decisions were made: ``paused``, ``resumed``
and ``run_now_claimed`` take the reports the deciders put in the outbox, and ``skipped`` takes
a run a held token did not let start (``Skipped(paused=True)``). Every other case (a durable
task, whose change is committed first; ``"allow"``; ``run_now`` with ``"queue"`` or
``"replace"``) the core decides here, on its own thread, as ``pause``, ``resume`` and
``run_now`` below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from actors.core.effects import Respecced
from actors.core.policies import OVERLAP_REPLACE, OVERLAP_SKIP
from actors.core.recurrence import first_due_at, next_fixed_delay
from actors.core.stopping import Stopping
from actors.core.task_record import TaskRecord, TaskSpec
from actors.core.task_state import (
    CANCELLING,
    FINAL_STATES,
    HANDED,
    PAUSED,
    PENDING,
    READY,
    WAITING,
    move_to,
)
from actors.sync.claim import REPLACED
from actors.sync.token import DONE, request_stop
from messages import Cron, EventKind, FixedDelay, FixedRate, Once, TaskId, TaskInfo, TaskStatus, Trigger
from messages.reports import Paused, Resumed, RunNowClaimed

if TYPE_CHECKING:
    from actors.core.dealer import Dealer
    from actors.core.due_heap import DueHeap
    from actors.core.effects import Effects
    from actors.core.wall_tasks import WallTasks

__all__ = [
    "CATCH_UP_LATEST",
    "PAUSE",
    "RESUME",
    "RUN_NOW",
    "Operations",
    "core_refuses",
    "due_on_resume",
    "first_due",
    "respec",
    "token_decides",
]

CATCH_UP_LATEST = "latest"
"""The catch-up policy of every task today: one late run, if within ``misfire_grace``."""


PAUSE = "pause"
RESUME = "resume"
RUN_NOW = "run_now"
"""The operations a task's token may decide (``token_decides``)."""


def token_decides(task: TaskRecord, operation: str) -> bool:
    """Whether ``task``'s token decides ``operation`` (``PAUSE``, ``RESUME``, ``RUN_NOW``); any thread.

    A memory task (a durable one's change is committed to its store before the answer, by the
    scheduler) whose runs are its own (not ``overlap="allow"``, whose runs have tokens of their
    own); ``run_now`` only with ``overlap="skip"`` and not while the task waits for its
    dependencies. Safe on any thread: a task that has left ``WAITING`` never goes back (a
    moment's reading can only be stale towards "waiting", which asks the scheduler), and its
    store and policies change only if ``if_exists="replace"`` gives it new ones (on the
    scheduler's thread). A decision made on the old ones is then taken as made just before
    (``run_now_claimed``), and ``resume`` clears a hold however it is decided, so a replaced
    task is never left held.
    """
    if task.store_seq is not None:
        return False
    policies = task.spec.policies
    if policies.allows:
        return False
    return operation is not RUN_NOW or (policies.overlap == OVERLAP_SKIP and task.state is not WAITING)


def core_refuses(task: TaskRecord, operation: str) -> bool:
    """What the task's state refuses of ``operation``, beyond what its token decides.

    Pause and resume: the task is ending or ended. Run now (``overlap="skip"``): it is not
    ``PENDING`` or ``PAUSED``: a run is about to start (``READY``, or ``HANDED`` and not
    started), or in progress, or it waits for its dependencies, or it is ending or ended.

    The core's thread reads the state exactly. A caller's thread (``run_now``'s fast path) reads
    it for a moment: a refusal it reads stays true (a final state is final) or was true at the
    reading (a run about to start); a ``PENDING`` it reads may be stale by the time its claim
    is made, if the task has come due since: the claim then makes that run the manual one
    (``_apply_run_now``), which is the outcome of a ``run_now`` made at the reading.
    """
    state = task.state
    if operation is RUN_NOW:
        return state is not PENDING and state is not PAUSED
    return state is CANCELLING or state in FINAL_STATES


def due_on_resume(task: TaskRecord, *, now: float, wall_offset: float) -> tuple[float, float | None]:
    """When a resumed task is due next: ``(due_at, due_wall)`` (its catch-up policy decides).

    The policy is ``"latest"`` (``CATCH_UP_LATEST``), exactly as after a restart: the task keeps
    the due time it had when it was paused. If that time has passed, the task is released at
    once and the dealer's ``misfire_grace`` check gives it one late run (or a ``MISSED`` when it
    is later than its grace); the end of that run skips the rest of the slots it missed (the
    recurrence counts from the slot that ran to the first one not past). A fixed-delay task
    (not between the attempts of a retried run) is due ``delay`` after the resume.

    Extend here (and only here) with the other catch-up policies.
    """
    trigger = task.spec.trigger
    failures = task.failures
    if isinstance(trigger, FixedDelay) and (failures is None or failures.attempt == 1):
        due_at = next_fixed_delay(trigger.delay, now)
        return due_at, None if task.due_wall is None else due_at + wall_offset
    return task.due_at, task.due_wall


def respec(spec: TaskSpec, trigger: Trigger, *, now: float) -> TaskSpec:
    """``spec`` with ``trigger`` instead of its own, every option kept (``reschedule``).

    A fixed-rate or fixed-delay trigger with neither ``first_at`` nor ``initial_delay`` starts
    one interval (delay) from ``now``: a reschedule runs nothing at once unless the trigger says
    so (``initial_delay=0``, a ``first_at`` or ``Once`` time already past).

    Raises:
        ValueError: a ``Cron`` whose expression or zone does not parse.
    """
    recurring: FixedRate | FixedDelay | Cron | None
    if isinstance(trigger, Once):
        recurring = None
    elif isinstance(trigger, FixedRate):
        start = trigger.initial_delay if trigger.initial_delay is not None else trigger.interval
        recurring = trigger if trigger.first_at is not None else FixedRate(trigger.interval, now + start)
    elif isinstance(trigger, FixedDelay):
        start = trigger.initial_delay if trigger.initial_delay is not None else trigger.delay
        recurring = trigger if trigger.first_at is not None else FixedDelay(trigger.delay, now + start)
    else:
        recurring = trigger
    return spec.replace(trigger=recurring, on_wall=False).or_plain()  # a Cron makes itself on_wall


def first_due(
    spec: TaskSpec, trigger: Trigger, *, now: float, wall_offset: float, durable: bool
) -> tuple[float, float | None]:
    """The first due time ``(due_at, due_wall)`` of a task given ``spec`` (from ``respec``) at ``now``.

    Raises:
        ValueError: a ``Cron`` that fires no more.
    """
    calendar = spec.calendar
    if calendar is not None:
        due_wall = calendar.next_fire(now + wall_offset)
        return due_wall - wall_offset, due_wall
    due_at = first_due_at(spec.trigger if spec.trigger is not None else trigger, now)
    return due_at, due_at + wall_offset if durable else None


_CLAIMABLE: Final = frozenset({PENDING, PAUSED, READY, HANDED})
"""The states in which a claimed manual run is made (``run_now_claimed``)."""


class Operations(Stopping):
    """The part of the ``Timetable`` that operates live tasks, on the run endings and queries below it."""

    if TYPE_CHECKING:  # the timetable's state and methods this part uses
        _tasks: dict[TaskId, TaskRecord]
        _heap: DueHeap
        _dealer: Dealer
        _effects: Effects
        _wall_tasks: WallTasks
        _wanted: frozenset[EventKind]
        _want_due: bool
        _paused: dict[TaskId, float]
        _manual: dict[TaskId, tuple[float, float | None]]
        _respec: dict[TaskId, tuple[TaskSpec, float, float | None]]
        _queued_now: dict[TaskId, float]
        activity: int
        wall_offset: float

        def _release(self, now: float) -> None: ...

    # -- commands ---------------------------------------------------------------------------

    def pause(self, task_id: TaskId, *, now: float) -> bool:
        """Pause a live task: no new run of it starts until ``resume``; a run in progress finishes.

        Returns ``True`` if it paused a live task; ``False`` if the task is unknown, ended (or
        being cancelled) or already paused. Publishes ``PAUSED``.
        """
        task = self.record(task_id)
        if task is None or task_id in self._paused:
            return False
        if core_refuses(task, PAUSE):
            return False
        if token_decides(task, PAUSE) and task.hold(taken_live=True)[0] != DONE:
            return False  # (cancelled on another thread, not yet reported)
        self._apply_pause(task, now)
        return True

    def paused(self, report: Paused, now: float) -> None:
        """Take a caller's pause, decided on the task's token (``Paused`` report): its bookkeeping."""
        task = self._live_record(report.task)
        if task is not None and task.task_id not in self._paused and not core_refuses(task, PAUSE):
            self._apply_pause(task, now)  # (else it has ended meanwhile: nothing to pause)

    def _apply_pause(self, task: TaskRecord, now: float) -> None:
        """Pause ``task`` (decided): out of the heap or the ready FIFO; publish ``PAUSED``."""
        task_id = task.task_id
        state = task.state
        self._paused[task_id] = now
        if task_id in self._manual and state in (READY, HANDED):
            pass  # a run_now run asked for already still runs (as on a paused task); then it rests PAUSED
        elif state is PENDING:
            self._heap.remove(task)
            move_to(task, PAUSED)
        elif state is READY:
            self._dealer.unqueue(task)
            move_to(task, PAUSED)
        elif state is HANDED and self._dealer.take_back(task):
            move_to(task, PAUSED)  # its worker had not started the run
            self._release(now)  # the take-back may have left a worker idle
        # else a run in flight, or waiting for its dependencies: it rests PAUSED when it next would
        # wait (a held token lets no run start meanwhile: the worker's Skipped(paused), ``skipped``)
        self._operated(task, EventKind.PAUSED, now)
        self._queued_now_is_due(task, now)

    def resume(self, task_id: TaskId, *, now: float) -> bool:
        """Resume a paused task; ``True`` if it was paused. Publishes ``RESUMED``.

        Its next due time is ``due_on_resume``'s (the catch-up policy); one already past is
        released at once.
        """
        task = self.record(task_id)
        if task is None or task_id not in self._paused:
            return False
        if token_decides(task, RESUME):
            if task.release_hold(taken_live=True)[0] != DONE:
                return False  # (cancelled on another thread, not yet reported)
        else:  # a task whose token did decide once (its options replaced since) must not stay held
            task.release_hold(taken_live=True)
        self._apply_resume(task, now)
        return True

    def resumed(self, report: Resumed, now: float) -> None:
        """Take a caller's resume, decided on the task's token (``Resumed`` report): its bookkeeping."""
        task = self._live_record(report.task)
        if task is not None and task.task_id in self._paused:
            self._apply_resume(task, now)

    def _apply_resume(self, task: TaskRecord, now: float) -> None:
        """Resume the paused ``task`` (decided): due as its catch-up policy says; publish ``RESUMED``."""
        del self._paused[task.task_id]
        if task.state is PAUSED:
            task.due_at, task.due_wall = due_on_resume(task, now=now, wall_offset=self.wall_offset)
            move_to(task, PENDING)
            self._heap.push(task, task.due_at)
        self._operated(task, EventKind.RESUMED, now)
        if task.due_at <= now:
            self._release(now)  # (not due yet, or its run in flight: nothing to release)

    def run_now(self, task_id: TaskId, *, now: float) -> bool:
        """Release one extra run of a task now, outside its schedule; whether it did (or queued it).

        Its fixed-rate or cron grid does not move (the slot it waited for is kept, and skipped
        only if this run is still going then); a fixed-delay task counts its next delay from this
        run's end; a one-time task's run is its one run, brought forward. A paused task stays
        paused. ``False`` for an unknown or ended task and one waiting for its dependencies.

        With a run of a recurring task in progress or about to start (``READY``, ``HANDED``),
        its overlap policy decides (``_run_after``): ``"skip"`` returns ``False`` and queues
        nothing; ``"queue"`` returns ``True`` and the run follows the one in progress; with
        ``"replace"`` the run in progress is also asked to stop (``REPLACED``, cooperatively).
        At most one such run waits: a second ``run_now`` before it started returns ``False``.
        """
        task = self.record(task_id)
        if task is None:
            return False
        state = task.state
        if token_decides(task, RUN_NOW):
            if core_refuses(task, RUN_NOW) or task.claim_manual()[0] != DONE:
                return False  # "skip": a run about to start or in progress; ending, ended, waiting
            self._queue_manual(task, now)
            return True
        if task.spec.policies.allows and (state is PENDING or state is PAUSED):
            return self._run_instance_now(task, now)  # one more run, if fewer than N go (instance_runs.py)
        if state is not PENDING and state is not PAUSED:
            return self._run_after(task, now)  # READY, HANDED: a run is about to start or in progress
        self._queue_manual(task, now)
        return True

    def run_now_claimed(self, report: RunNowClaimed, now: float) -> None:
        """Take a caller's run now, claimed on the task's token (``RunNowClaimed`` report): make the run."""
        task = self._live_record(report.task)
        if task is None or task.state not in _CLAIMABLE:
            return  # it has ended meanwhile: no run to make
        if not token_decides(task, RUN_NOW):  # its options were replaced since: as they say now
            task.drop_claim()
            self.run_now(task.task_id, now=now)
            return
        self._apply_run_now(task, now)

    def _apply_run_now(self, task: TaskRecord, now: float) -> None:
        """Make the manual run a claim promised (``"skip"``: ``PENDING``, ``PAUSED``, ``READY``, ``HANDED``).

        ``PENDING`` or ``PAUSED``: a manual run is queued. ``READY`` or ``HANDED``: the caller
        read ``PENDING`` and the task came due before its claim (``core_refuses``); the run that
        came due has not started (the claim was open, so its worker's ``try_start`` takes it)
        and is the manual one, exactly as if the ``run_now`` had come at the reading (a manual
        run queued then would have started no earlier, and left its slot behind; one run).
        """
        state = task.state
        if state is PENDING or state is PAUSED:
            self._queue_manual(task, now)
            return
        if task.task_id in self._manual:
            return  # (a manual run already: cannot be, a claim is one at a time)
        self._manual[task.task_id] = (task.due_at, task.due_wall)
        task.due_at = now
        if task.due_wall is not None:
            task.due_wall = now + self.wall_offset
        self.activity += 1

    def _queue_manual(self, task: TaskRecord, now: float) -> None:
        """Queue a manual run of a ``PENDING`` or ``PAUSED`` task now, keeping the slot it leaves."""
        self._manual[task.task_id] = (task.due_at, task.due_wall)
        if task.state is PENDING:
            self._heap.remove(task)
        task.due_at = now
        if task.due_wall is not None:
            task.due_wall = now + self.wall_offset
        self._dealer.queue(task)
        self.activity += 1
        if self._want_due:
            self._emit(EventKind.DUE, task, now, task.run_count + 1)
        self._release(now)

    def _live_record(self, task: object) -> TaskRecord | None:
        """``task`` (a report's) if it is the live record of its id, else ``None`` (it has ended)."""
        if isinstance(task, TaskRecord) and self._tasks.get(task.task_id) is task:
            return task
        return None

    def _run_after(self, task: TaskRecord, now: float) -> bool:
        """``run_now`` of a task with a run in flight: queue a manual run after it, if its overlap allows."""
        overlap = task.spec.policies.overlap
        if (
            task.spec.trigger is None  # a one-time run in flight is the task's one run
            or (task.state is not READY and task.state is not HANDED)  # waiting, ending or ended
            or overlap == OVERLAP_SKIP
            or task.task_id in self._queued_now  # at most one waits
        ):
            return False
        self._queued_now[task.task_id] = now
        if overlap == OVERLAP_REPLACE and task.state is HANDED:
            claim = task.claim
            if claim is not None:
                request_stop(claim, REPLACED)  # a run not started yet sees it as it starts
        self.activity += 1
        return True

    def _queued_now_is_due(self, task: TaskRecord, now: float) -> None:
        """The run a ``run_now`` waited for was taken back unstarted (pause, reschedule): run it now."""
        if (
            self._queued_now
            and task.state is not READY
            and task.state is not HANDED
            and self._queued_now.pop(task.task_id, None) is not None
        ):
            self.run_now(task.task_id, now=now)

    def _start_queued_now(self, task: TaskRecord, after: float) -> None:
        """The run in flight when ``run_now`` queued one has ended at ``after``: the manual run is due now.

        ``task`` has just been planned on its grid (``PENDING``, not yet in the heap). If the run's
        end left a grid slot due already (``overlap="queue"`` or ``"replace"`` queued one), that
        slot's run is the one run that waits, and stands for the manual one.
        """
        if self._queued_now.pop(task.task_id, None) is None or task.due_at <= after:
            return
        self._manual[task.task_id] = (task.due_at, task.due_wall)
        task.due_at = after
        if task.due_wall is not None:
            task.due_wall = after + self.wall_offset

    def reschedule(self, task_id: TaskId, trigger: Trigger, *, now: float) -> bool:
        """Give a live task ``trigger``, keeping its function, arguments, options and counters.

        Its next run is the new trigger's first, counted from ``now`` (``respec``); nothing runs
        at once unless the trigger says so. A run in progress goes on; the new trigger applies
        from its end. ``False`` (nothing changed) for an unknown or ended task, one whose
        one-time run is in progress (it is ending), and one waiting for its dependencies.

        Raises:
            ValueError: a ``Cron`` that does not parse or never fires (nothing changed).
        """
        task = self.record(task_id)
        if task is None:
            return False
        state = task.state
        if state is CANCELLING or state is WAITING or state in FINAL_STATES:
            return False
        spec = respec(task.spec, trigger, now=now)  # may raise: nothing has changed yet
        due_at, due_wall = first_due(
            spec, trigger, now=now, wall_offset=self.wall_offset, durable=task.store_seq is not None
        )
        if state is HANDED and not self._dealer.take_back(task):
            if task.spec.trigger is None:
                return False  # a one-time run started: the task ends with it
            self._manual.pop(task_id, None)  # a new schedule: the old grid is gone
            self._respec[task_id] = (spec, due_at, due_wall)  # its run goes on; applied at its end
        else:
            if self._manual.pop(task_id, None) is not None and state is not PENDING:
                task.drop_claim()  # its manual run, not started, is dropped: nothing is promised any more
            if state is HANDED:
                move_to(task, PENDING)  # taken back before its worker started it
            elif state is READY:
                self._dealer.unqueue(task)
                move_to(task, PENDING)
            elif state is PENDING:
                self._heap.remove(task)
            self._apply_spec(task, spec, due_at, due_wall)
            if task.state is PENDING:
                self._rest(task)
            self._queued_now_is_due(task, now)
        self.activity += 1
        if task.store_seq is not None:
            self._effects.saves.append(task)
            self._effects.rescheduled.append(Respecced(task, spec, due_wall))
        self._release(now)
        return True

    def restore_paused(self, task_ids: frozenset[TaskId], *, now: float) -> None:
        """Pause the tasks a store kept as paused, as they are loaded (no event, nothing saved)."""
        for task_id in task_ids:
            task = self.record(task_id)
            if task is None or task_id in self._paused or task.state is not PENDING:
                continue  # (a stored row is pending when loaded)
            self._paused[task_id] = now
            self._heap.remove(task)
            move_to(task, PAUSED)

    # -- queries ----------------------------------------------------------------------------

    def is_paused(self, task_id: TaskId) -> bool:
        """Whether the task ``task_id`` is paused."""
        return task_id in self._paused

    def paused_ids(self) -> frozenset[TaskId]:
        """The ids of the paused tasks (for a store: the flag it keeps)."""
        return frozenset(self._paused)

    def _shown(self, info: TaskInfo) -> TaskInfo:
        """``info`` as a snapshot shows it: ``PAUSED`` for a paused task whose run is in flight."""
        if info.status is TaskStatus.PAUSED or info.task_id not in self._paused:
            return info
        return _with_status(info, TaskStatus.PAUSED)

    # -- hooks for the rest of the timetable ------------------------------------------------

    def _rest(self, task: TaskRecord) -> None:
        """A ``PENDING`` task waits for its due time: in the heap, or ``PAUSED`` if it is paused.

        A paused task whose next run is a ``run_now``'s (queued after a run in flight) waits in
        the heap for that one run.
        """
        if self._paused and task.task_id in self._paused and task.task_id not in self._manual:
            move_to(task, PAUSED)
        else:
            self._push_slot(task)  # at its slot plus its jitter (policy_runs.py)

    def _plan_operated(self, task: TaskRecord, after: float) -> bool:
        """Plan the run after a ``run_now`` run or a reschedule's; whether it did (else plan as usual)."""
        task_id = task.task_id
        respecced = self._respec.pop(task_id, None) if self._respec else None
        if respecced is not None:
            self._manual.pop(task_id, None)
            spec, due_at, due_wall = respecced
            self._apply_spec(task, spec, due_at, due_wall)
            return task.spec.trigger is None or due_at >= after  # else: the first slot not past
        saved = self._manual.pop(task_id, None) if self._manual else None
        if saved is None:
            return False
        task.due_at, task.due_wall = saved  # back on its grid, at the slot it waited for
        if isinstance(task.spec.trigger, FixedDelay):
            return False  # counts its delay from this run's end
        return task.due_at >= after  # else that slot passed during the run: the first one not past

    def _forget_operated(self, task_id: TaskId) -> None:
        """A task ended: forget what the operations kept of it."""
        self._paused.pop(task_id, None)
        self._manual.pop(task_id, None)
        self._respec.pop(task_id, None)
        self._queued_now.pop(task_id, None)

    # -- internals --------------------------------------------------------------------------

    def _apply_spec(self, task: TaskRecord, spec: TaskSpec, due_at: float, due_wall: float | None) -> None:
        task.spec = spec
        task.due_at, task.due_wall = due_at, due_wall
        self._wall_tasks.track(task)

    def _operated(self, task: TaskRecord, kind: EventKind, now: float) -> None:
        """Count an operation, save a durable task, publish ``kind`` if someone listens."""
        self.activity += 1
        if task.store_seq is not None:
            self._effects.saves.append(task)
        if kind in self._wanted:
            self._emit(kind, task, now, None)


def _with_status(info: TaskInfo, status: TaskStatus) -> TaskInfo:
    import dataclasses  # noqa: PLC0415 - only for the rare paused task mid-run

    return dataclasses.replace(info, status=status, next_run_at=None, next_run_wall=None)
