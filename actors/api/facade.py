"""``Scheduler``: the facade that starts the actors and turns method calls into messages.

Its methods live in its parts, one module each, which it inherits: ``scheduling.py``
(``schedule_*``), ``messaging.py`` (``tell_*``), ``queries.py`` (``cancel``, ``handle``, ``info``,
``tasks``, ``stats``), ``observing.py`` (``subscribe``, ``settle``, ``advance``), over
``submitting.py`` (a task's record built and handed over) and ``plumbing.py`` (sending and
asking). Here: starting (``__init__``) and stopping (``shutdown``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import threading
import warnings
import weakref
from collections.abc import Iterable, Mapping
from concurrent.futures import Future
from types import MappingProxyType
from typing import Final

import pykka

from actors.api.executor_checks import check_executors
from actors.api.history import HistoryMixin
from actors.api.local_tasks import LocalTasks
from actors.api.messaging import Messaging
from actors.api.observing import AnyListener, Observing
from actors.api.operations import LiveTaskOperations
from actors.api.plumbing import FAR_MARGIN, LATEST_DUE
from actors.api.queries import Queries
from actors.api.scheduling import Scheduling
from actors.api.shared_tasks import SharedTasks
from actors.api.validation import check_clock
from actors.core.task_record import PROCESSES, THREADS, TaskRecord
from actors.errors import SchedulerStartError
from actors.runtime.base import stop_quietly
from actors.runtime.durable import LoadedTasks
from actors.runtime.durable_after import read_waits
from actors.runtime.executor_protocol import Executor
from actors.runtime.home import local_home
from actors.runtime.limits import MAX_PROCESSES, MAX_WORKERS, check_count
from actors.runtime.minting import IdMint
from actors.runtime.scheduler import OutboxItem, SchedulerActor
from actors.shared.clock import DatabaseClock
from actors.shared.node import SharedNode, is_shared
from actors.store import KeepsPaused, LoadsInParts, Store, open_store
from actors.sync.clock import Clock, MonotonicClock
from actors.sync.outbox import Outbox
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.waiting import Deadline, check_timeout, join, join_any_order, result_within
from messages import Shutdown, TaskId
from messages.triggers import require_finite

DROPPED_STORE_WAIT: Final = 5.0
"""Seconds a collected ``Scheduler`` with a store (never shut down) waits for it to stop and unlock."""

START_TIMEOUT: Final = 60.0
"""Seconds the constructor waits for the scheduler to start its threads."""

STOP_RESERVE: Final = 0.25
"""Of a ``shutdown(timeout=T)``, the part kept to stop by force if the tasks do not finish in time."""


class Scheduler(Scheduling, Messaging, Queries, Observing, LiveTaskOperations, HistoryMixin):
    """Runs one-time and recurring tasks on a pool of worker actors.

    Starts a ``SchedulerActor``, which starts ``workers`` ``WorkerActor``s, an ``EventBus`` and
    a timer thread. Every method may be called from any thread at once, including from a task
    or a listener of this scheduler (``docs/reliability.md`` lists what each does there).
    Tasks run on worker threads, listeners on the bus thread; the caller's thread only
    builds and sends messages (``schedule_*`` with a minted id and ``TaskHandle.cancel`` wait
    for no reply; a caller that has left more than ``OUTBOX_BACKLOG`` items for the scheduler
    waits until it takes them).
    """

    def __init__(
        self,
        workers: int = 4,
        clock: Clock | None = None,
        history: int = 10_000,
        processes: int = 0,
        *,
        store: Store | str | os.PathLike[str] | None = None,
        hung_grace: float = 5.0,
        listeners: Iterable[AnyListener] = (),
        executors: Mapping[str, Executor] | None = None,
    ) -> None:
        """Start the scheduler; return once its threads run and its stored tasks are loaded.

        Args:
            workers: How many tasks may run at once on threads (1 to ``MAX_WORKERS``, 1024).
            clock: Where time is read; a ``MonotonicClock`` by default, a ``FakeClock`` in tests.
            history: How many finished tasks ``info`` still knows about (at least 0).
            processes: How many worker processes run tasks scheduled with
                ``executor="process"`` (0 to ``MAX_PROCESSES``, 256); each starts with the
                first task that needs it.
            store: Where durable tasks live: ``None`` (memory only), a path (an SQLite file,
                created if missing), a PostgreSQL URL (``"postgresql://..."``: a schedule
                shared by every scheduler that opens it, ``docs/scale-out.md``) or a ``Store``.
                Every live task in it is loaded and scheduled (on a shared store: run by
                whichever scheduler claims each run); new tasks are durable by default
                (``docs/persistence.md``).
            hung_grace: Seconds a run that outlived its task's ``timeout`` (and was asked to
                stop) still gets before its worker is abandoned: the run counts ``FAILED``
                with ``TaskTimeoutError`` and a new worker takes the old one's place.
            listeners: Listeners subscribed to every event kind before anything runs, as
                ``subscribe`` would (and for as long as the scheduler runs): they also see the
                events of stored tasks that are due at once when they are loaded, which a
                ``subscribe`` after the constructor may miss.
            executors: Executors to run tasks on besides the threads and processes, by name
                (``schedule_*(..., executor=name)``): ``CeleryExecutor``, ``DaskExecutor`` or
                your own ``Executor`` (``docs/executors.md``). The scheduler closes them when it stops.

        Raises:
            ValueError: ``workers`` out of range, ``history < 0``, ``hung_grace`` not a
                finite number >= 0, or a ``FakeClock`` with a shared store (whose database's
                clock decides what is due).
            TypeError: ``workers`` or ``history`` is not an int, ``clock`` is not a ``Clock``,
                ``store`` is neither a path nor a ``Store``, or a listener is neither callable
                nor an ``ActorRef``.
            StoreLockedError: another live scheduler holds the store.
            StoreError: the store cannot be used (the message names it and says why).
            SchedulerStartError: the system refused to start a thread.
        """
        check_count("workers", workers, 1, MAX_WORKERS)
        check_count("history", history, 0)
        self._processes = check_count("processes", processes, 0, MAX_PROCESSES)
        self._executors = check_executors(executors)
        if require_finite("hung_grace", hung_grace) < 0:
            raise ValueError(f"hung_grace must not be negative, got {hung_grace!r}")
        self._clock: Clock = check_clock(clock) if clock is not None else MonotonicClock()
        self._subscription_ids = itertools.count(1)
        subscriptions = [self._subscription(listener, None) for listener in listeners]
        self._store = None if store is None else open_store(store)
        node: SharedNode | None = None
        try:
            if self._store is not None and is_shared(self._store):
                # A shared store: its database's clock is the wall clock (what is due, run keys).
                self._clock = DatabaseClock.over(self._clock, self._store)
                pools = {THREADS: workers, PROCESSES: processes}  # it claims runs only into these
                pools.update((name, each.max_in_flight) for name, each in self._executors.items())
                node = SharedNode(self._store, self._clock, workers=pools, history=history)
            loaded = self._load(shared=node is not None)
        except BaseException:
            if self._store is not None:
                self._store.close()
            raise
        # Due times below this (clock seconds) are surely before LATEST_DUE: checked with one
        # comparison; above it, exactly (_check_due_time). A year of margin for wall-clock jumps.
        self._far_at = LATEST_DUE.timestamp() - FAR_MARGIN - self._wall_offset()
        self._threads = ThreadRegistry()
        # Tasks with minted ids and handles' cancels go through this outbox: the scheduler
        # takes them in bulk, in the order they were put.
        self._outbox: Outbox[OutboxItem] = Outbox()
        # The scheduler's live tasks by id: written only by its thread, read here to cancel
        # by id without a round trip (one dict lookup, then the task's token decides).
        live: dict[TaskId, TaskRecord] = {}
        self._live: Mapping[TaskId, TaskRecord] = MappingProxyType(live)
        self._mint = IdMint(None if self._store is None else self._store.reserve_minted)
        # _lock guards _closed, and is held while sending, so that nothing is sent after Shutdown.
        self._lock = threading.Lock()
        self._closed = False
        # Where the facade's calls find the tasks (the one place the modes differ for it): this
        # node's scheduler, and on a shared store the database in front of it (directory.py).
        local = LocalTasks(self, self._live, self._mint, None if node is not None else self._store)
        self._directory = local if node is None else SharedTasks(node, local, self, self._live)
        self._shared = node is not None
        # Chosen once, here, so that the hot paths make no choice per call: a handle's cancel
        # goes straight to the directory, and a plain task without a store (schedule_once's
        # fast path) straight to the outbox.
        self._revoke = self._directory.revoke  # type: ignore[method-assign]
        self._add_plain = local.add_memory if self._store is None else None
        started: Future[None] = Future()
        self._stopped: Future[None] = Future()
        self._ref = SchedulerActor.start(
            clock=self._clock,
            workers=workers,
            processes=processes,
            executors=self._executors,
            history=history,
            outbox=self._outbox,
            threads=self._threads,
            mint=self._mint,
            started=started,
            stopped=self._stopped,
            live=live,
            home=node if node is not None else local_home(self._store),
            loaded=loaded.records,
            parked=loaded.parked,
            due=loaded.due,
            paused=loaded.paused,
            hung_grace=float(hung_grace),
            subscriptions=subscriptions,
        )
        self._drained: Future[None] = Future()
        self._forced_stop = False  # a shutdown ran out of time and stopped the scheduler anyway
        try:
            result_within(started, Deadline(START_TIMEOUT))
        except BaseException as error:
            self._abort_start()
            raise SchedulerStartError(
                f"the scheduler could not start its {workers} workers: {error}"
            ) from error
        # A scheduler dropped without shutdown(): stop its threads, and say so, as files do.
        self._finalizer = weakref.finalize(
            self,
            _dropped,
            self._ref,
            repr(self),
            self._stopped if self._store is not None else None,
            self._threads,
        )

    def _abort_start(self) -> None:
        self._closed = True
        stop_quietly(self._ref)  # its on_stop closes the store
        deadline = Deadline(5.0)
        for thread, _ in self._threads.threads():
            join(thread, deadline)

    def _load(self, *, shared: bool) -> LoadedTasks:
        """Read the store's live tasks back (caller's thread, before the actors start).

        ``shared``: the store is shared, and its tasks stay in it (nodes claim their runs): none is read.
        """
        location = "the store" if self._store is None else self._store.location
        if shared:
            return LoadedTasks(wall_offset=self._wall_offset(), location=location)
        waits = read_waits(self._store)  # schedule_after's edges: their rows load as records
        loaded = LoadedTasks(wall_offset=self._wall_offset(), location=location, waits=waits)
        store: object = self._store
        if isinstance(store, LoadsInParts):
            store.load_parts(loaded.take)  # a part is taken before the next is read
        elif self._store is not None:
            loaded.take(self._store.load())
        if isinstance(store, KeepsPaused):
            loaded.paused = store.paused_ids()  # a paused task stays paused after a restart
        return loaded

    # -- properties -------------------------------------------------------------------------

    @property
    def ref(self) -> pykka.ActorRef[SchedulerActor]:
        """The ``SchedulerActor``'s ref, for sending it ``Schedule``, ``Cancel``, ``Tick`` and queries."""
        return self._ref

    @property
    def is_shared(self) -> bool:
        """Whether this scheduler is a node of a shared store (PostgreSQL).

        Then its tasks are the store's rows, whichever node runs them: ``tasks()`` and ``info``
        read them from the database. Any thread.
        """
        return self._shared

    # -- shutdown ---------------------------------------------------------------------------

    def shutdown(self, wait: bool = True, timeout: float | None = None) -> None:
        """Stop: cancel pending tasks, let running ones finish, then end every thread. Idempotent.

        Pending tasks end ``CANCELLED`` (their events are delivered); running one-time tasks
        finish and report; running recurring tasks finish their run and end ``CANCELLED``.
        With ``wait`` the call blocks until all that is done and every thread the scheduler
        started has ended, or ``timeout`` seconds pass: then the scheduler, the bus and the
        idle workers stop anyway, a run still going ends ``FAILED`` with
        ``SchedulerShutdownError`` (its handle says so), and its worker lives on until the
        task returns (a daemon thread: it never keeps the interpreter from exiting; later
        ``shutdown`` calls do not wait for it). Without ``wait`` it returns at once and the
        threads end on their own. Called from a task or a listener of this scheduler it never
        waits (it would wait for itself): the calling run finishes and reports as usual.
        """
        seconds = check_timeout(timeout)
        self._finalizer.detach()
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._ref.tell(Shutdown(self._drained))
                except pykka.ActorDeadError:
                    self._drained.set_result(None)
        if not wait or self._threads.role_of(threading.current_thread()) is not None:
            return
        deadline = Deadline(seconds)
        drain_deadline = Deadline(
            None if seconds is None else max(0.0, seconds - min(STOP_RESERVE, seconds / 4))
        )
        forced_now = False
        if not self._forced_stop and not self._stopped.done():
            try:
                result_within(self._drained, drain_deadline)
            except TimeoutError:
                # Out of time: stop anyway (its on_stop ends every task and stops the workers
                # and the bus); only a worker stuck in a task lives on. A later shutdown()
                # does not wait for that worker.
                self._forced_stop = forced_now = True
                stop_quietly(self._ref)
        threads = self._threads.threads()
        for thread, role in threads:
            if role is not Role.WORKER and role is not Role.ABANDONED:
                join(thread, deadline)
        workers = [thread for thread, role in threads if role is Role.WORKER]
        if not self._forced_stop:
            for thread in workers:
                join(thread, deadline)
        elif forced_now:
            join_any_order(workers, deadline)  # a hung worker must not eat the idle ones' share

    def __enter__(self) -> Scheduler:
        """Return the scheduler; it is shut down (waiting) when the block ends."""
        return self

    def __exit__(self, *_: object) -> None:
        """Shut down and wait."""
        self.shutdown(wait=True)

    def __repr__(self) -> str:
        state = "shut down" if self._closed else "running"
        try:
            wall = self._clock.wall().isoformat(timespec="seconds")
        except (OverflowError, ValueError):
            wall = "?"
        return f"<Scheduler {state} now={self._clock.now():.3f} wall={wall} clock={self._clock!r}>"


def _dropped(
    ref: pykka.ActorRef[SchedulerActor],
    description: str,
    stopped: Future[None] | None,
    threads: ThreadRegistry,
) -> None:
    """A ``Scheduler`` was garbage-collected without ``shutdown()``: stop its actors, and warn.

    ``stopped``, for a scheduler with a store: wait (up to ``DROPPED_STORE_WAIT``) until it has
    stopped and closed its store, so the store's lock is free when the collection that dropped
    it returns (a new scheduler on the file right after must not find it locked). Not from
    one of its own threads (a task or listener that dropped it): that would wait for itself.
    """
    warnings.warn(f"{description} was never shut down; stopping it now", ResourceWarning, stacklevel=1)
    with contextlib.suppress(pykka.ActorDeadError):
        ref.tell(Shutdown(Future()))
    if stopped is not None and threads.role_of(threading.current_thread()) is None:
        with contextlib.suppress(TimeoutError):
            result_within(stopped, Deadline(DROPPED_STORE_WAIT))
