"""``Scheduler``: the facade that starts the actors and turns method calls into messages."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from datetime import UTC, datetime, tzinfo
from types import MappingProxyType
from typing import Any, Final

import pykka

from actors.api import stepping
from actors.api.handles import Subscription, TaskHandle, record_of
from actors.api.history import HistoryMixin
from actors.api.mailboxes import check_refs
from actors.api.shared_tasks import SharedTasks
from actors.api.validation import (
    PLAIN_TAIL,
    TaskOptions,
    check_bulk,
    check_clock,
    check_task,
    check_task_id,
    once_due_at,
    process_target,
    resolve_task_function,
)
from actors.core.cron import CronSchedule
from actors.core.parked import Batch, Parcel
from actors.core.retry import Retry
from actors.core.task_record import (
    INLINE,
    PROCESSES,
    THREADS,
    Recurrence,
    TaskRecord,
    TaskSpec,
    default_name,
    makes_coroutine,
    plain_function,
)
from actors.errors import (
    DuplicateTaskError,
    SchedulerInternalError,
    SchedulerShutdownError,
    SchedulerStartError,
    UnknownTaskError,
    WouldDeadlockError,
)
from actors.references import check_json_arguments, reference_of
from actors.runtime.base import stop_quietly
from actors.runtime.durable import LoadedTasks, definition, json_arguments
from actors.runtime.limits import MAX_PROCESSES, MAX_WORKERS, check_count
from actors.runtime.minting import IdMint, is_memory_id
from actors.runtime.scheduler import OutboxItem, SchedulerActor
from actors.shared.clock import DatabaseClock
from actors.shared.node import SharedNode, is_shared
from actors.store import LoadsInParts, Store, open_store
from actors.sync.clock import Clock, MonotonicClock
from actors.sync.outbox import Outbox
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.token import FREE, RAN, RUNNING
from actors.sync.waiting import Deadline, check_timeout, join, join_any_order, result_within
from messages import (
    AddTask,
    Cancel,
    Cancelled,
    Cron,
    Drain,
    EventKind,
    FindTask,
    FixedDelay,
    FixedRate,
    QueryNextDue,
    QueryStats,
    QueryTask,
    QueryTasks,
    SchedulerStats,
    Settle,
    Shutdown,
    Subscribe,
    TaskEvent,
    TaskId,
    TaskInfo,
    Unsubscribe,
)
from messages.commands import EMPTY_KWARGS, as_args
from messages.events import event_kind
from messages.triggers import require_finite

logger = logging.getLogger(__name__)

LATEST_DUE: Final = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
"""The latest instant a task may first be due (``schedule_*`` refuses a later one: ``ValueError``)."""

_YEAR: Final = 366 * 86400.0
_ROUNDING: Final = 0.5  # seconds: float rounding in placing LATEST_DUE on the clock is far less

DROPPED_STORE_WAIT: Final = 5.0
"""Seconds a collected ``Scheduler`` with a store (never shut down) waits for it to stop and unlock."""

ASK_TIMEOUT: Final = 30.0
"""Seconds any query waits for the scheduler's reply before raising ``TimeoutError``."""

START_TIMEOUT: Final = 60.0
"""Seconds the constructor waits for the scheduler to start its threads."""

STOP_RESERVE: Final = 0.25
"""Of a ``shutdown(timeout=T)``, the part kept to stop by force if the tasks do not finish in time."""

_DRAIN: Final = Drain()

OUTBOX_BACKLOG: Final = 512
"""Items a caller may leave in the scheduler's outbox before it waits for the scheduler to take
them (a few milliseconds of the scheduler's work). The wait also lets the other threads have
the GIL: a thread filling a big schedule would otherwise hold it for whole switch intervals, and
every hop of a due task (timer, scheduler, worker) would wait one out."""

ROOM_TIMEOUT: Final = 1.0
"""The longest a caller waits for that (a stuck scheduler must not hang its callers)."""

PARCEL_SIZE: Final = 1024
"""Tasks per part of a ``schedule_many`` call (about a millisecond of the scheduler's work)."""

PARCELS_AHEAD: Final = 2
"""Items ``schedule_many`` leaves in the outbox before it waits for the scheduler to take them:
the scheduler takes everything waiting at once, and a due task waits for that."""

AnyListener = Callable[[TaskEvent], object] | pykka.ActorRef[Any]


