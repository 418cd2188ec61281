"""The ``schedule_*`` methods of ``Scheduler``: tasks that call a function."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, tzinfo
from typing import Any, Final

from actors.api.bulk import schedule_durable_many
from actors.api.handles import TaskHandle, record_of
from actors.api.submitting import Submitting
from actors.api.validation import (
    PLAIN_TAIL,
    TaskOptions,
    check_bulk,
    check_task,
    once_due_at,
    resolve_task_function,
)
from actors.core.cron import CronSchedule
from actors.core.parked import Batch, Parcel
from actors.core.retry import Retry
from actors.core.task_record import THREADS, TaskRecord, default_name, makes_coroutine, plain_name
from actors.errors import SchedulerShutdownError, UnknownTaskError
from actors.runtime.durable_after import durable_after
from messages import Cron, FindTask, FixedDelay, FixedRate, TaskId
from messages.commands import EMPTY_KWARGS
from messages.triggers import require_finite

PARCEL_SIZE: Final = 1024
"""Tasks per part of a ``schedule_many`` call (about a millisecond of the scheduler's work)."""

PARCELS_AHEAD: Final = 2
"""Items ``schedule_many`` leaves in the outbox before it waits for the scheduler to take them:
the scheduler takes everything waiting at once, and a due task waits for that."""


class Scheduling(Submitting):
    """``schedule_once``, ``schedule_many``, the recurring ones, ``schedule_after`` (caller's thread)."""

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
        overlap: str = "skip",
        max_instances: int | None = None,
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
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
        - ``overlap``, ``catch_up`` (with ``max_catch_up``) and ``jitter``: a recurring task's
          policies for slots that come due during a run, for due times missed while nothing ran,
          and for spreading starts (``docs/lifecycle.md``, "Overlap, catch-up and jitter");
          off their defaults on a one-time task they are a ``ValueError``. ``overlap="allow"``
          with ``max_instances=N`` (default 1) lets up to N runs of the task go at once;
          ``max_instances`` above 1 with any other ``overlap`` is a ``ValueError``.
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
                without a store; a bad ``if_exists`` or ``misfire_grace``; an unknown ``overlap``
                or ``catch_up``, ``max_catch_up < 1``, a negative ``jitter``,
                ``max_instances < 1`` (or above 1 without ``overlap="allow"``),
                ``overlap="allow"`` with a ``timeout`` or a ``retry``.
            DuplicateTaskError: ``task_id`` belongs to a live task (and ``if_exists="error"``).
            StoreError: the store could not commit the task.
            SchedulerShutdownError: after ``shutdown``.
        """
        tail = (  # KEYWORD_TAIL, flat: this call is the hot path
            executor,
            misfire_grace,
            if_exists,
            durable,
            timeout,
            retry,
            overlap,
            max_instances,
            catch_up,
            max_catch_up,
            jitter,
            keep_result,
        )
        if at is None and type(delay) is float and delay - delay == 0.0:  # the common case, fast
            due_at = self._clock.now() + delay
            add_plain = self._add_plain  # None with a store
            if (
                tail == PLAIN_TAIL  # TaskOptions.plain, but for a name, before building them
                and task_id is None
                and kwargs is None
                and name is None
                and type(args) is tuple
                and add_plain is not None
                and due_at < self._far_at
            ):
                label = plain_name(fn)  # None unless plain_function(fn)
                if label is not None:
                    return add_plain(TaskRecord("", fn, args, EMPTY_KWARGS, due_at, label))  # type: ignore[arg-type]
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
        durable: bool | None = None,
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
        with a store, unless ``durable=True``. The caller's thread checks everything before
        anything is scheduled, then hands the tasks over in parts of ``PARCEL_SIZE``, waiting
        for the scheduler to take each part before it sends many more (backpressure), without
        holding up other callers meanwhile. ``durable=True`` (needs a store) commits them all in
        one transaction before it returns, ids ``"task-<n>"`` of the store, ``fn`` by reference
        and arguments as JSON, as a durable ``schedule_once`` (``None``, the default, is memory
        only here, unlike there: docs/persistence.md, "Durable tasks in bulk").

        Raises:
            TypeError: ``fn`` is not callable; ``delays`` or ``args`` is not an iterable; a delay
                is not a number; an item of ``args`` is not a sequence of arguments (a tuple or a
                list; a str is not one: the message gives its index);
                an option has the wrong type.
            ValueError: a NaN or infinite delay; ``args`` and ``delays`` differ in length; a
                reference that does not import; a bad option.
            SchedulerShutdownError: the scheduler is shut down (if that happens during the call,
                the tasks handed over already end ``CANCELLED``, as every pending task does).
            With ``durable=True`` also, nothing committed: ``ValueError`` without a store or if
                ``fn`` has no importable name; ``TypeError`` for an argument that does not
                round-trip through JSON; ``StoreError`` if the commit fails (``bulk.py``).
        """
        target = resolve_task_function(fn) if isinstance(fn, str) else fn
        checked = check_task(target, (), kwargs)
        durable = False if durable is None else durable  # memory by default: see the docstring
        options = TaskOptions(
            name, None, THREADS, misfire_grace, "error", durable, timeout, retry, keep_result=keep_result
        )
        durable = options.check(self._processes, self._store is not None)
        due_at, arguments = check_bulk(delays, args, now=self._clock.now())
        spec = self._spec(options, makes_coroutine(target))
        if durable:  # committed in bulk (actors/api/bulk.py)
            named = name or default_name(target)
            return schedule_durable_many(self, fn, target, checked, named, spec, due_at, arguments)
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
        overlap: str = "skip",
        max_instances: int | None = None,
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
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
        policy = (overlap, max_instances, catch_up, max_catch_up, jitter)
        tail = (
            executor,
            misfire_grace,
            if_exists,
            durable,
            timeout,
            retry,
            *policy,
            keep_result,
        )  # KEYWORD_TAIL
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
        overlap: str = "skip",
        max_instances: int | None = None,
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
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
        policy = (overlap, max_instances, catch_up, max_catch_up, jitter)
        tail = (
            executor,
            misfire_grace,
            if_exists,
            durable,
            timeout,
            retry,
            *policy,
            keep_result,
        )  # KEYWORD_TAIL
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
        overlap: str = "skip",
        max_instances: int | None = None,
        catch_up: str = "latest",
        max_catch_up: int = 100,
        jitter: float = 0.0,
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
        policy = (overlap, max_instances, catch_up, max_catch_up, jitter)
        tail = (
            executor,
            misfire_grace,
            if_exists,
            durable,
            timeout,
            retry,
            *policy,
            keep_result,
        )  # KEYWORD_TAIL
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
        durable: bool | None = None,
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
        can only wait for tasks that exist already. ``durable``: ``None`` (the default) keeps
        it in the store when the scheduler has one and every task in ``after`` is durable
        (``actors/runtime/durable_after.py``): it then waits across a restart, and on a shared
        store runs on whichever node claims it once they have committed. Other options as for
        ``schedule_once``.

        Raises:
            UnknownTaskError: an id that is neither live nor in the finished-task history.
            ValueError: a recurring task in ``after``, a handle of another scheduler, an empty
                ``after``, a bad ``delay``; ``durable=True`` without a store or with a
                memory-only task in ``after`` (named); otherwise as ``schedule_once``.
            TypeError, DuplicateTaskError, SchedulerShutdownError: as ``schedule_once``.
        """
        dependencies = self._dependencies(after)
        wait = require_finite("delay", delay)
        keep = durable_after(durable, self._store, dependencies)
        options = TaskOptions(
            name,
            executor=executor,
            if_exists=if_exists,
            durable=keep,
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
                if mine is None:  # a durable task of a shared store (any node's handle of it)
                    mine = self._directory.dependency(item.task_id)
                if mine is None:
                    raise ValueError(f"{item!r} is a task of another scheduler")
                record = mine
            elif isinstance(item, str):
                found = self._live.get(item) or self._query(FindTask(item, finished=True))
                if not isinstance(found, TaskRecord):  # a durable task of a shared store?
                    found = self._directory.dependency(item)
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
