"""``SharedNode``: what makes a ``Scheduler`` one node of a schedule shared on a ``SharedStore``.

With a shared store (PostgreSQL), durable tasks live in the database, not in any node: a node
holds a durable task only while it holds the lease of one of its runs. The run's life here:

1. The lease loop (``actors/shared/lease_loop.py``) leases due runs, as many as the node has idle
   workers, and tells the scheduler actor ``Claimed``; the lease keeper
   (``actors/shared/lease_keeper.py``) renews their leases from then on.
2. The actor hands the ``Claimed`` message to the node (``on_message`` -> ``take``), which
   rebuilds each leased task as a plain ``TaskRecord`` and gives it to the core, which hands it
   to a worker at once (it is due: the database's clock said so). What the node knows of the
   run (its lease, whether it started) stays in its ``LeaseBook``, keyed by the row's ``seq``.
3. The worker starts the run only if the store agrees: before it moves the run's token it asks
   the node's ``start_check`` (``confirm_start`` -> ``SharedStore.start``, or ``start_many`` for
   the starts its workers ask at once, in one statement: ``actors/shared/start_group.py``), so a cancel
   committed by any node before that wins. The record itself does no I/O.
4. When the run reports, the core decides what follows as for any durable task (next due time,
   counters, ledger row, events); being told ``durable_runs_once``, it gives the task back
   instead of waiting for its next run. The actor hands the outcome (``save``) to the node's
   outcome saver thread (``actors/shared/outcome_saver.py``) and goes on; the saver commits
   all that wait in one statement, each under its lease's fence (group commit): a node that
   lost its lease never commits, and the events are published only once the commit says the
   outcome stands (``OutcomesSaved``). Then only that lease is forgotten, by fence: the row,
   free once committed, may already be leased here again for its next slot.

An ``overlap="allow"`` task is held longer, under the same one lease: from the claim of a slot
until the last of its runs going ends. Meanwhile the core keeps it, and its further slots
start further runs here (``RunInstance`` records: ``_confirm_beside``); each run's end and each
slot are saved under the fence with the lease kept (``TaskUpdate.hold``: ``save`` tells by
whether the core still has the task), and the save after the last run going ends the lease.
A node that loses the lease saves nothing more (fenced out) and starts no more runs.

The node is the scheduler actor's ``Home`` (``actors/runtime/home.py``), by structure: the actor
calls it exactly as it calls a memory or a plain-store home. On a shared node every durable
task in the core (one with a ``store_seq``) is a leased one: durable tasks reach this node only
through leases (the facade commits new ones to the store, ``actors/api/shared_tasks.py``).

Threads: ``on_message`` (``take``, ``cancelled_in_store``, ``OutcomesSaved``, ``RetrySaves``),
``add``, ``save``, ``saving``, ``after_message``, ``cancel``, ``shut_down``, ``start`` and
``close`` run on the scheduler actor's thread; ``confirm_start`` on a worker's; ``holds`` on
any; ``_commit`` on the outcome saver's; the listener calls ``_hint`` and ``_saved_hint`` on
its own thread.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeGuard

import pykka

from actors.core.effects import Effects, RunOutcome
from actors.core.run_totals import CommitTimes
from actors.core.task_record import PROCESSES, THREADS, RunInstance, TaskRecord
from actors.core.task_state import COMPLETED, FAILED
from actors.core.timetable import Timetable
from actors.errors import DuplicateTaskError, RunLostError, SchedulerShutdownError, StoreError
from actors.runtime.base import tell_quietly
from actors.runtime.durable import load, run_record, task_update
from actors.runtime.home import NO_EVENTS, StartCheck
from actors.runtime.minting import is_memory_id
from actors.runtime.operations import Operation, operate
from actors.shared.clock import DatabaseClock
from actors.shared.lease_book import Held, LeaseBook
from actors.shared.lease_keeper import LeaseKeeper
from actors.shared.lease_loop import LeaseLoop
from actors.shared.operating import operate_stored
from actors.shared.outcome_board import OutcomeBoard
from actors.shared.outcome_saver import OutcomeSaver
from actors.shared.plan import down_before, local_due, on_grid
from actors.shared.start_group import StartGroup
from actors.store.protocol import IfExists, Lease, LedgerRow, SharedStore, Store, TaskDefinition, TaskUpdate
from actors.store.trigger_json import decode_trigger
from actors.sync.threads import ThreadRegistry
from messages import (
    CancelledInStore,
    Claimed,
    EventKind,
    OutcomesSaved,
    RetrySaves,
    RunNow,
    RunTask,
    StoreTotals,
    TaskEvent,
)

__all__ = ["SharedNode", "is_shared"]

logger = logging.getLogger(__name__)


def is_shared(store: Store) -> TypeGuard[SharedStore]:
    """Whether ``store`` is a ``SharedStore`` (several schedulers may share it: leases, fences)."""
    return all(callable(getattr(store, name, None)) for name in ("claim_due", "start", "save_outcomes"))


def _on_grid(update: TaskUpdate, held: Held) -> float | None:
    """The update's next due time: on its fixed-rate grid if it has one, after the slot that ran."""
    due = update.next_due
    if due is None or '"rate"' not in held.lease.task.trigger_json:
        return due
    trigger = decode_trigger(held.lease.task.trigger_json)
    # A run_now run took no slot of the grid: its next slot may be the one it waited for.
    ran = held.lease.task.next_due if held.lease.grid_due is None else None
    return on_grid(due, trigger.anchor, trigger.rate, ran=ran)