class Scheduler(HistoryMixin):  # history(): actors/api/history.py
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
        if require_finite("hung_grace", hung_grace) < 0:
            raise ValueError(f"hung_grace must not be negative, got {hung_grace!r}")
        self._clock: Clock = check_clock(clock) if clock is not None else MonotonicClock()
        self._subscription_ids = itertools.count(1)
        subscriptions = [self._subscription(listener, None) for listener in listeners]
        self._store = None if store is None else open_store(store)
        node: SharedNode | None = None
        self._shared_tasks: SharedTasks | None = None
        try:
            if self._store is not None and is_shared(self._store):
                # A shared store: its database's clock is the wall clock (what is due, run keys).
                self._clock = DatabaseClock.over(self._clock, self._store)
                pools = {THREADS: workers, PROCESSES: processes}  # it claims runs only into these
                node = SharedNode(self._store, self._clock, workers=pools, history=history)
                self._shared_tasks = SharedTasks(node)
            loaded = self._load(shared=node is not None)
        except BaseException:
            if self._store is not None:
                self._store.close()
            raise
        # Due times below this (clock seconds) are surely before LATEST_DUE: checked with one
        # comparison; above it, exactly (_check_due_time). A year of margin for wall-clock jumps.
        self._far_at = LATEST_DUE.timestamp() - _YEAR - self._wall_offset()
        self._threads = ThreadRegistry()
        # Tasks with minted ids and handles' cancels go through this outbox: the scheduler
        # takes them in bulk, in the order they were put.
        self._outbox: Outbox[OutboxItem] = Outbox()
        # The scheduler's live tasks by id: written only by its thread, read here to cancel
        # by id without a round trip (one dict lookup, then the task's token decides).
        live: dict[TaskId, TaskRecord] = {}
        self._live: Mapping[TaskId, TaskRecord] = MappingProxyType(live)
        self._mint = IdMint(None if self._store is None else self._store.reserve_minted)
        started: Future[None] = Future()
        self._stopped: Future[None] = Future()
        self._ref = SchedulerActor.start(
            clock=self._clock,
            workers=workers,
            processes=processes,
            history=history,
            outbox=self._outbox,
            threads=self._threads,
            mint=self._mint,
            started=started,
            stopped=self._stopped,
            live=live,
            store=None if node is not None else self._store,
            loaded=loaded.records,
            parked=loaded.parked,
            due=loaded.due,
            shared=node,
            hung_grace=float(hung_grace),
            subscriptions=subscriptions,
        )
        # _lock guards _closed, and is held while sending, so that nothing is sent after Shutdown.
        self._lock = threading.Lock()
        self._closed = False
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
        loaded = LoadedTasks(wall_offset=self._wall_offset(), location=location)
        if shared:
            return loaded
        store: object = self._store
        if isinstance(store, LoadsInParts):
            store.load_parts(loaded.take)  # a part is taken before the next is read
        elif self._store is not None:
            loaded.take(self._store.load())
        return loaded

    def _check_due_time(self, due_at: float) -> None:
        """Refuse a first due time past ``LATEST_DUE``, which no ``datetime`` could show (``ValueError``)."""
        if due_at + self._wall_offset() > LATEST_DUE.timestamp() + _ROUNDING:
            raise ValueError(
                f"the task would be due at clock time {due_at!r}, after {LATEST_DUE.isoformat()}: "
                "the latest a task may be due (a later time cannot be shown as a datetime)"
            )

    def _wall_offset(self) -> float:
        """Wall-clock time (UTC epoch seconds) minus clock time, now (``SchedulerPort``)."""
        return self._clock.wall().timestamp() - self._clock.now()

    # -- properties -------------------------------------------------------------------------

    @property
    def ref(self) -> pykka.ActorRef[SchedulerActor]:
        """The ``SchedulerActor``'s ref, for sending it ``Schedule``, ``Cancel``, ``Tick`` and queries."""
        return self._ref

    @property
    def clock(self) -> Clock:
        """The clock the scheduler reads."""
        return self._clock

    # -- scheduling -------------------------------------------------------------------------

    def schedule_once(
        self,
        fn: Callable[..., object] | str,
        delay: float | None = None,
        *,
        at: float | datetime | None = None,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        executor: str = THREADS,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        durable: bool | None = None,
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> TaskHandle:
        """Run ``fn(*args, **kwargs)`` once, ``delay`` seconds from now or at ``at``.

        ``at`` is clock seconds, or an aware ``datetime``: a wall-clock instant, which stays
        right if the system clock is reset meanwhile (the task is re-planned when the wall
        clock jumps; see ``docs/calendar.md``). A time already past, or a negative delay,
        means as soon as possible. ``fn`` may also
        be a reference, ``"package.module:function"``, imported now.

        Options (all keyword-only, and the same for every ``schedule_*``):

        - ``task_id``: your id for the task (``None``: one is minted, ``"task-<n>"``; a
          memory-only task's on a scheduler with a store is ``"task-m<n>"``, minted without
          the store, so the store's being unreachable never stops one being scheduled);
          ``if_exists`` says what to do when it is live: ``"error"`` raises
          ``DuplicateTaskError``, ``"keep"`` leaves the live task as it is and returns its
          handle, ``"replace"`` gives the live task this definition (function, arguments,
          trigger, options), keeping its counters, and returns its handle.
        - ``name``: a label for events and snapshots (default: the function's name).
        - ``executor="process"`` runs it in one of the scheduler's worker processes
          (``Scheduler(processes=N)``): ``fn`` must then be importable by its name (a
          module-level function, or a reference) and the arguments picklable; its result or
          exception comes back as for a thread task, and a run that kills its process fails
          with ``ProcessDiedError``.
        - ``misfire_grace``: a run that would start more than this many seconds after its
          due time is not run: ``MISSED`` is published, and a one-time task ends ``FAILED``
          with ``MissedRunError`` (``None``, the default: a late run still runs, once).
        - ``timeout``: seconds a run may take. Then the run is asked to stop
          (``current_run().cancel_requested``; an ``async def`` task's coroutine is cancelled)
          and ``TIMED_OUT`` is published; a run still going ``hung_grace`` seconds later
          counts ``FAILED`` with ``TaskTimeoutError`` and its worker is replaced
          (``docs/lifecycle.md``).
        - ``retry``: a ``Retry`` policy: a failed run is tried again, after a growing delay,
          before it counts as failed.
        - ``keep_result``: keep each run's return value with its run record, when it is JSON
          data of at most 64 KiB: ``history`` shows it, and on a shared store ``result()``
          returns it on every node (``docs/lifecycle.md``, "History").
        - ``durable``: keep the task in the scheduler's store (the default when it has one;
          ``True`` without a store is a ``ValueError``). A durable task's ``fn`` is stored by
          reference and its arguments as JSON (tuples come back as lists): it returns only
          once the task is committed.

        Raises:
            TypeError: ``fn`` is not callable (or is ``async def``); an argument has the wrong
                type (``args`` may be any sequence, a list or a tuple, but not a str or bytes);
                a process task's argument cannot be pickled; a durable task's argument
                does not round-trip through JSON.
            ValueError: both or neither of ``delay``/``at``; a NaN or infinite time, or one
                after ``LATEST_DUE`` (9999-12-31T23:59:59Z); a naive ``datetime``; a ``task_id``
                of the reserved form ``task-<digits>``; a reference
                that does not import; a process or durable task whose ``fn`` has no importable
                name (a lambda, a nested function, a bound method...: the message says why and
                what to pass); ``executor="process"`` without worker processes; ``durable=True``
                without a store; a bad ``if_exists`` or ``misfire_grace``.
            DuplicateTaskError: ``task_id`` belongs to a live task (and ``if_exists="error"``).
            StoreError: the store could not commit the task.
            SchedulerShutdownError: after ``shutdown``.
        """
        tail = (executor, misfire_grace, if_exists, durable, timeout, retry, keep_result)  # KEYWORD_TAIL
        if at is None and type(delay) is float and delay - delay == 0.0:  # the common case, fast
            due_at = self._clock.now() + delay
            if (
                tail == PLAIN_TAIL  # TaskOptions.plain, but for a name, before building them
                and task_id is None
                and kwargs is None
                and name is None
                and type(args) is tuple
                and self._store is None
                and due_at < self._far_at
                and plain_function(fn)
            ):
                task = TaskRecord("", fn, args, EMPTY_KWARGS, due_at, default_name(fn))  # type: ignore[arg-type]
                return self._submit(task, None)
        else:
            due_at = once_due_at(self._clock, delay, at)
        options = TaskOptions(name, None, *tail)
        due_wall = at.timestamp() if isinstance(at, datetime) else None  # a wall-clock task
        return self._schedule(fn, args, kwargs, due_at, None, task_id, options, due_wall)

    def schedule_many(
        self,
        fn: Callable[..., object] | str,
        delays: Iterable[float],
        *,
        args: Iterable[Sequence[Any]] | None = None,
        kwargs: Mapping[str, Any] | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> list[TaskId]:
        """Run ``fn(*args[i], **kwargs)`` once, ``delays[i]`` seconds from now, for each ``i``; return ids.

        The bulk form of ``schedule_once``, for large schedules: a million tasks in about a
        sixth of the time of a million ``schedule_once`` calls, and while they wait they cost
        the garbage collector next to nothing, as long as their arguments are plain data
        (numbers, strings, tuples of them): each waits as a tuple, not as a record
        (docs/performance.md, "A million tasks in one process"). Each task is an ordinary
        one-time task from then on: it runs on a worker thread, ``cancel``, ``info``,
        ``handle`` and ``tasks`` take its id, and events name it. The ids are minted
        (``"task-<n>"``), in the order of ``delays``; ``args`` gives each task its positional
        arguments (default: none), and every task shares ``fn``, ``kwargs``, ``name`` and the
        options (``misfire_grace``, ``timeout``, ``retry``, ``keep_result``: as for ``schedule_once``).

        Returns ids, not handles: a million handles would be a million more objects to keep.
        ``handle(task_id)`` gives one. The tasks are kept in memory only, even on a scheduler
        with a store (as ``schedule_after``'s). The caller's thread checks everything before
        anything is scheduled, then hands the tasks over in parts of ``PARCEL_SIZE``, waiting
        for the scheduler to take each part before it sends many more (backpressure), without
        holding up other callers meanwhile.

        Raises:
            TypeError: ``fn`` is not callable; ``delays`` or ``args`` is not an iterable; a delay
                is not a number; an item of ``args`` is not a sequence of arguments (a tuple or a
                list; a str is not one: the message gives its index);
                an option has the wrong type.
            ValueError: a NaN or infinite delay; ``args`` and ``delays`` differ in length; a
                reference that does not import; a bad option.
            SchedulerShutdownError: the scheduler is shut down (if that happens during the call,
                the tasks handed over already end ``CANCELLED``, as every pending task does).
        """
        target = resolve_task_function(fn) if isinstance(fn, str) else fn
        checked = check_task(target, (), kwargs)
        options = TaskOptions(
            name,
            misfire_grace=misfire_grace,
            durable=False,
            timeout=timeout,
            retry=retry,
            keep_result=keep_result,
        )
        options.check(self._processes, self._store is not None)
        due_at, arguments = check_bulk(delays, args, now=self._clock.now())
        spec = self._spec(options, makes_coroutine(target))
        batch = Batch(target, checked, name or default_name(target), spec)
        ids: list[TaskId] = []
        for start in range(0, len(due_at), PARCEL_SIZE):
            end = start + PARCEL_SIZE
            with self._lock:  # one part at a time: other callers are not held up by a big call
                if self._closed:
                    raise SchedulerShutdownError("scheduler is shut down")
                part_ids = self._mint.memory_many(len(due_at[start:end]))
                self._put(
                    Parcel(
                        batch,
                        part_ids,
                        due_at[start:end],
                        None if arguments is None else arguments[start:end],
                    )
                )
            ids.extend(part_ids)
            self._make_room(PARCELS_AHEAD)
        return ids

    def schedule_at_fixed_rate(
        self,
        fn: Callable[..., object] | str,
        interval: float,
        initial_delay: float = 0.0,
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
        executor: str = THREADS,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        durable: bool | None = None,
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> TaskHandle:
        """Run ``fn`` at ``now + initial_delay + k * interval``, k = 0, 1, 2, ...

        Runs never overlap: a run that overruns its slot makes the next run wait for the
        first slot not already past when it finished (missed slots are skipped). With
        ``max_consecutive_failures``, the task ends ``FAILED`` after that many failed runs in
        a row. Other options as for ``schedule_once``.

        Raises:
            ValueError: ``interval`` not a finite number > 0; ``initial_delay`` not finite;
                ``max_consecutive_failures < 1``; otherwise as ``schedule_once``.
            TypeError, DuplicateTaskError, StoreError, SchedulerShutdownError: as ``schedule_once``.
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        trigger = FixedRate(interval, first_at)
        tail = (executor, misfire_grace, if_exists, durable, timeout, retry, keep_result)  # KEYWORD_TAIL
        options = TaskOptions(name, max_consecutive_failures, *tail)
        return self._schedule(fn, args, kwargs, first_at, trigger, task_id, options)

    def schedule_with_fixed_delay(
        self,
        fn: Callable[..., object] | str,
        delay: float,
        initial_delay: float = 0.0,
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
        executor: str = THREADS,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        durable: bool | None = None,
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> TaskHandle:
        """Run ``fn`` at ``now + initial_delay``, then ``delay`` seconds after each run finishes.

        Options as for ``schedule_at_fixed_rate``.

        Raises:
            ValueError: ``delay`` not a finite number > 0; otherwise as ``schedule_at_fixed_rate``.
            TypeError, DuplicateTaskError, StoreError, SchedulerShutdownError: as ``schedule_once``.
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        trigger = FixedDelay(delay, first_at)
        tail = (executor, misfire_grace, if_exists, durable, timeout, retry, keep_result)  # KEYWORD_TAIL
        options = TaskOptions(name, max_consecutive_failures, *tail)
        return self._schedule(fn, args, kwargs, first_at, trigger, task_id, options)

    def schedule_cron(
        self,
        fn: Callable[..., object] | str,
        expr: str,
        tz: str | tzinfo = "UTC",
        *,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        max_consecutive_failures: int | None = None,
        executor: str = THREADS,
        misfire_grace: float | None = None,
        if_exists: str = "error",
        durable: bool | None = None,
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> TaskHandle:
        """Run ``fn`` at the wall-clock times the cron expression ``expr`` names, read in zone ``tz``.

        ``expr`` has the five standard fields (minute hour day-of-month month day-of-week, with
        lists, ranges, steps, month and weekday names) or is one of ``@hourly``, ``@daily``,
        ``@weekly``, ``@monthly``, ``@yearly`` (and ``@midnight``, ``@annually``). ``tz`` is an
        IANA zone name (``"Europe/Berlin"``), ``"UTC"``, or a ``tzinfo``. The daylight-saving
        policy is cron's (``docs/calendar.md``): a fixed time in a skipped hour runs once, right
        after the gap; a fixed time in a repeated hour runs once, at its first occurrence; a
        job with ``*`` or a step in the minute or hour field follows the clock on the wall.

        A cron task is a wall-clock task: it stays right when the system clock is reset.
        Runs never overlap; a run that overruns, or slots missed while nothing ran, coalesce
        into one run, unless ``misfire_grace`` says a run that late is ``MISSED`` instead.
        ``TaskInfo.trigger`` is ``Cron(expr, <zone name>)``. Options as for
        ``schedule_at_fixed_rate``; a durable cron task is stored by expression and zone.

        Raises:
            ValueError: ``expr`` is not a cron expression (the message names the field), or
                never fires; ``tz`` is not a known zone; otherwise as ``schedule_once``.
            TypeError: ``expr`` is not a str, ``tz`` neither a str nor a ``tzinfo``; otherwise
                as ``schedule_once``.
            DuplicateTaskError, StoreError, SchedulerShutdownError: as ``schedule_once``.
        """
        calendar = CronSchedule.parse(expr, tz)
        offset = self._wall_offset()
        due_wall = calendar.next_fire(self._clock.now() + offset)
        trigger = Cron(expr, calendar.zone_name)
        tail = (executor, misfire_grace, if_exists, durable, timeout, retry, keep_result)  # KEYWORD_TAIL
        options = TaskOptions(name, max_consecutive_failures, *tail)
        return self._schedule(fn, args, kwargs, due_wall - offset, trigger, task_id, options, due_wall)

    def schedule_after(
        self,
        fn: Callable[..., object] | str,
        after: TaskHandle | TaskId | Iterable[TaskHandle | TaskId],
        *,
        delay: float = 0.0,
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        executor: str = THREADS,
        if_exists: str = "error",
        timeout: float | None = None,
        retry: Retry | None = None,
        keep_result: bool = False,
    ) -> TaskHandle:
        """Run ``fn`` once, ``delay`` seconds after every task in ``after`` has completed.

        ``after``: handles or ids of one-time tasks of this scheduler (one, or an iterable):
        fan-in and chains of any length. Until then the task is ``WAITING``
        (``TaskInfo.waiting_for`` lists what it waits for). A task that has already completed
        counts as done. If one of them ends ``FAILED`` or ``CANCELLED``, this task ends
        ``CANCELLED`` with a ``DependencyFailedError`` naming it (``result()`` raises it), and
        so do the tasks that wait for this one, down the graph. A cycle cannot be made: a task
        can only wait for tasks that exist already. Such a task lives in memory only (with a
        store too). Other options as for ``schedule_once``.

        Raises:
            UnknownTaskError: an id that is neither live nor in the finished-task history.
            ValueError: a recurring task in ``after``, a handle of another scheduler, an empty
                ``after``, a bad ``delay``; otherwise as ``schedule_once``.
            TypeError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        dependencies = self._dependencies(after)
        wait = require_finite("delay", delay)
        options = TaskOptions(
            name,
            executor=executor,
            if_exists=if_exists,
            durable=False,
            timeout=timeout,
            retry=retry,
            keep_result=keep_result,
        )
        return self._schedule(fn, args, kwargs, wait, None, task_id, options, after=dependencies)

    def _dependencies(self, after: object) -> tuple[TaskRecord, ...]:
        """The records of the tasks ``after`` names (caller's thread).

        Raises:
            UnknownTaskError, ValueError, TypeError: as ``schedule_after`` says.
        """
        items = [after] if isinstance(after, TaskHandle | str) else list(after)  # type: ignore[call-overload]
        if not items:
            raise ValueError("after must name at least one task")
        records: list[TaskRecord] = []
        for item in items:
            if isinstance(item, TaskHandle):
                mine = record_of(item, self)
                if mine is None:
                    raise ValueError(f"{item!r} is a task of another scheduler")
                record = mine
            elif isinstance(item, str):
                found = self._live.get(item) or self._query(FindTask(item, finished=True))
                if not isinstance(found, TaskRecord):
                    raise UnknownTaskError(f"no live or finished task with id {item!r}")
                record = found
            else:
                raise TypeError(f"after takes task handles or ids, got {item!r}")
            if not record.spec.single_start and record.spec.trigger is not None:
                raise ValueError(
                    f"task {record.task_id!r} is recurring: it never completes, so nothing can wait for it"
                )
            records.append(record)
        return tuple(records)

    # -- scheduled messages -----------------------------------------------------------------

    def tell_once(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        delay: float | None = None,
        *,
        at: float | datetime | None = None,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` once, ``delay`` seconds from now or at ``at``.

        The message is sent with ``ref.tell`` on the scheduler's own thread, with no worker
        involved, so it goes out on time even while every worker is busy. The task is named
        ``"<message type> -> <actor class>"`` unless ``name`` is given, shows in ``tasks()`` and
        ``info()`` like any other, and publishes the usual events. An actor that is dead when
        the message is due ends the task ``FAILED`` with ``pykka.ActorDeadError``. Message
        tasks live in memory only (an actor ref cannot be stored), with a store too.

        Raises:
            TypeError: ``ref`` is not a ``pykka.ActorRef``; otherwise as ``schedule_once``.
            ValueError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        due_at = once_due_at(self._clock, delay, at)
        due_wall = at.timestamp() if isinstance(at, datetime) else None
        options = _message_options(ref, message, name, misfire_grace, if_exists)
        return self._schedule(ref.tell, (message,), None, due_at, None, task_id, options, due_wall)

    def tell_at_fixed_rate(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        interval: float,
        initial_delay: float = 0.0,
        *,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` at ``now + initial_delay + k * interval``, k = 0, 1, 2, ...

        As ``tell_once`` (sent on the scheduler's thread; a dead actor ends the task
        ``FAILED``), on the slots of ``schedule_at_fixed_rate``. A tell takes microseconds, so
        a slot is missed only when the whole process stalls.

        Raises:
            TypeError, ValueError, DuplicateTaskError, SchedulerShutdownError: as
                ``schedule_at_fixed_rate`` (and ``tell_once``).
        """
        first_at = self._clock.now() + require_finite("initial_delay", initial_delay)
        trigger = FixedRate(interval, first_at)
        options = _message_options(ref, message, name, misfire_grace, if_exists)
        return self._schedule(ref.tell, (message,), None, first_at, trigger, task_id, options)

    def tell_cron(
        self,
        ref: pykka.ActorRef[Any],
        message: object,
        expr: str,
        tz: str | tzinfo = "UTC",
        *,
        task_id: TaskId | None = None,
        name: str | None = None,
        misfire_grace: float | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Tell the actor ``ref`` ``message`` at the wall-clock times the cron expression ``expr`` names.

        As ``tell_once`` (sent on the scheduler's thread; a dead actor ends the task
        ``FAILED``), on the times of ``schedule_cron``.

        Raises:
            TypeError, ValueError, DuplicateTaskError, SchedulerShutdownError: as
                ``schedule_cron`` (and ``tell_once``).
        """
        calendar = CronSchedule.parse(expr, tz)
        offset = self._wall_offset()
        due_wall = calendar.next_fire(self._clock.now() + offset)
        trigger = Cron(expr, calendar.zone_name)
        options = _message_options(ref, message, name, misfire_grace, if_exists)
        return self._schedule(
            ref.tell, (message,), None, due_wall - offset, trigger, task_id, options, due_wall
        )

    def _schedule(
        self,
        fn: Callable[..., object] | str,
        args: Sequence[Any],
        kwargs: Mapping[str, Any] | None,
        due_at: float,
        trigger: Recurrence | None,
        task_id: TaskId | None,
        options: TaskOptions,
        due_wall: float | None = None,
        after: tuple[TaskRecord, ...] = (),
    ) -> TaskHandle:
        """Check a task's definition, build its record, hand it to the scheduler; return its handle.

        ``due_wall``: the first run's wall-clock instant, for a wall-clock task (which it makes one).
        ``after``: the tasks it waits for (``schedule_after``); ``due_at`` is then its delay.
        """
        if due_at >= self._far_at and not after:
            self._check_due_time(due_at)
        target = resolve_task_function(fn) if isinstance(fn, str) else fn
        args = as_args(args)  # a list is what people write (and what JSON gives back)
        checked = check_task(target, args, kwargs)
        message_task = options.executor == INLINE
        durable = options.check(self._processes, self._store is not None, message_task=message_task)
        coroutine = makes_coroutine(target)
        name = options.name or default_name(target)
        plain = not durable and not coroutine and trigger is None and due_wall is None and not after
        if plain and options.plain:
            return self._submit(TaskRecord("", target, args, checked, due_at, name), task_id)
        runs: Callable[..., object] = target
        if options.executor == PROCESSES:
            runs = process_target(fn, args, checked)
        row: tuple[str, str, str] | None = None
        if durable:
            fn_ref = fn if isinstance(fn, str) else reference_of(fn)
            check_json_arguments(args, checked)
            args_json, kwargs_json, args, checked = json_arguments(args, checked)
            row = (fn_ref, args_json, kwargs_json)
        if coroutine and options.executor != THREADS:
            raise TypeError(
                f"{target!r} is async def: it runs on a worker thread's event loop, not {options.executor!r}"
            )
        on_wall = due_wall is not None
        spec = self._spec(options, coroutine, trigger, on_wall=on_wall, after=after, delay=due_at)
        task = TaskRecord("", runs, args, checked, due_at, name, spec)
        if due_wall is not None:
            task.due_wall = due_wall
        elif durable:
            task.due_wall = due_at + self._wall_offset()
        return self._submit(task, task_id, row, options.if_exists)

    @staticmethod
    def _spec(
        options: TaskOptions,
        coroutine: bool,
        trigger: Recurrence | None = None,
        *,
        on_wall: bool = False,
        after: tuple[TaskRecord, ...] = (),
        delay: float = 0.0,
    ) -> TaskSpec:
        """The spec a task's checked ``options`` and its trigger make: ``PLAIN`` if it asks for nothing more.

        ``delay``: a ``schedule_after`` task's wait after its dependencies (ignored without ``after``).
        """
        spec = TaskSpec(
            trigger,
            options.failure_limit,
            options.executor,
            options.misfire_grace,
            on_wall=on_wall,
            timeout=options.timeout,
            retry=options.retry,
            coroutine=coroutine,
            keep_result=options.keep_result,
            after=after,
            delay=delay if after else 0.0,
        )
        return spec.or_plain()

    def _submit(
        self,
        task: TaskRecord,
        task_id: TaskId | None,
        row: tuple[str, str, str] | None = None,
        if_exists: str = "error",
    ) -> TaskHandle:
        """Hand a new task to the scheduler (a durable one committed to the store first)."""
        if row is not None and self._shared_tasks is not None:  # a shared store: it goes there only
            return self._shared_tasks.submit(self, task, task_id, row, if_exists)
        if task_id is None:  # a minted id cannot clash: no need to wait for a reply
            with self._lock:  # held across the commit, so that nothing is committed after shutdown
                if self._closed:
                    raise SchedulerShutdownError("scheduler is shut down")
                task.task_id = self._mint() if row is not None else self._mint.memory()  # memory: no store
                if row is not None:
                    assert self._store is not None
                    stored, _ = self._store.add(definition(task, *row, wall_offset=self._wall_offset()))
                    task.store_seq = stored.seq
                self._put(task)
            if self._outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
                self._make_room(OUTBOX_BACKLOG)
            return TaskHandle(task, self)
        task.task_id = check_task_id(task_id)
        plan = None if row is None else definition(task, *row, wall_offset=self._wall_offset())
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            reply = self._ask(AddTask(task, if_exists, plan))
        live = self._get(reply)
        if isinstance(live, BaseException):
            raise live
        if live is None:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            raise DuplicateTaskError(f"a live task already has id {task_id!r}")
        return TaskHandle(live, self)

    def _put(self, item: OutboxItem) -> None:
        """Put ``item`` in the scheduler's outbox; tell it ``Drain`` if the put says so (under ``_lock``)."""
        if self._outbox.put(item):
            try:
                self._ref.tell(_DRAIN)
            except pykka.ActorDeadError as error:
                raise SchedulerShutdownError("scheduler is shut down") from error

    def _make_room(self, limit: int) -> None:
        """Wait until at most ``limit`` items are in the outbox, or ``ROOM_TIMEOUT`` (not under ``_lock``).

        Backpressure: a thread filling a big schedule neither outruns the scheduler nor starves
        the threads that run due tasks (measured in docs/performance.md, "A million tasks in
        one process"). Never under ``_lock``: a task's own ``schedule_once`` (a worker's) must
        get in between, or a due task would queue behind the whole fill.
        """
        outbox = self._outbox
        if outbox.backlog > limit and self._may_wait_for_room():
            outbox.wait_for_room(limit, ROOM_TIMEOUT)

    def _may_wait_for_room(self) -> bool:
        """Whether the outbox will be drained while this thread waits: not on the scheduler's own."""
        alive = self._ref.is_alive()
        return alive and self._threads.role_of(threading.current_thread()) is not Role.SCHEDULER

    # -- control and queries ----------------------------------------------------------------

    def cancel(self, task_id: TaskId, interrupt: bool = False) -> bool:
        """Cancel a task; return whether that prevented a run (or, ``interrupt``, signalled one).

        ``True`` for a task that had not started its run (it never runs; one ``CANCELLED``
        event) and for a recurring task cancelled mid-run (the run finishes, then
        ``CANCELLED``, and no further run). ``False`` for a running one-time task (it just
        finishes), and for unknown, finished or already-cancelled ids, and after shutdown.

        ``interrupt=True`` also asks a run in progress to stop: ``current_run().cancel_requested``
        becomes true there (and ``check()`` raises ``RunCancelled``; an ``async def`` task's
        coroutine is cancelled). Then ``True`` also for a running one-time task. A run that
        stops by raising ``RunCancelled`` ends the task ``CANCELLED``, not failed; one that
        returns anyway counts as a completed run, and the task still ends ``CANCELLED``.

        Decided on the calling thread when the scheduler already holds the task (a dict
        lookup, then the task's token, as ``TaskHandle.cancel``); otherwise (a task just
        scheduled, still on its way, or an unknown id) this asks the scheduler and waits.
        On a shared store the store decides for a durable task, whichever node holds it (one
        statement, committed when this returns ``True``; ``docs/scale-out.md``).

        Raises:
            StoreError: a durable task's cancel could not be committed. It is cancelled in this
                process all the same, and the scheduler's save of its end records it (if that
                fails too, the task comes back after a restart).
        """
        if not isinstance(task_id, str):  # callers without type checking: no task has such an id
            return False  # type: ignore[unreachable]
        task = self._live.get(task_id)
        if task is not None:
            return self._revoke(task, interrupt)
        shared = self._shared_tasks
        stored = shared is not None and not self._closed and not is_memory_id(task_id)
        if stored and shared is not None and shared.cancel(self, task_id, interrupt=interrupt):
            return True  # a durable task of the shared store (it decides, whichever node holds it)
        with self._lock:
            if self._closed:
                return False
            reply = self._ask(Cancel(task_id, interrupt))
        answer = self._get(reply)
        if isinstance(answer, BaseException):  # the store could not commit it: cancelled here only
            raise answer
        return bool(answer)

    def _revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel ``task`` through its token (caller's thread); if that won, tell the scheduler.

        ``interrupt``: also ask its run in progress, if any, to stop. A durable task's cancel
        is committed to the store before this returns ``True``.
        """
        if self._shared_tasks is not None and task.store_seq is not None:
            return self._shared_tasks.revoke(self, task, interrupt)  # the shared store decides
        signalled = interrupt and task.interrupt()
        before = task.revoke()
        if before is not FREE and before is not RUNNING and before is not RAN:
            return signalled  # a one-time run started, the task is ending or has ended, or was cancelled
        try:
            if task.store_seq is not None and self._store is not None:
                self._store.cancel(task.task_id)  # a StoreError: cancelled in this process only
        finally:  # the token is revoked either way: the scheduler must end the task here
            with self._lock:
                if not self._closed:  # else the shutdown ends it anyway: it finds the token revoked
                    with contextlib.suppress(SchedulerShutdownError):  # stopped by force: all ended
                        self._put(Cancelled(task, before is not FREE))  # RUNNING or RAN: a run in flight
        self._make_room(OUTBOX_BACKLOG)
        return True

    def handle(self, task_id: TaskId) -> TaskHandle:
        """Return a handle of the task ``task_id``, live or finished (as ``info`` knows it).

        A live task is one scheduled here or loaded from the store. A finished one is any the
        history still holds: its handle is ``done()``, and its ``result()`` is the final one at
        once (the value its run returned, the exception it failed with, or ``CancelledError``).

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        task = self._live.get(task_id) if isinstance(task_id, str) else None
        stored = isinstance(task_id, str) and not is_memory_id(task_id)  # memory ids: never in the store
        if self._shared_tasks is not None and stored and (task is None or task.durable):
            shared = self._shared_tasks.handle(self, task_id)  # a durable task: its row says
            if shared is not None:
                return shared
        if task is None and isinstance(task_id, str):
            # One still on its way to the scheduler, say, or one that has finished.
            task = self._query(FindTask(task_id, finished=True))
        if not isinstance(task, TaskRecord):
            raise UnknownTaskError(f"no task with id {task_id!r} (neither live nor in the history)")
        return TaskHandle(task, self)

    def info(self, task_id: TaskId) -> TaskInfo:
        """Return a snapshot of a live task, or the final state of a recently finished one.

        Raises:
            UnknownTaskError: no such task (or it left the ``history``).
            SchedulerShutdownError: the scheduler has stopped.
        """
        info = None
        if self._shared_tasks is not None and isinstance(task_id, str) and not is_memory_id(task_id):
            info = self._shared_tasks.info(task_id)  # a durable task: its row says
        if info is None and isinstance(task_id, str):
            info = self._query(QueryTask(task_id))
        if info is None:
            raise UnknownTaskError(f"no task with id {task_id!r}")
        assert isinstance(info, TaskInfo)
        return info

    def tasks(self) -> list[TaskInfo]:
        """Return a snapshot of every live (not yet finished) task, in scheduling order.

        Tasks of ``schedule_many`` (and one-time tasks loaded from a store) that are still parked
        come after the others, in their own order.
        """
        infos: list[TaskInfo] = self._query(QueryTasks())
        if self._shared_tasks is not None:  # durable tasks: the store's rows, whichever node runs them
            stored = self._shared_tasks.infos()
            ids = {info.task_id for info in stored}
            infos = [info for info in infos if info.task_id not in ids] + stored
        return infos

    def stats(self) -> SchedulerStats:
        """Return the scheduler's counters (live tasks, heap size, timer wake-ups, ...).

        ``heap_size`` counts the tasks waiting for their due time; the entries cancels left in
        the heap, not yet pruned, are ``stale_heap_entries`` (``SchedulerStats`` says what
        each field means).
        """
        stats: SchedulerStats = self._query(QueryStats())
        return stats

    def subscribe(
        self, listener: AnyListener, kinds: Iterable[EventKind | str] | None = None
    ) -> Subscription:
        """Deliver every later event of the given kinds (all by default) to ``listener``.

        ``kinds``: ``EventKind`` members (``from actors import EventKind``) or their names, in
        any case (``kinds=["failed", "missed"]``).

        A callable listener is called on the event bus thread; an ``ActorRef`` is told the
        ``TaskEvent``. Events reach each listener in the order they happened.

        Raises:
            TypeError: ``listener`` is neither callable nor an ``ActorRef``; ``kinds`` is not an
                iterable, or a kind is neither an ``EventKind`` nor a str.
            ValueError: ``kinds`` is empty, or a name names no kind (the message lists them).
            SchedulerShutdownError: after ``shutdown``.
        """
        subscription = self._subscription(listener, kinds)
        self._send(subscription)
        return Subscription(subscription.subscription_id, self)

    def _subscription(self, listener: AnyListener, kinds: Iterable[EventKind | str] | None) -> Subscribe:
        """Check a listener and its kinds; the ``Subscribe`` message for them, with a new id."""
        if not (callable(listener) or isinstance(listener, pykka.ActorRef)):
            raise TypeError(f"listener must be callable or a pykka ActorRef, got {listener!r}")
        if isinstance(kinds, str | EventKind):  # one kind, not an iterable of its letters
            raise TypeError(f"kinds must be an iterable of kinds, got {kinds!r}: write kinds=[{kinds!r}]")
        try:
            given = list(EventKind) if kinds is None else list(kinds)
        except TypeError as error:
            raise TypeError(f"kinds must be an iterable of EventKind members, got {kinds!r}") from error
        wanted = frozenset(event_kind(kind) for kind in given)
        if not wanted:
            raise ValueError("kinds must name at least one EventKind")
        return Subscribe(next(self._subscription_ids), listener, wanted)

    def _unsubscribe(self, subscription_id: int) -> None:
        """Tell the scheduler to drop a subscription, unless it is shut down (``SchedulerPort``)."""
        with contextlib.suppress(SchedulerShutdownError):
            self._send(Unsubscribe(subscription_id))

    def settle(self, timeout: float = 10.0, *, also: Iterable[pykka.ActorRef[Any]] = ()) -> None:
        """Block until nothing due at ``clock.now()`` is unfinished and every event so far was delivered.

        Runs whatever is due now (no need to wait for the timer), waits for those runs to
        finish, and for the bus to deliver every event published so far; if listeners
        scheduled or cancelled anything meanwhile, it waits for that too, until nothing
        happens any more. Works with any clock. Returns at once after ``shutdown``.

        ``also``: actors (any pykka actors) to wait for as well: until each has handled every
        message sent to it so far (scheduled messages and timers included), and whatever
        they scheduled, cancelled or sent each other meanwhile has settled too, so a test of
        actors needs no sleeps. Each is asked a no-op that pykka itself answers (its
        ``on_receive`` is not called), round after round, until a round finds nothing new
        (``docs/actors.md``).

        Raises:
            TypeError: ``also`` is not an iterable of ``pykka.ActorRef``.
            TimeoutError: not settled within ``timeout`` seconds (the message names an actor
                that did not answer).
            WouldDeadlockError: called from a task or a listener of this scheduler (it would
                wait for itself).
        """
        self._refuse_own_thread("settle")
        stepping.settle(self, Deadline(timeout), timeout, check_refs(also))

    def advance(
        self, seconds: float, *, timeout: float = 10.0, also: Iterable[pykka.ActorRef[Any]] = ()
    ) -> None:
        """Move a ``FakeClock`` forward ``seconds``, stopping at every due time on the way.

        At each due time in the window the clock stops and the scheduler settles, so every
        run starts at its own due time and sees the clock there (a run may itself advance the
        clock to model how long it takes). Blocks the caller; ``timeout`` applies to each step.
        Each step settles the actors ``also`` names too (see ``settle``), so what they
        schedule as they handle their messages is on time.

        Raises:
            TypeError: the clock is not a ``FakeClock``; ``also`` is not an iterable of
                ``pykka.ActorRef``.
            ValueError: ``seconds`` is negative or not finite, or moves the clock past what
                a ``datetime`` can show.
            TimeoutError: a step did not settle within ``timeout``.
            WouldDeadlockError: called from a task or a listener of this scheduler.
        """
        self._refuse_own_thread("advance")
        stepping.advance(self, seconds, timeout, check_refs(also))

    def _settle_step(self, deadline: Deadline, until: float | None = None) -> int | None:
        """Ask the scheduler to settle (up to ``until``, see ``Settle``); its activity count, or ``None``."""
        settled: Future[int | None] = Future()
        try:
            self._send(Settle(settled, until))
        except SchedulerShutdownError:
            return None  # nothing will run any more
        return result_within(settled, deadline)

    def _next_due(self) -> float | None:
        """The earliest due time the scheduler holds, or ``None`` (``SchedulerPort``)."""
        due: float | None = None if self._closed else self._query(QueryNextDue())
        return due

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

    # -- helpers ----------------------------------------------------------------------------

    def _refuse_own_thread(self, call: str) -> None:
        role = self._threads.role_of(threading.current_thread())
        if role is not None:
            raise WouldDeadlockError(
                f"{call}() was called from the scheduler's own {role.value} thread (a task or a "
                f"listener), and would wait for that thread; call it from another thread"
            )

    def _send(self, message: object) -> None:
        """Tell the scheduler ``message``, unless it is shut down (``SchedulerShutdownError``)."""
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            try:
                self._ref.tell(message)
            except pykka.ActorDeadError as error:
                raise SchedulerShutdownError("scheduler is shut down") from error

    @contextlib.contextmanager
    def _while_open(self) -> Iterator[None]:
        """Hold ``_lock`` for a block; ``SchedulerShutdownError`` once shut down (``SchedulerPort``)."""
        with self._lock:
            if self._closed:
                raise SchedulerShutdownError("scheduler is shut down")
            yield

    def _mint_id(self) -> TaskId:
        """A new task id, unique in the store (``SchedulerPort``)."""
        return self._mint()

    def _ask(self, message: object) -> pykka.Future[Any]:
        try:
            return self._ref.ask(message, block=False)
        except pykka.ActorDeadError as error:
            raise SchedulerShutdownError("scheduler is shut down") from error

    def _query(self, message: object) -> Any:
        return self._get(self._ask(message))

    @staticmethod
    def _get(reply: pykka.Future[Any]) -> Any:
        """The scheduler's answer; an error it answers with is raised here (never taken for a value)."""
        try:
            answer = reply.get(timeout=ASK_TIMEOUT)
        except pykka.ActorDeadError as error:
            raise SchedulerShutdownError("scheduler is shut down") from error
        except pykka.Timeout as error:
            raise TimeoutError(f"scheduler did not answer within {ASK_TIMEOUT} s") from error
        if isinstance(answer, SchedulerInternalError):  # its handler failed (logged there)
            raise answer
        return answer

    def __repr__(self) -> str:
        state = "shut down" if self._closed else "running"
        try:
            wall = self._clock.wall().isoformat(timespec="seconds")
        except (OverflowError, ValueError):
            wall = "?"
        return f"<Scheduler {state} now={self._clock.now():.3f} wall={wall} clock={self._clock!r}>"


def _message_options(
    ref: object, message: object, name: str | None, misfire_grace: float | None, if_exists: str
) -> TaskOptions:
    """The options of a message task: run inline, in memory, ended by its first failed tell.

    Raises:
        TypeError: ``ref`` is not an actor ref.
    """
    if not isinstance(ref, pykka.ActorRef):
        raise TypeError(f"ref must be a pykka.ActorRef, got {ref!r}")
    if name is None:
        name = f"{type(message).__name__} -> {ref.actor_class.__name__}"
    # A tell fails only when the actor is dead: max_consecutive_failures=1 ends the task then.
    return TaskOptions(name, 1, INLINE, misfire_grace, if_exists, False)


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
