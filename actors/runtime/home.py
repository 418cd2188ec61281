"""``Home``: where durable tasks live, as the scheduler actor sees it.

The scheduler actor has one code path for every store. What differs between memory, a plain
``Store`` (SQLite) and a shared store (PostgreSQL) sits behind this protocol, which each mode
implements:

- ``MemoryHome``: nothing is stored; every call is a no-op (or the core's own cancel).
- ``StoreHome``: a plain ``Store``, one writer: the actor writes what changed of durable tasks,
  their runs' outcomes and their cancels, and closes the store when it stops.
- ``SharedNode`` (``actors/shared/node.py``, structurally): a node of a shared store; durable
  tasks live in the database and come here one leased run at a time.

Threads: every method runs on the scheduler actor's thread, except the ``start_check`` callable,
which a worker calls on its own thread just before it moves a run's token (``run_batch``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

import pykka

from actors.core.effects import Effects
from actors.core.run_totals import CommitTimes
from actors.core.task_record import TaskRecord
from actors.core.timetable import Timetable
from actors.runtime.durable import run_record, task_update
from actors.runtime.operations import Operation, operate
from actors.store.protocol import IfExists, Store, TaskDefinition
from actors.sync.threads import ThreadRegistry
from messages import RunTask, StoreTotals, TaskEvent

__all__ = ["NO_EVENTS", "Home", "MemoryHome", "StartCheck", "StoreHome", "local_home"]

logger = logging.getLogger(__name__)

StartCheck = Callable[[RunTask], bool]
"""Asked by a worker (its thread) before a run's token moves: may this run start? ``False``
makes the run ``Skipped`` (the home knows why: a cancel committed elsewhere, a lost lease)."""

NO_EVENTS: Final[Sequence[TaskEvent]] = ()


class Home(Protocol):
    """Where durable tasks live, as the scheduler actor sees it. Every method: the actor's thread.

    Attributes:
        durable_runs_once: A durable task goes back to its home after one run (a shared
            store's lease), instead of staying in the core for its next run.
        start_check: What a worker asks before it starts a run (``StartCheck``), or ``None``
            when every run whose token allows may start (the plain path: one ``is None`` test).
    """

    @property
    def durable_runs_once(self) -> bool:
        """Whether a durable task leaves the core after each run (``Timetable.durable_runs_once``)."""

    @property
    def start_check(self) -> StartCheck | None:
        """The check a worker makes before it starts a run; ``None``: none needed."""

    def start(self, scheduler: pykka.ActorRef[Any], threads: ThreadRegistry | None) -> None:
        """Start the home's own threads, if any, reporting to ``scheduler`` (in ``on_start``)."""

    def add(self, task: TaskRecord, definition: TaskDefinition, if_exists: IfExists) -> None:
        """Store a task added with a caller-chosen id (``AddTask``); set its ``store_seq`` if stored.

        Raises:
            Exception: whatever the store raised; the actor replies it to the caller.
        """

    def save(self, effects: Effects, core: Timetable) -> None:
        """Write what changed of durable tasks and their runs' outcomes (under fences where there are).

        May drop events from ``effects.events`` that must wait for a commit, or not be published.
        """

    def cancel(
        self, task_id: str, task: TaskRecord | None, core: Timetable, now: float, *, interrupt: bool
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """Cancel task ``task_id`` (a ``Cancel`` message; ``task`` is its record here, if any).

        Returns:
            The reply (whether it was cancelled, or the store's error, the task cancelled here
            all the same), and the events to publish beyond those the core decides.
        """

    def operate(
        self, message: Operation, core: Timetable, now: float
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """Apply a ``Pause``, ``Resume``, ``RunNow`` or ``Reschedule`` (committed before the reply).

        Returns:
            The reply (``bool``, or the error to raise at the call: a ``Cron`` that never
            fires, a store that failed, nothing changed), and the events to publish beyond
            those the core decides.
        """

    def on_message(self, message: object, core: Timetable, now: float) -> Sequence[TaskEvent]:
        """Handle one of the home's own messages; return the events to publish.

        A shared node's: ``Claimed``, ``CancelledInStore``, ``OutcomesSaved``, ``RetrySaves``.
        """

    def shut_down(self) -> None:
        """The scheduler is shutting down (``Shutdown``): take nothing more in."""

    def saving(self) -> bool:
        """Whether outcomes are still on their way to the store (a shared node's group commit).

        The actor is neither settled nor drained while they are: their events are not out yet.
        The home tells the actor (one of its own messages) when they land.
        """

    def after_message(self, core: Timetable) -> None:
        """After each message the actor handles (cheap: it runs for every message)."""

    def close(self) -> None:
        """The actor stops: stop the home's threads and close its store. Never raises."""

    def store_totals(self) -> StoreTotals | None:
        """What the home counted of its store (commit times, claims), for metrics; ``None``: no store."""


class MemoryHome:
    """No store: nothing is durable, and every call but ``cancel`` does nothing."""

    durable_runs_once: bool = False
    start_check: StartCheck | None = None  # a run needs no more than its token's leave

    def start(self, scheduler: pykka.ActorRef[Any], threads: ThreadRegistry | None) -> None:
        """Nothing to start."""

    def add(self, task: TaskRecord, definition: TaskDefinition, if_exists: IfExists) -> None:
        """Nothing to store."""

    def save(self, effects: Effects, core: Timetable) -> None:
        """Nothing to save."""

    def cancel(
        self, task_id: str, task: TaskRecord | None, core: Timetable, now: float, *, interrupt: bool
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """Cancel in the core alone."""
        return core.cancel(task_id, now=now, interrupt=interrupt), NO_EVENTS

    def operate(
        self, message: Operation, core: Timetable, now: float
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """In the core, which decides; a durable task's change is saved with the message's effects."""
        return operate(core, message, now), NO_EVENTS

    def on_message(self, message: object, core: Timetable, now: float) -> Sequence[TaskEvent]:
        """Not expected without a shared store: logged and dropped."""
        logger.warning("scheduler ignored an unexpected message: %r", message)
        return NO_EVENTS

    def shut_down(self) -> None:
        """Nothing to stop."""

    def saving(self) -> bool:
        """Never: what it saves, it saves before ``save`` returns."""
        return False

    def after_message(self, core: Timetable) -> None:
        """Nothing to do."""

    def close(self) -> None:
        """Nothing to close."""

    def store_totals(self) -> StoreTotals | None:
        """No store, nothing counted."""
        return None


class StoreHome(MemoryHome):
    """A plain ``Store`` (SQLite), opened already: the actor is its one writer, and closes it."""

    def __init__(self, store: Store) -> None:
        """Write durable tasks to ``store`` (caller's thread; used on the actor's from then on)."""
        self.store = store
        self.commits = CommitTimes()  # each save's commit time, for metrics (store_totals)

    def add(self, task: TaskRecord, definition: TaskDefinition, if_exists: IfExists) -> None:
        """Commit the task's definition; its row's ``seq`` becomes ``task.store_seq``."""
        row, _ = self.store.add(definition, if_exists)
        task.store_seq = row.seq

    def save(self, effects: Effects, core: Timetable) -> None:
        """Write what changed of durable tasks, and their runs' outcomes, in one transaction."""
        offset = core.wall_offset
        paused = core.is_paused  # the flag a store that KeepsPaused keeps (others ignore it)
        # A reschedule's new trigger goes in the task's save (the last one given, if several).
        respecced = {r.task.task_id: r for r in effects.rescheduled} if effects.rescheduled else {}
        updates = [
            task_update(
                task, paused=paused(task.task_id), rescheduled=respecced.get(task.task_id), wall_offset=offset
            )
            for task in dict.fromkeys(effects.saves)
        ]
        runs = [run_record(outcome, wall_offset=offset) for outcome in effects.ledger]
        if not updates and not runs:
            return
        began = time.perf_counter()
        try:
            self.store.save(updates, runs)
            self.commits.observe(time.perf_counter() - began)
        except Exception:
            # Not fatal: the runs ran. After a restart they count as not run (at least once).
            logger.exception("could not save %d task(s) and %d run(s) to the store", len(updates), len(runs))

    def cancel(
        self, task_id: str, task: TaskRecord | None, core: Timetable, now: float, *, interrupt: bool
    ) -> tuple[bool | Exception, Sequence[TaskEvent]]:
        """Cancel in the core; a durable task's cancel is committed before the reply."""
        cancelled = core.cancel(task_id, now=now, interrupt=interrupt)
        if cancelled and task is not None and task.store_seq is not None:
            try:
                self.store.cancel(task_id)
            except Exception as error:
                logger.exception("could not commit the cancel of task %r", task_id)
                return error, NO_EVENTS
        return cancelled, NO_EVENTS

    def store_totals(self) -> StoreTotals:
        """The commit times of the saves so far."""
        return self.commits.snapshot()

    def close(self) -> None:
        """Close the store (errors logged)."""
        try:
            self.store.close()
        except Exception:
            logger.exception("could not close the store %s", self.store.location)


def local_home(store: Store | None) -> Home:
    """The home of a scheduler that does not share its store: ``StoreHome``, or memory without one."""
    return MemoryHome() if store is None else StoreHome(store)