def _keys(updates: Iterable[TaskUpdate]) -> list[tuple[int, int]]:
    """The leases, by ``(seq, fence)``, that ``updates`` end (each fenced: a leased run's; not a ``hold``)."""
    return [(update.seq, update.fence) for update in updates if update.fence is not None and not update.hold]


_IN_NODE: Final = frozenset({THREADS, PROCESSES})  # executors whose runs die with their node
# Events of a leased task that do not wait for its save: DUE goes out at once; CANCELLED is the
# event of the node whose cancel won (``cancelled_in_store``), never of the save.
_NOT_WAITING: Final = frozenset({EventKind.DUE, EventKind.CANCELLED})


class LostRun:
    """The function of a run lost with its node too often: each call raises ``RunLostError``.

    It stands in for the task's own function for that one run (``SharedNode.take``), so the
    run ends as any failed run does (``FAILED`` event, counters, ledger row), on this node, without
    calling the function that took the nodes down. A new error each call, as ``DamagedTask``.
    """

    __slots__ = ("losses", "task_id")

    def __init__(self, task_id: str, losses: int) -> None:
        """Stand in for ``task_id``'s function, whose run was lost ``losses`` times."""
        self.task_id = task_id
        self.losses = losses

    def __call__(self, *args: object, **kwargs: object) -> object:
        """Raise the ``RunLostError`` (on the worker thread that runs it)."""
        raise RunLostError(self.task_id, self.losses)

    def __repr__(self) -> str:
        return f"LostRun({self.task_id!r}, {self.losses})"


class RunsBeside:
    """The runs of an ``overlap="allow"`` task held here, as the lease keeper sees them (``Stoppable``).

    Those runs are the core's (``RunInstance`` records, made as slots come), not the task's: a
    cancel with ``interrupt`` from another node, which the keeper learns at a renewal, is told
    to the scheduler actor, which cancels the task in its core with ``interrupt`` (each run
    going is asked to stop; the cancelling node publishes ``CANCELLED``). Any thread.
    """

    __slots__ = ("_tell", "task")

    def __init__(self, task: TaskRecord, tell: Callable[[object], object]) -> None:
        """Stand for ``task``'s runs; ``tell`` sends a message to the scheduler actor."""
        self.task = task
        self._tell = tell

    def interrupt(self) -> bool:
        """Ask the runs going to stop (through the scheduler actor); whether this asked."""
        self._tell(CancelledInStore(self.task.task_id, None, interrupt=True, elsewhere=True))
        return True

    def make_way(self) -> bool:
        """Nothing: only an ``overlap="replace"`` task's run is asked to make way."""
        return False


