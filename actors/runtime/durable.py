"""Durable tasks: what the scheduler writes to its store, and how a stored task comes back.

A store keeps text (``actors/store/protocol.py``): the function's reference, the arguments as
JSON, and the trigger and options as JSON this module writes and reads. Times there are
wall-clock instants (UTC epoch seconds), because the scheduler's own clock (monotonic) means
nothing after a restart; ``wall_offset`` (wall-clock time minus clock time, read once by the
caller) converts between the two.

What a task's JSON looks like (the format is part of the store's schema: change it only with
a migration):

- trigger: ``{"once": true}`` (its due time is the row's ``next_due``; ``"wall": true`` is
  added for a wall-clock task, one given an aware ``datetime``),
  ``{"rate": <interval>, "anchor": <wall time of its first slot>}``, ``{"delay": <delay>}``,
  or ``{"cron": <expression>, "tz": <zone name>}``;
- options: only what differs from the defaults: ``{"name": ..., "max_consecutive_failures":
  ..., "misfire_grace": ..., "executor": "process", "overlap": ..., "catch_up": ...,
  "max_catch_up": ..., "jitter": ...}``. Keys it does not know are ignored:
  the command line keeps ``"job_fingerprint"`` there (``actors/cli/fingerprints.py``).

Nothing here reads a clock, and loading never runs user code: a reference is imported (that
is all), never unpickled.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from heapq import heappush
from typing import Any, Final

from actors.core.cron import CronSchedule
from actors.core.effects import Respecced, RunOutcome
from actors.core.parked import Batch, ParkedTasks, StandIn
from actors.core.policies import DEFAULT_POLICIES, Policies, check_policies
from actors.core.retry import Retry
from actors.core.task_record import (
    INLINE,
    PLAIN,
    THREADS,
    Failures,
    Recurrence,
    TaskRecord,
    TaskSpec,
    makes_coroutine,
)
from actors.core.task_state import STORED_STATUS
from actors.errors import StoreError
from actors.references import LazyReference, parse_reference, resolve_stored
from actors.runtime import durable_after
from actors.runtime.stored_columns import (
    NO_ARGS,
    NO_KWARGS,
    ColumnDamage,
    args_column,
    count_column,
    error_text,
    json_object,
    kwargs_column,
    next_due_column,
    read_column,
)
from actors.store.protocol import LedgerRow, StoredTask, TaskDefinition, TaskUpdate
from actors.store.trigger_json import StoredTrigger, decode_trigger
from messages import Cron, FixedDelay, FixedRate
from messages.commands import EMPTY_KWARGS
from messages.triggers import require_finite, require_positive_duration

__all__ = [
    "DamagedTask",
    "LoadedTasks",
    "RowDamage",
    "damage_of",
    "definition",
    "load",
    "one_time_columns",
    "run_record",
    "stored_batch",
    "task_update",
    "trigger_json",
]

logger = logging.getLogger(__name__)


def definition(
    task: TaskRecord, fn_ref: str, args_json: str, kwargs_json: str, *, wall_offset: float
) -> TaskDefinition:
    """What the store keeps of a new durable task (its due time as a wall-clock instant).

    A task that waits (``schedule_after``) is kept with its edges and no due time (``durable_after``).
    """
    due_wall = task.due_wall if task.due_wall is not None else task.due_at + wall_offset
    after = durable_after.edges(task) if task.spec.after else ()
    return TaskDefinition(
        task_id=task.task_id,
        fn_ref=fn_ref,
        args_json=args_json,
        kwargs_json=kwargs_json,
        trigger_json=_trigger_json(task.spec, wall_offset),
        options_json=_options_json(task.name, fn_ref, task.spec),
        next_due=None if after else due_wall,
        after=after,
    )


def one_time_columns(name: str, fn_ref: str, spec: TaskSpec) -> tuple[str, str]:
    """The ``trigger_json`` and ``options_json`` of stored one-time tasks (a ``schedule_many`` batch's)."""
    assert spec.trigger is None  # one-time,
    assert not spec.on_wall  # due at a clock time: no wall-clock offset goes in
    return _trigger_json(spec, 0.0), _options_json(name, fn_ref, spec)


def stored_batch(fn: Callable[..., object], name: str, spec: TaskSpec, location: str) -> Batch:
    """The batch of stored one-time tasks sharing ``fn``, ``name``, ``spec``, parked as the loader parks.

    Their arguments stay JSON text until each gets its record; text that does not decode
    makes a stand-in whose runs fail with a ``StoreError`` naming ``location``.
    """
    decode = functools.partial(_parked_arguments, location, _stand_in_spec(spec))
    return Batch(fn, EMPTY_KWARGS, name, spec, decode)


def task_update(
    task: TaskRecord,
    *,
    paused: bool | None = None,
    rescheduled: Respecced | None = None,
    wall_offset: float = 0.0,
) -> TaskUpdate:
    """The state of a durable task to write after a run or at its end (core's state, as it is now).

    ``paused``: whether the task is paused (``None``: leave the stored flag as it is).
    ``rescheduled``: the task's new trigger (``reschedule``), written with its first due time
    (as a shared store's ``reschedule`` writes both, a run in flight or not), the trigger's
    times by ``wall_offset`` (wall-clock minus clock time).
    """
    assert task.store_seq is not None
    status = STORED_STATUS[task.state]
    failures = task.failures or Failures()
    error = failures.last_error
    # A task loaded from the store has its stored error text only (as its last_traceback):
    # written back as it was, so a later success does not erase the last failed run's error.
    stored_error = failures.last_traceback if error is None else error_text(error)
    next_due = task.due_wall if status == "scheduled" else None
    new_trigger = None
    if rescheduled is not None and status == "scheduled":
        new_trigger = _trigger_json(rescheduled.spec, wall_offset)
        if rescheduled.due_wall is not None:
            next_due = rescheduled.due_wall
    return TaskUpdate(
        task_id=task.task_id,
        seq=task.store_seq,
        status=status,
        next_due=next_due,
        run_count=task.run_count,
        failure_count=failures.count,
        consecutive_failures=failures.consecutive,
        last_error=stored_error,
        last_outcome=task.last_outcome,
        paused=paused,
        trigger_json=new_trigger,
    )


def run_record(outcome: RunOutcome, *, wall_offset: float) -> LedgerRow:
    """The run ledger's row for one finished (or missed) run of a durable task."""
    task, entry = outcome
    assert task.store_seq is not None
    started = None if entry.started_at is None else entry.started_at + wall_offset
    return LedgerRow(
        task_id=task.task_id,
        task_seq=task.store_seq,
        run=entry.run,
        due=entry.due_wall,
        started=started,
        finished=entry.finished_at + wall_offset,
        outcome=entry.ending,
        error=entry.error,
        attempt=entry.attempt,
        reason=entry.reason,
        manual=entry.manual,
        value_json=entry.value_json,
        value_note=entry.value_note,
    )


def kept_result(row: StoredTask) -> bool:
    """Whether a stored task was scheduled with ``keep_result`` (its values are in the ledger)."""
    return '"keep_result"' in row.options_json and _options(row.options_json).get("keep_result") is True


def _options(options_json: str) -> dict[str, Any]:
    try:
        options = json.loads(options_json)
    except ValueError:
        return {}
    return options if isinstance(options, dict) else {}


class LoadedTasks:
    """A store's live tasks as they are read back (the caller's thread, before the scheduler starts).

    ``take`` is given the rows a part at a time (``LoadsInParts``) or all at once. A one-time
    task that is due at a clock time and has no failures on record is *parked*
    (``actors/core/parked.py``): an untracked tuple of its row's values in ``parked``, with its heap
    entry in ``due``, until it comes due, is cancelled or a handle is asked for; only then is
    it decoded into a record. Every other task is rebuilt as a record at once (``records``).
    So loading a million one-time tasks leaves the garbage collector next to nothing to visit,
    and the stored rows of one part are dropped before the next part is read.

    A row that does not decode (a badly edited column) never stops the load: its task comes
    back as a stand-in whose runs fail with a ``StoreError`` naming ``location``, the task and
    the column (``load``); the other tasks load and run.
    """

    def __init__(
        self,
        *,
        wall_offset: float,
        location: str = "the store",
        waits: durable_after.Waits | None = None,
    ) -> None:
        """Read back on the clock whose wall-clock offset (wall time minus clock time) is ``wall_offset``.

        ``location`` names the store in the errors of damaged rows (its file, or its server).
        ``waits``: the store's unmet ``schedule_after`` edges (``durable_after``): a row that
        waits, or that one waits for, comes back as a record, never parked.
        """
        self._waits = waits or durable_after.Waits([])
        self.records: list[TaskRecord] = []
        self.parked = ParkedTasks()
        self.due: list[tuple[float, int, str]] = []  # the parked tasks' heap entries (a heap), seq = count
        self.paused: frozenset[str] = frozenset()  # the ids stored as paused (a store that KeepsPaused)
        self._wall_offset = wall_offset
        self._location = location
        self._functions: dict[str, tuple[Callable[..., object], bool]] = {}
        # One batch per definition (reference, trigger, options): None when its tasks are not parked.
        self._batches: dict[tuple[str, str, str], Batch | None] = {}

    def take(self, rows: list[StoredTask]) -> None:
        """Take some rows, in ``seq`` order: a record for some, a parked entry for the others."""
        offset = self._wall_offset
        due = self.due
        put = self.parked.put
        waits = self._waits if self._waits else None
        for row in rows:
            if waits is not None and waits.must_load(row.seq):
                record = load(row, wall_offset=offset, functions=self._functions, location=self._location)
                waits.took(record)
                self.records.append(record)
                continue
            batch = self._batch_of(row)
            next_due = row.next_due
            if (
                batch is None
                or row.failure_count
                or row.consecutive_failures
                or row.last_error is not None
                or (next_due is not None and (type(next_due) is not float or next_due - next_due != 0.0))
                or type(row.run_count) is not int  # (load judges a due time or count that is not one)
            ):
                self.records.append(
                    load(row, wall_offset=offset, functions=self._functions, location=self._location)
                )
                continue
            due_wall = next_due if next_due is not None else offset  # unknown: due now
            due_at = due_wall - offset
            seq = len(due)
            entry = (seq, batch.number, due_at, row.args_json)
            put(
                row.task_id,
                (*entry, row.seq, due_wall, row.run_count, row.last_outcome, row.kwargs_json),
                batch,
            )
            heappush(due, (due_at, seq, row.task_id))  # a heap as it grows: no long heapify at start

    def _batch_of(self, row: StoredTask) -> Batch | None:
        key = (row.fn_ref, row.trigger_json, row.options_json)
        if key in self._batches:
            return self._batches[key]
        batch = None
        try:
            fn, coroutine = _function(row.fn_ref, self._functions)
            spec, name = _decode(row.trigger_json, row.options_json, row.fn_ref, self._wall_offset, coroutine)
        except ColumnDamage:
            pass  # not parked: load() makes its stand-in, and says why
        else:
            if spec.trigger is None and not spec.on_wall:
                batch = stored_batch(fn, name, spec, self._location)
                self.parked.register(batch)
        self._batches[key] = batch
        return batch


def load(
    row: StoredTask,
    *,
    wall_offset: float,
    functions: dict[str, tuple[Callable[..., object], bool]],
    record: type[TaskRecord] = TaskRecord,
    location: str = "the store",
) -> TaskRecord:
    """Rebuild the record of a stored live task (on the caller's thread, before anyone sees it).

    Its due time comes back on this process's clock; a due time already past means due now.
    ``functions`` caches imported references across rows (with whether each is ``async def``).
    A reference that no longer imports (whatever its module raises) does not stop the load:
    the task keeps it, and each run fails with the ``ImportError``.
    ``record`` is the class to build (``TaskRecord``, or a subclass of it).

    A row that does not decode (a column that is not what this module writes: a malformed
    reference, a trigger that is not one, arguments that are not JSON...) does not stop the
    load either: its task comes back as a stand-in, a thread task due at the row's time (now,
    if that does not decode) with the trigger and options that do decode, whose every run fails
    with a ``StoreError`` naming ``location``, the task and the column. So it is seen
    (``info``, ``tasks``, events, the ledger) and ends as its failures say; the row stays.
    """
    try:
        return _load(row, wall_offset, functions, record)
    except ColumnDamage as damage:
        return _stand_in(row, damage, location, wall_offset, record)


def _load(
    row: StoredTask,
    wall_offset: float,
    functions: dict[str, tuple[Callable[..., object], bool]],
    record: type[TaskRecord],
) -> TaskRecord:
    """``load`` for a row that decodes; ``ColumnDamage`` naming the first column that does not."""
    fn, coroutine = _function(row.fn_ref, functions)
    spec, name = _decode(row.trigger_json, row.options_json, row.fn_ref, wall_offset, coroutine)
    due_wall = next_due_column(row.next_due, wall_offset)
    task = record(
        row.task_id,
        fn,
        read_column("args_json", row.args_json, args_column),
        read_column("kwargs_json", row.kwargs_json, kwargs_column),
        due_wall - wall_offset,
        name,
        spec,
    )
    task.store_seq = row.seq
    task.due_wall = due_wall
    task.run_count = count_column("run_count", row.run_count)
    task.last_outcome = row.last_outcome
    failure_count = count_column("failure_count", row.failure_count)
    consecutive = count_column("consecutive_failures", row.consecutive_failures)
    if failure_count or consecutive:
        failures = task.failures = Failures()
        failures.count = failure_count
        failures.consecutive = consecutive
        failures.last_traceback = row.last_error
    return task


@dataclass(frozen=True, slots=True)
class RowDamage:
    """Why a stored row loads as a stand-in (``damage_of``): for a caller about to write over it.

    Attributes:
        column: The first column that does not decode (the one the stand-in's error names).
        reason: That column, what it holds and why it does not decode, in words, e.g.
            ``"its column trigger_json ('[1]') does not decode: is JSON list, not an object"``.
        counters_decode: Whether the row's counters (``run_count``, ``failure_count``,
            ``consecutive_failures``) decode, so that the stand-in carries them on.
    """

    column: str
    reason: str
    counters_decode: bool


def damage_of(row: StoredTask) -> RowDamage | None:
    """Why ``row`` (a live task's) loads as a stand-in whose runs fail (``load``); ``None`` if it loads.

    The same decoding as ``load``, so whatever ``load`` makes a stand-in of is damaged here, and
    nothing else: the command line uses it to write its job file's definition over a damaged
    row (``actors/cli/reconcile.py``). It imports the row's reference as ``load`` does.
    """
    try:
        _load(row, 0.0, {}, TaskRecord)
    except ColumnDamage as damage:
        return RowDamage(damage.column, damage.what(), _counters_decode(row))
    return None


class DamagedTask:
    """The function of a stored task whose row does not decode: each call raises the ``StoreError`` why.

    A new error each call (raising one object again would grow its traceback run after run).
    """

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        """Stand in for the function; ``reason`` is the error's message."""
        self.reason = reason

    def __call__(self, *args: Any, **kwargs: Any) -> object:
        """Raise the ``StoreError`` (on the worker thread that runs the task)."""
        raise StoreError(self.reason)

    def __repr__(self) -> str:
        return f"DamagedTask({self.reason!r})"


def _stand_in(
    row: StoredTask, damage: ColumnDamage, location: str, wall_offset: float, record: type[TaskRecord]
) -> TaskRecord:
    """The record of a stored task whose row does not decode: what can be read of it, failing each run."""
    reason = damage.describe(location, row.task_id)
    logger.warning("%s", reason)
    spec: TaskSpec = PLAIN
    name = row.fn_ref if isinstance(row.fn_ref, str) else str(row.task_id)
    try:
        decoded, name = _decode(row.trigger_json, row.options_json, row.fn_ref, wall_offset, False)
    except ColumnDamage:
        pass
    else:
        spec = _stand_in_spec(decoded)
    try:
        due_wall = next_due_column(row.next_due, wall_offset)
    except ColumnDamage:
        due_wall = wall_offset  # due now
    task = record(str(row.task_id), DamagedTask(reason), (), EMPTY_KWARGS, due_wall - wall_offset, name, spec)
    task.store_seq = row.seq
    task.due_wall = due_wall
    task.last_outcome = row.last_outcome if isinstance(row.last_outcome, str) else None
    if _counters_decode(row):
        task.run_count = row.run_count
        if row.failure_count or row.consecutive_failures:
            failures = task.failures = Failures()
            failures.count = row.failure_count
            failures.consecutive = row.consecutive_failures
            failures.last_traceback = row.last_error if isinstance(row.last_error, str) else None
    return task


def _counters_decode(row: StoredTask) -> bool:
    """Whether the row's counters are counts (the stand-in of a damaged row carries them on then)."""
    counts = (row.run_count, row.failure_count, row.consecutive_failures)
    return all(type(count) is int and count >= 0 for count in counts)


def json_arguments(args: tuple[Any, ...], kwargs: Any) -> tuple[str, str, tuple[Any, ...], Any]:
    """Write a durable task's arguments as JSON; return the text and what they read back as.

    A durable task gets the arguments JSON gives back (lists for tuples), in this process as
    after a restart, so it behaves the same in both.
    """
    args_json = json.dumps(list(args), allow_nan=False) if args else NO_ARGS
    kwargs_json = json.dumps(dict(kwargs), allow_nan=False) if kwargs else NO_KWARGS
    return args_json, kwargs_json, args_column(args_json), kwargs_column(kwargs_json)


# -- the JSON formats ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _decode(
    trigger_json: str, options_json: str, fn_ref: str, wall_offset: float, coroutine: bool
) -> tuple[TaskSpec, str]:
    """A stored task's spec and name, decoded once per distinct text (the spec is immutable, so shared).

    A million stored tasks are mostly a few definitions: decoding each row's JSON again was half
    of a restart's time (measured at 1M rows: 3.8 s of 7.5 s without collections).

    Raises:
        ColumnDamage: a column does not decode (not cached: the next row with it raises again).
    """
    trigger = read_column("trigger_json", trigger_json, decode_trigger)
    options = read_column("options_json", options_json, json_object)
    recurring = read_column(
        "trigger_json", trigger, lambda stored: _recurrence(stored, wall_offset), trigger_json
    )
    spec = read_column(
        "options_json",
        options,
        lambda stored: _spec(recurring, trigger.wall, stored, coroutine),
        options_json,
    )
    name = options.get("name")
    if name is not None and not isinstance(name, str):
        raise ColumnDamage("options_json", options_json, f"has a name that is not a str: {name!r}")
    return spec, name or read_column("fn_ref", fn_ref, _reference_name)


def stored_spec(row: StoredTask, wall_offset: float) -> TaskSpec:
    """The spec a stored row decodes to (its trigger on the clock of ``wall_offset``; cached).

    Raises:
        ColumnDamage: its trigger or options do not decode.
    """
    spec, _ = _decode(row.trigger_json, row.options_json, row.fn_ref, wall_offset, False)
    return spec


def trigger_json(spec: TaskSpec, wall_offset: float) -> str:
    """The ``trigger_json`` column of a task of ``spec`` (a shared store's ``reschedule`` writes it)."""
    return _trigger_json(spec, wall_offset)


def _trigger_json(spec: TaskSpec, wall_offset: float) -> str:
    trigger = spec.trigger
    if trigger is None:
        return '{"once":true,"wall":true}' if spec.on_wall else '{"once":true}'
    if isinstance(trigger, FixedRate):
        assert trigger.first_at is not None  # resolved when the task was made
        return json.dumps({"rate": trigger.interval, "anchor": trigger.first_at + wall_offset})
    if isinstance(trigger, Cron):
        return json.dumps({"cron": trigger.expr, "tz": trigger.tz})
    return json.dumps({"delay": trigger.delay})


def _options_json(name: str, fn_ref: str, spec: TaskSpec) -> str:
    options: dict[str, object] = {}
    if name != _reference_name(fn_ref):
        options["name"] = name
    if spec.failure_limit is not None:
        options["max_consecutive_failures"] = spec.failure_limit
    if spec.misfire_grace is not None:
        options["misfire_grace"] = spec.misfire_grace
    if spec.executor != THREADS:
        options["executor"] = spec.executor
    if spec.timeout is not None:
        options["timeout"] = spec.timeout
    if spec.keep_result:
        options["keep_result"] = True
    retry = spec.retry
    if retry is not None:
        options["retry"] = {
            "attempts": retry.attempts,
            "delay": retry.delay,
            "backoff": retry.backoff,
            "max_delay": retry.max_delay,
            "jitter": retry.jitter,
            "on": [f"{kind.__module__}:{kind.__qualname__}" for kind in retry.on],
        }
    policies = spec.policies
    if policies is not DEFAULT_POLICIES:
        for key, value, default in zip(_POLICY_KEYS, policies.key(), DEFAULT_POLICIES.key(), strict=True):
            if value != default:
                options[key] = value
    return json.dumps(options) if options else "{}"