def _fail_lost(task: TaskRecord, losses: int) -> None:
    """Make ``task``'s leased run (not seen by anyone yet) fail with ``RunLostError`` when it starts.

    On a thread, never retried, timed or missed: a run that can only fail gains nothing from
    any of them, and a retry would run the function that killed its nodes again.
    """
    task.fn = LostRun(task.task_id, losses)
    task.spec = task.spec.replace(
        executor=THREADS, timeout=None, retry=None, coroutine=False, misfire_grace=None
    ).or_plain()


@dataclass(slots=True)
class _Unsaved:
    """Outcomes the store could not take yet, and what waits for them."""

    updates: list[TaskUpdate]
    runs: list[LedgerRow]
    events: list[TaskEvent]
    ended: list[tuple[TaskRecord, object]]
    retried: bool = False  # an attempt failed: maybe at its commit, which may have committed it


class SharedNode:
    """A scheduler's part in a shared store: leases, fenced outcomes, and their threads.

    The scheduler actor's ``Home`` (``actors/runtime/home.py``) for a shared store.
    """

    durable_runs_once = True  # a leased task goes back to the store after its run

    def __init__(
        self, store: SharedStore, clock: DatabaseClock, *, workers: Mapping[str, int], history: int
    ) -> None:
        """Prepare the node (caller's thread); ``start`` starts its threads.

        Args:
            store: The shared store, open.
            clock: The scheduler's clock, whose wall reading is the database's.
            workers: How many workers the scheduler has per executor (``THREADS``,
                ``PROCESSES``): the node claims runs of an executor only into its pool.
            history: How many ended tasks' values to keep for this node's handles.
        """
        self.store = store
        self.clock = clock
        self._workers = {executor: count for executor, count in workers.items() if count > 0}
        # While runs are short, a batch of runs is leased ahead of the idle workers
        # (plan.claim_ahead): claims carry more runs each, and a worker that ends a run finds
        # the next one here, started in its turn (a cancel still wins until then).
        self.book = LeaseBook(self._workers)
        self.board = OutcomeBoard(history)
        self._functions: dict[str, tuple[Callable[..., object], bool]] = {}  # load()'s cache
        self._lease_loop: LeaseLoop | None = None
        self._keeper: LeaseKeeper | None = None
        self._stop_listening: Callable[[], None] | None = None
        self._saver: OutcomeSaver[_Unsaved] = OutcomeSaver(self._commit, poll=store.poll)
        # The starts the workers ask at once: one statement (a lone one: SharedStore.start).
        self._starts = StartGroup(store.start_many, self._start_one)
        self._scheduler: pykka.ActorRef[Any] | None = None
        self.fenced_out = 0  # runs whose outcome the store refused (another node's stands)
        # _commits_lock guards commits: the saver's thread observes, the actor's takes snapshots.
        self._commits_lock = threading.Lock()
        self.commits = CommitTimes()  # each fenced save's commit time, for metrics (store_totals)
        # A leased run due before this instant (database clock) passed while no node ran it:
        # the node's start, less the time a live fleet takes to claim a due run (start sets it).
        self._fleet_was_down_before = -math.inf
        self._max_lost_runs = store.max_lost_runs  # a lease lost this often fails (the poison-pill limit)

    def _start_one(self, lease: Lease, seal: bool, beside: bool) -> float | None:
        """``SharedStore.start`` of one run (a worker's thread); ``beside`` is passed only when set."""
        if beside:
            return self.store.start(lease, seal=seal, beside=True)
        return self.store.start(lease, seal=seal)

    @property
    def start_check(self) -> StartCheck:
        """What a worker asks before it starts a run (``confirm_start``)."""
        return self.confirm_start

    # -- lifecycle (scheduler thread) -------------------------------------------------------

    def start(self, scheduler: pykka.ActorRef[Any], threads: ThreadRegistry | None) -> None:
        """Start the lease keeper, the lease loop and the store's listener.

        Raises:
            StoreError: The listener could not connect.
        """
        self._scheduler = scheduler
        self._fleet_was_down_before = down_before(self.store.db_now(), self.store.lease, self.store.poll)
        self.book.set_idle(self._workers)  # every worker is idle at first
        self._keeper = LeaseKeeper(self.store, self.book, threads=threads)
        self._lease_loop = LeaseLoop(
            self.store,
            self.book,
            self.clock,
            lambda leases: tell_quietly(scheduler, Claimed(tuple(leases))),
            threads=threads,
        )
        self._saver = OutcomeSaver(self._commit, poll=self.store.poll, threads=threads)
        self._keeper.start()
        self._saver.start()
        self._lease_loop.start()
        self._stop_listening = self.store.listen(self._hint, saved=self._saved_hint)

    def _hint(self) -> None:
        """The listener's callback (its thread): cheap, and folds any number of hints into one wake."""
        if self._lease_loop is not None:
            self._lease_loop.wake()
        if self._keeper is not None and len(self.book):
            self._keeper.wake()  # a run here may have been asked to stop
        self.board.changed()

    def _saved_hint(self) -> None:
        """The listener's callback for a saved outcome's hint (its thread).

        A run may be claimable now (the saved task's next slot), and a handle here may wait
        for that outcome; but a save adds no reference to import and asks no run here to stop,
        so neither are the references read nor the leases renewed for it (on a busy fleet,
        every save hints every node: those were a fifth of the statements sent).
        """
        if self._lease_loop is not None:
            self._lease_loop.wake(refresh=False)
        self.board.changed()

    def shut_down(self) -> None:
        """The scheduler is shutting down: claim nothing more, give back every run not started."""
        if self._lease_loop is not None:
            self._lease_loop.stop(timeout=0.0)  # joined by close()
        self._give_back(self.book.unstarted())

    def close(self) -> None:
        """Stop the threads, give back what was not started, close the store. Idempotent.

        A run still going (a stop by force) keeps its lease until the lease ends: another node
        then runs it again.
        """
        if self._lease_loop is not None:
            self._lease_loop.stop()
        unsaved = self._saver.stop()  # before the keeper: leases are renewed until their saves land
        if self._keeper is not None:
            self._keeper.stop()
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
        self._give_back(self.book.unstarted())
        if unsaved:
            logger.warning(
                "%d outcome(s) were never saved: their runs count as not run, and run again",
                sum(len(item.updates) for item in unsaved),
            )
        self.board.close()  # handles waiting here give up now: the task lives on in the store
        try:
            self.store.close()
        except Exception:
            logger.exception("could not close the store %s", self.store.location)

    def _give_back(self, leases: Sequence[Lease]) -> None:
        if not leases:
            return
        self.book.forget((lease.seq, lease.fence) for lease in leases)
        try:
            self.store.release(leases)
        except StoreError as error:  # they end with their lease
            logger.warning("could not give back %d leased run(s): %s", len(leases), error)

    # -- leased runs (scheduler thread) -----------------------------------------------------

    def on_message(self, message: object, core: Timetable, now: float) -> Sequence[TaskEvent]:
        """Handle the node's own messages to its scheduler; return the events to publish."""
        match message:
            case Claimed():
                self.take(message, core, now)
            case CancelledInStore():
                event = self.cancelled_in_store(message, core, now)
                return NO_EVENTS if event is None else (event,)
            case OutcomesSaved(events):
                return [event for event in events if isinstance(event, TaskEvent)]
            case RetrySaves():
                self._saver.wake()
            case _:
                logger.warning("scheduler ignored an unexpected message: %r", message)
        return NO_EVENTS

    def add(self, task: TaskRecord, definition: TaskDefinition, if_exists: IfExists) -> None:
        """Nothing to store here: the facade commits a shared store's durable tasks itself."""

    def take(self, message: Claimed, core: Timetable, now: float) -> None:
        """Give the core the runs the lease loop claimed: they are due, so they start at once."""
        leases = [lease for lease in message.leases if isinstance(lease, Lease)]
        self.book.arrived(leases)
        refused: list[Lease] = []
        with core.batch(now=now):
            for lease in leases:
                if core.closed:
                    refused.append(lease)
                    continue
                if core.has(lease.task.task_id):  # a memory task of this node has that id
                    logger.warning(
                        "leased task %r has the id of a memory task here; left to other nodes",
                        lease.task.task_id,
                    )
                    self.book.decline(lease.seq)  # not renewed, not claimed again here: it ends in time
                    continue
                try:
                    offset = core.wall_offset
                    manual = lease.grid_due is not None  # a run_now run: the row's due is its slot
                    task = load(
                        dataclasses.replace(lease.task, next_due=lease.grid_due) if manual else lease.task,
                        wall_offset=offset,
                        functions=self._functions,
                        location=self.store.location,
                    )
                    # A run out on an engine (Celery, Dask) does not die with its node: it is
                    # not counted against the limit (its next owner finds it on the engine).
                    if lease.lost_runs >= self._max_lost_runs and task.spec.executor in _IN_NODE:
                        logger.warning(
                            "leased run of %r was lost with its node %d times: it fails (RunLostError)",
                            task.task_id,
                            lease.lost_runs,
                        )
                        _fail_lost(task, lease.lost_runs)
                    if manual:
                        core.add(task, now=now)
                        if not core.run_now(task.task_id, now=now):
                            logger.warning("run_now of leased task %r refused by the core", task.task_id)
                    else:
                        task.due_at = local_due(task.due_wall, core.wall_offset, now)
                        due = lease.task.next_due
                        if due is not None and due < self._fleet_was_down_before:
                            core.add_caught_up(task, now=now)  # missed while the fleet was down: catch_up
                        else:
                            core.add(task, now=now)
                    self.book.attach(lease.seq, self._stoppable(task))
                except (DuplicateTaskError, SchedulerShutdownError):
                    refused.append(lease)
                except Exception:  # a row this version cannot read: leave it to its lease's end
                    logger.exception("leased task %r cannot be loaded", lease.task.task_id)
                    self.book.decline(lease.seq)
        self._give_back(refused)

    def _stoppable(self, task: TaskRecord) -> TaskRecord | RunsBeside:
        """What the lease keeper asks to stop for a leased task: its run, or its runs beside one another."""
        scheduler = self._scheduler
        if not task.spec.policies.allows or scheduler is None:
            return task
        return RunsBeside(task, lambda message: tell_quietly(scheduler, message))

    def _held_task(self, held: Held) -> object:
        """The task record a lease is held for (``RunsBeside`` stands for its task's runs)."""
        return held.task.task if isinstance(held.task, RunsBeside) else held.task

    def confirm_start(self, run: RunTask) -> bool:
        """Whether ``run`` may start (worker thread, before the run's token moves); record when it did.

        A memory task's run may. A leased run may only if the store agrees (``SharedStore.start``:
        a cancel committed by any node, or a lease lost, wins over it).
        """
        task = run.task
        if isinstance(task, RunInstance):  # a run of an overlap="allow" task: under its task's lease
            return self._confirm_beside(run, task)
        seq = task.store_seq if isinstance(task, TaskRecord) else None
        if seq is None:
            return True  # a memory task of this node: its token alone decides
        held = self.book.get(seq)
        if held is None or held.lost:
            return False
        try:
            started = self._starts.start(held.lease, seal=run.one_time)
        except StoreError as error:
            self.book.start_failed(seq)  # not started: the lease ends, and some node runs it then
            logger.warning("run of %r not started: the store failed: %s", run.task_id, error)
            return False
        if started is None:
            # Not started, and not to be saved: the store has the row as it should stay (cancelled,
            # paused, or another node's), so its save gives the lease back and writes nothing.
            self.book.start_failed(seq)
            logger.info(
                "run of %r not started: cancelled, paused or claimed elsewhere, meanwhile", run.task_id
            )
            return False
        if self.book.start(seq, started) and self._lease_loop is not None:
            self._lease_loop.wake_for_room()  # room for the next batch ahead
        return True

    def _confirm_beside(self, run: RunTask, instance: RunInstance) -> bool:
        """``confirm_start`` of one run of an ``overlap="allow"`` task (worker thread).

        Every run of such a task that this node starts goes under the one lease of its task's
        row, which the node holds from the claim of a slot until the last run going ends (see
        ``save``). Each run asks the store as a plain leased run does (a cancel or a pause from
        any node wins); a run after the first under the lease is ``beside`` (refused too once the
        row was replaced, rescheduled or given a ``run_now`` elsewhere). A refused run does not
        end the lease (others may be going): it is noted (``refused_beside``) and skipped.
        """
        seq = instance.parent.store_seq
        if seq is None:
            return True  # a memory task's run: its token alone decides
        held = self.book.get(seq)
        if held is None or held.lost:
            return False
        due = None if instance.manual else instance.due_wall  # (a run_now run has no slot to keep)
        try:
            started = self._starts.start(held.lease, seal=False, beside=held.started is not None)
        except StoreError as error:
            self.book.refused_beside(seq, due)
            logger.warning("run of %r not started: the store failed: %s", run.task_id, error)
            return False
        if started is None:
            self.book.refused_beside(seq, due)
            logger.info(
                "run %d of %r not started: cancelled, paused, changed or claimed elsewhere, meanwhile",
                run.run,
                run.task_id,
            )
            return False
        self.book.start(seq, started, run=instance.run_count + 1)
        return True

    def holds(self, task: TaskRecord) -> bool:
        """Whether ``task`` is the record of a run this node holds the lease of (any thread)."""
        held = None if task.store_seq is None else self.book.get(task.store_seq)
        return held is not None and self._held_task(held) is task

    # -- outcomes (scheduler thread) ---------------------------------------------------------

    def save(self, effects: Effects, core: Timetable) -> None:
        """Hand the outcomes of leased runs to the saver; their events wait for the commit.

        Each leased task is saved once, as its lease ends, under its fence, by the outcome
        saver's thread (group commit), which has the actor publish the events of those the
        store accepted (``OutcomesSaved``); the events of leased tasks leave ``effects`` here.
        ``CANCELLED`` events of leased tasks are dropped: on a shared store the node whose
        cancel won publishes it (``cancelled_in_store``).
        """
        leased = {task.task_id: task for task in effects.saves if task.store_seq is not None}
        if not leased:
            return
        updates: list[TaskUpdate] = []
        abandoned: list[Lease] = []
        for task in leased.values():
            held = None if task.store_seq is None else self.book.get(task.store_seq)
            if held is not None and held.start_failed:
                abandoned.append(held.lease)  # never started: give it back (or let it end)
            elif held is not None:
                update = task_update(task)
                next_due = _on_grid(update, held)
                # An overlap="allow" task the core still has: its runs go on (or its next slot
                # waits among them) under this lease, which this save keeps (the core lets the
                # task go, detached, when the last run going ends: that save ends the lease).
                hold = task.spec.policies.allows and core.tasks.get(task.task_id) is task
                refused = held.refused_due
                if not hold and refused is not None and next_due is not None and refused < next_due:
                    next_due = refused  # a slot whose run was refused (paused): the row keeps it
                fenced = dataclasses.replace(update, fence=held.lease.fence, next_due=next_due, hold=hold)
                updates.append(fenced)
        self._give_back(abandoned)
        saving = {update.task_id for update in updates}
        runs = [self._run_record(outcome, core) for outcome in effects.ledger]
        ended = [(t, v) for t, v in effects.finished if t.store_seq is not None and t.task_id in saving]
        # A DUE event says a slot came, not how a run ended: it goes out now (an overlap="allow"
        # task's slot is saved as it comes, and its run's STARTED must not come before it).
        waiting = [e for e in effects.events if e.task_id in saving and e.kind not in _NOT_WAITING]
        saved_runs = [run for run in runs if run is not None and run.task_id in saving]
        effects.events[:] = [e for e in effects.events if e.task_id not in leased or e.kind is EventKind.DUE]
        if updates:
            self._put(_Unsaved(updates, saved_runs, waiting, ended))

    def saving(self) -> bool:
        """Whether outcomes handed to the saver are still on their way (not those waiting for a retry)."""
        return self._saver.busy()

    def _run_record(self, outcome: RunOutcome, core: Timetable) -> LedgerRow | None:
        task = outcome.task
        if task.store_seq is None:
            return None
        record = dataclasses.replace(run_record(outcome, wall_offset=core.wall_offset), node=self.store.node)
        held = self.book.get(task.store_seq)
        if held is not None and held.run_starts is not None:  # runs beside one another: each its own
            started = self.book.run_started(task.store_seq, record.run)
            if started is not None and record.started is not None:
                record = dataclasses.replace(record, started=started)  # the database's clock
        elif held is not None and held.started is not None and record.started is not None:
            record = dataclasses.replace(record, started=held.started)  # the database's clock
        return record

    def _put(self, item: _Unsaved) -> None:
        """Queue ``item`` for the saver (actor's thread)."""
        # The values first: a handle that sees the committed row must find them here already.
        for task, value in item.ended:
            if task.store_seq is not None:
                if task.state is COMPLETED:
                    self.board.ended(task.task_id, task.store_seq, value, None)
                elif task.state is FAILED:
                    last = task.failures.last_error if task.failures is not None else None
                    self.board.ended(task.task_id, task.store_seq, None, last)
        self.book.saving(_keys(item.updates))
        self._saver.put(item)

    def _commit(self, items: list[_Unsaved]) -> bool:
        """Save ``items`` in one call (the saver's thread); whether it was committed.

        Then has the actor publish the events of the outcomes that stand (before the book lets
        their rows go: a run claimed again here comes after them), and forgets their leases.
        """
        seqs = [update.seq for item in items for update in item.updates]
        keys = _keys(update for item in items for update in item.updates)
        self.book.saving(keys)  # again: a retry after a failure
        began = time.perf_counter()
        try:
            fenced_out = self.store.save_outcomes(
                [update for item in items for update in item.updates],
                [run for item in items for run in item.runs],
            )
        except StoreError as error:
            logger.warning("could not save %d outcome(s), will try again: %s", len(seqs), error)
            self.book.saving(keys, saving=False)  # keep them alive until the retry
            for item in items:
                item.retried = True
            return False
        with self._commits_lock:
            self.commits.observe(time.perf_counter() - began)
        events: list[TaskEvent] = []
        for item in items:
            refused = {update.task_id for update in item.updates if update.seq in fenced_out}
            self._refused(refused, retried=item.retried)
            for task, _ in item.ended:
                if task.task_id in refused and task.store_seq is not None:
                    self.board.forget(task.task_id, task.store_seq)  # another node's outcome stands
            events += [event for event in item.events if event.task_id not in refused]
        if self._scheduler is not None:
            tell_quietly(self._scheduler, OutcomesSaved(tuple(events)))  # also: settled, drained?
        self.book.forget(keys)  # by fence: a row claimed here again meanwhile keeps its new lease
        self.board.changed()
        return True

    def _refused(self, refused: set[str], *, retried: bool) -> None:
        if refused and retried:  # an earlier attempt failed at its commit, and may have landed
            logger.info(
                "the outcome of %d run(s) (%s) was refused on a retry: an earlier attempt committed "
                "it, or another node's outcome stands",
                len(refused),
                ", ".join(sorted(refused)[:5]),
            )
        elif refused:
            self.fenced_out += len(refused)
            logger.warning(
                "the outcome of %d run(s) was refused (%s): this node lost their lease, and another "
                "node's outcome stands",
                len(refused),
                ", ".join(sorted(refused)[:5]),
            )

    def store_totals(self) -> StoreTotals:
        """The commit times of the fenced saves so far, and the runs the lease loop claimed."""
        with self._commits_lock:
            return self.commits.snapshot(claims=self.book.claimed)

    def after_message(self, core: Timetable) -> None:
        """Tell the lease loop how many workers are idle (after each message); wake it for more room."""
        idle = {executor: core.idle_count(executor) for executor in self._workers}
        if self.book.set_idle(idle) and self._lease_loop is not None:
            self._lease_loop.wake_for_room()

    # -- operations (scheduler thread) -------------------------------------------------------

    def operate(
        self, message: Operation, core: Timetable, now: float
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """Pause, resume, run now or reschedule a task (an operation message); reply and events.

        A memory task of this node is the core's. Any other (a durable task, or an id unknown
        here) is the store's, which decides whichever node holds it (``operating.py``): one
        statement, committed before the reply; a store error is the reply (raised at the call).
        """
        task = core.tasks.get(message.task_id)
        if (task is not None and task.store_seq is None) or is_memory_id(message.task_id):
            return operate(core, message, now), NO_EVENTS
        try:
            if isinstance(message, RunNow) and task is not None and self._runs_beside_here(task):
                return operate(core, message, now), NO_EVENTS
            reply, event = operate_stored(self.store, message, core, now)
        except StoreError as error:
            logger.warning("could not %s %r: %s", type(message).__name__, message.task_id, error)
            return error, NO_EVENTS
        return reply, NO_EVENTS if event is None else (event,)

    def _runs_beside_here(self, task: TaskRecord) -> bool:
        """Whether ``task`` is an ``overlap="allow"`` task whose lease this node holds, not paused.

        Its ``run_now`` is then the core's, at once, as in memory: one more run beside those
        going under the lease, if fewer than ``max_instances`` go (else ``False``). A paused
        row's ``run_now`` goes to the store (its run is claimed once the lease ends).

        Raises:
            StoreError: the store failed.
        """
        if not task.spec.policies.allows or task.store_seq is None:
            return False
        held = self.book.get(task.store_seq)
        if held is None or held.lost or self._held_task(held) is not task:
            return False
        return not self.store.is_paused(task.task_id)

    # -- cancels (scheduler thread) ----------------------------------------------------------

    def cancel(
        self, task_id: str, task: TaskRecord | None, core: Timetable, now: float, *, interrupt: bool = False
    ) -> tuple[bool, Sequence[TaskEvent]]:
        """Cancel a task (a ``Cancel`` message); return whether it won, and the events to publish.

        A memory task of this node is cancelled in the core. Any other (a durable task, or an
        id unknown here) is cancelled in the store, which decides whichever node holds it.
        """
        if task is not None and task.store_seq is None:
            return core.cancel(task_id, now=now, interrupt=interrupt), NO_EVENTS
        try:
            cancelled = self.store.cancel(task_id, interrupt=interrupt)
        except StoreError as error:
            logger.warning("could not cancel %r: %s", task_id, error)
            return False, NO_EVENTS
        if not cancelled:
            return False, NO_EVENTS
        event = self.cancelled_in_store(CancelledInStore(task_id, None, interrupt), core, now)
        return True, NO_EVENTS if event is None else (event,)

    def cancelled_in_store(self, message: CancelledInStore, core: Timetable, now: float) -> TaskEvent | None:
        """This node's cancel of a durable task was committed: stop its leased run, if any, and say so.

        Returns the ``CANCELLED`` event to publish (``None`` if nobody listens for it).
        """
        task = core.tasks.get(message.task_id)
        name = message.name
        if task is not None and task.store_seq is not None:  # leased here
            name = name or task.name
            # A run not started yet never starts here; one in progress is asked to stop, if told.
            core.cancel(message.task_id, now=now, interrupt=message.interrupt)
        if message.elsewhere or EventKind.CANCELLED not in core.wanted:
            return None
        label = name or message.task_id
        return TaskEvent(kind=EventKind.CANCELLED, task_id=message.task_id, name=label, at=now, final=True)