_POLICY_KEYS: Final = ("overlap", "max_instances", "catch_up", "max_catch_up", "jitter")


def _policies(options: dict[str, Any], recurring: bool) -> Policies:
    """A stored task's policies (checked by the rules a call is checked by)."""
    if not any(key in options for key in _POLICY_KEYS):
        return DEFAULT_POLICIES
    values = [
        options.get(key, default) for key, default in zip(_POLICY_KEYS, DEFAULT_POLICIES.key(), strict=True)
    ]
    return check_policies(*values, recurring=recurring)


def _recurrence(trigger: StoredTrigger, wall_offset: float) -> Recurrence | None:
    """A stored trigger's recurrence (``None``: one-time); ``ValueError`` or ``TypeError`` if it is bad."""
    if trigger.kind == "rate":
        return FixedRate(trigger.rate, trigger.anchor - wall_offset)
    if trigger.kind == "delay":
        return FixedDelay(trigger.delay, 0.0)  # its next due time is the row's
    if trigger.kind == "cron":
        cron = Cron(trigger.cron, trigger.tz)  # its next due time is the row's
        CronSchedule.parse(cron.expr, cron.tz)  # a ValueError naming the field or zone
        return cron
    return None


def _spec(recurring: Recurrence | None, on_wall: bool, options: dict[str, Any], coroutine: bool) -> TaskSpec:
    """A stored task's spec from its decoded trigger and options (``ValueError``, ``TypeError``: not ours)."""
    failure_limit = options.get("max_consecutive_failures")
    if failure_limit is not None and (type(failure_limit) is not int or failure_limit < 1):
        raise ValueError(f"has max_consecutive_failures {failure_limit!r}, not an int >= 1")
    executor = options.get("executor", THREADS)
    if not isinstance(executor, str) or not executor or executor == INLINE:
        # any other name: a registered executor's (Celery, Dask...), checked when it comes due
        raise ValueError(f"has executor {executor!r}, not the name of an executor")
    misfire_grace = options.get("misfire_grace")
    if misfire_grace is not None and require_finite("misfire_grace", misfire_grace) < 0:
        raise ValueError(f"has a negative misfire_grace {misfire_grace!r}")
    timeout = options.get("timeout")
    if timeout is not None:
        require_positive_duration("timeout", timeout)
    keep_result = options.get("keep_result", False)
    if not isinstance(keep_result, bool):
        raise TypeError(f"has keep_result {keep_result!r}, not a bool")
    spec = TaskSpec(
        recurring,
        failure_limit,
        executor,
        misfire_grace,
        on_wall=on_wall,
        timeout=timeout,
        retry=_retry(options.get("retry")),
        coroutine=coroutine,
        policies=_policies(options, recurring is not None),
        keep_result=keep_result,
    )
    return spec.or_plain()


def _retry(stored: dict[str, Any] | None) -> Retry | None:
    """A stored ``Retry``; exception types that no longer import fall back to ``Exception``."""
    if stored is None:
        return None
    kinds: list[type[BaseException]] = []
    for reference in stored.get("on", ()):
        try:
            kind = resolve_stored(reference)
        except (ImportError, TypeError, ValueError):
            continue
        if isinstance(kind, type) and issubclass(kind, BaseException):
            kinds.append(kind)
    options = {
        key: stored[key] for key in ("attempts", "delay", "backoff", "max_delay", "jitter") if key in stored
    }
    return Retry(**options, on=tuple(kinds) or (Exception,))


def _function(
    fn_ref: str, functions: dict[str, tuple[Callable[..., object], bool]]
) -> tuple[Callable[..., object], bool]:
    """The function a reference names, and whether it is ``async def``, imported once per load.

    A reference that no longer imports does not stop the load, whatever its module raises (a
    ``SyntaxError``, an error at its top level): the task keeps it, and each run fails with
    the ``ImportError``. A malformed one is a damaged row (``ColumnDamage``).
    """
    known = functions.get(fn_ref)
    if known is None:
        read_column("fn_ref", fn_ref, parse_reference)
        try:
            fn: Callable[..., object] = resolve_stored(fn_ref)
        except Exception:  # an import runs user code, which may raise anything
            fn = LazyReference(fn_ref)  # each run raises the ImportError, as a failed run
        known = functions[fn_ref] = (fn, makes_coroutine(fn))
    return known


def _stand_in_spec(spec: TaskSpec) -> TaskSpec:
    """The spec of a damaged task's stand-in: what decoded of ``spec``, run on a thread (it only raises).

    Never retried or timed: a run that can only fail gains nothing from either.
    """
    stand_in = TaskSpec(spec.trigger, spec.failure_limit, THREADS, spec.misfire_grace, on_wall=spec.on_wall)
    return stand_in.or_plain()


def _parked_arguments(
    location: str, spec: TaskSpec, task_id: str, args_json: str, kwargs_json: str
) -> tuple[tuple[Any, ...], Mapping[str, Any]] | StandIn:
    """A parked stored task's arguments, from their JSON text, as it gets its record.

    If they do not decode, what its record holds instead: a function whose runs fail with the
    reason, and ``spec``.
    """
    try:
        return read_column("args_json", args_json, args_column), read_column(
            "kwargs_json", kwargs_json, kwargs_column
        )
    except ColumnDamage as damage:
        return StandIn(DamagedTask(damage.describe(location, task_id)), spec)


def _reference_name(fn_ref: str) -> str:
    """The name a task gets by default: its function's qualified name (as ``default_name``)."""
    return parse_reference(fn_ref)[1]
