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
  ..., "misfire_grace": ..., "executor": "process"}``. Keys it does not know are ignored:
  the command line keeps ``"job_fingerprint"`` there (``actors/cli/fingerprints.py``).

Nothing here reads a clock, and loading never runs user code: a reference is imported (that
is all), never unpickled.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from heapq import heappush
from typing import Any, Final

from actors.effects import RunOutcome
from actors.parked import Batch, ParkedTasks
from actors.references import LazyReference, parse_reference, resolve
from actors.retry import Retry
from actors.store.protocol import RunRecord, StoredStatus, StoredTask, TaskDefinition, TaskUpdate
from actors.task_record import PLAIN, THREADS, Failures, Recurrence, TaskRecord, TaskSpec
from actors.task_state import CANCELLED, COMPLETED, FAILED, State
from actors.validation import is_coroutine_function
from messages import Cron, FixedDelay, FixedRate
from messages.commands import EMPTY_KWARGS

__all__ = ["LoadedTasks", "definition", "load", "run_record", "task_update"]

_STORED_STATUS: Final[dict[State, StoredStatus]] = {
    COMPLETED: "completed",
    FAILED: "failed",
    CANCELLED: "cancelled",
}
_NO_ARGS: Final = "[]"
_NO_KWARGS: Final = "{}"


def definition(
    task: TaskRecord, fn_ref: str, args_json: str, kwargs_json: str, *, wall_offset: float
) -> TaskDefinition:
    """What the store keeps of a new durable task (its due time as a wall-clock instant)."""
    due_wall = task.due_wall if task.due_wall is not None else task.due_at + wall_offset
    return TaskDefinition(
        task_id=task.task_id,
        fn_ref=fn_ref,
        args_json=args_json,
        kwargs_json=kwargs_json,
        trigger_json=_trigger_json(task.spec, wall_offset),
        options_json=_options_json(task.name, fn_ref, task.spec),
        next_due=due_wall,
    )


def task_update(task: TaskRecord) -> TaskUpdate:
    """The state of a durable task to write after a run or at its end (core's state, as it is now)."""
    assert task.store_seq is not None
    status = _STORED_STATUS.get(task.state, "scheduled")
    failures = task.failures or Failures()
    error = failures.last_error
    return TaskUpdate(
        task_id=task.task_id,
        seq=task.store_seq,
        status=status,
        next_due=task.due_wall if status == "scheduled" else None,
        run_count=task.run_count,
        failure_count=failures.count,
        consecutive_failures=failures.consecutive,
        last_error=None if error is None else _error_text(error),
        last_outcome=task.last_outcome,
    )


def run_record(outcome: RunOutcome, *, wall_offset: float) -> RunRecord:
    """The run ledger's row for one finished (or missed) run of a durable task."""
    task = outcome.task
    assert task.store_seq is not None
    started = None if outcome.started_at is None else outcome.started_at + wall_offset
    return RunRecord(
        task_id=task.task_id,
        task_seq=task.store_seq,
        run=outcome.run,
        due=outcome.due_wall,
        started=started,
        finished=outcome.finished_at + wall_offset,
        outcome=outcome.outcome,
        error=outcome.error,
    )


class LoadedTasks:
    """A store's live tasks as they are read back (the caller's thread, before the scheduler starts).

    ``take`` is given the rows a part at a time (``LoadsInParts``) or all at once. A one-time
    task that is due at a clock time and has no failures on record is *parked*
    (``actors/parked.py``): an untracked tuple of its row's values in ``parked``, with its heap
    entry in ``due``, until it comes due, is cancelled or a handle is asked for; only then is
    it decoded into a record. Every other task is rebuilt as a record at once (``records``).
    So loading a million one-time tasks leaves the garbage collector next to nothing to visit,
    and the stored rows of one part are dropped before the next part is read.
    """

    def __init__(self, *, wall_offset: float) -> None:
        """Read back on the clock whose wall-clock offset (wall time minus clock time) is ``wall_offset``."""
        self.records: list[TaskRecord] = []
        self.parked = ParkedTasks()
        self.due: list[tuple[float, int, str]] = []  # the parked tasks' heap entries (a heap), seq = count
        self._wall_offset = wall_offset
        self._functions: dict[str, tuple[Callable[..., object], bool]] = {}
        # One batch per definition (reference, trigger, options): None when its tasks are not parked.
        self._batches: dict[tuple[str, str, str], Batch | None] = {}

    def take(self, rows: list[StoredTask]) -> None:
        """Take some rows, in ``seq`` order: a record for some, a parked entry for the others."""
        offset = self._wall_offset
        due = self.due
        put = self.parked.put
        for row in rows:
            batch = self._batch_of(row)
            if batch is None or row.failure_count or row.consecutive_failures or row.last_error is not None:
                self.records.append(load(row, wall_offset=offset, functions=self._functions))
                continue
            due_wall = row.next_due if row.next_due is not None else offset  # unknown: due now
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
        fn, coroutine = _function(row.fn_ref, self._functions)
        spec, name = _decode(row.trigger_json, row.options_json, row.fn_ref, self._wall_offset, coroutine)
        batch = None
        if spec.trigger is None and not spec.on_wall:
            batch = Batch(fn, EMPTY_KWARGS, name, spec, _arguments)
            self.parked.register(batch)
        self._batches[key] = batch
        return batch


def load(
    row: StoredTask,
    *,
    wall_offset: float,
    functions: dict[str, tuple[Callable[..., object], bool]],
    record: type[TaskRecord] = TaskRecord,
) -> TaskRecord:
    """Rebuild the record of a stored live task (on the caller's thread, before anyone sees it).

    Its due time comes back on this process's clock; a due time already past means due now.
    ``functions`` caches imported references across rows (with whether each is ``async def``).
    A reference that no longer imports does not stop the load: the task keeps it, and each
    run fails with the ``ImportError``.
    ``record`` is the class to build (a subclass of ``TaskRecord``, for a shared store's claims).
    """
    fn, coroutine = _function(row.fn_ref, functions)
    spec, name = _decode(row.trigger_json, row.options_json, row.fn_ref, wall_offset, coroutine)
    next_due = row.next_due
    due_wall = next_due if next_due is not None else wall_offset  # unknown: due now, at once
    task = record(
        row.task_id,
        fn,
        _args(row.args_json),
        _kwargs(row.kwargs_json),
        due_wall - wall_offset,
        name,
        spec,
    )
    task.store_seq = row.seq
    task.due_wall = due_wall
    task.run_count = row.run_count
    task.last_outcome = row.last_outcome
    if row.failure_count or row.consecutive_failures:
        failures = task.failures = Failures()
        failures.count = row.failure_count
        failures.consecutive = row.consecutive_failures
        failures.last_traceback = row.last_error
    return task


def json_arguments(args: tuple[Any, ...], kwargs: Any) -> tuple[str, str, tuple[Any, ...], Any]:
    """Write a durable task's arguments as JSON; return the text and what they read back as.

    A durable task gets the arguments JSON gives back (lists for tuples), in this process as
    after a restart, so it behaves the same in both.
    """
    args_json = json.dumps(list(args), allow_nan=False) if args else _NO_ARGS
    kwargs_json = json.dumps(dict(kwargs), allow_nan=False) if kwargs else _NO_KWARGS
    return args_json, kwargs_json, _args(args_json), _kwargs(kwargs_json)


# -- the JSON formats ---------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _decode(
    trigger_json: str, options_json: str, fn_ref: str, wall_offset: float, coroutine: bool
) -> tuple[TaskSpec, str]:
    """A stored task's spec and name, decoded once per distinct text (the spec is immutable, so shared).

    A million stored tasks are mostly a few definitions: decoding each row's JSON again was half
    of a restart's time (measured at 1M rows: 3.8 s of 7.5 s without collections).
    """
    options = json.loads(options_json)
    spec = _spec(json.loads(trigger_json), options, wall_offset, coroutine)
    return spec, options.get("name") or _reference_name(fn_ref)


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
    return json.dumps(options) if options else "{}"


def _spec(trigger: dict[str, Any], options: dict[str, Any], wall_offset: float, coroutine: bool) -> TaskSpec:
    recurring: Recurrence | None = None
    if "rate" in trigger:
        recurring = FixedRate(trigger["rate"], trigger["anchor"] - wall_offset)
    elif "delay" in trigger:
        recurring = FixedDelay(trigger["delay"], 0.0)  # its next due time is the row's
    elif "cron" in trigger:
        recurring = Cron(trigger["cron"], trigger["tz"])  # its next due time is the row's
    spec = TaskSpec(
        recurring,
        options.get("max_consecutive_failures"),
        options.get("executor", THREADS),
        options.get("misfire_grace"),
        on_wall=trigger.get("wall", False),
        timeout=options.get("timeout"),
        retry=_retry(options.get("retry")),
        coroutine=coroutine,
    )
    return PLAIN if spec.plain else spec


def _retry(stored: dict[str, Any] | None) -> Retry | None:
    """A stored ``Retry``; exception types that no longer import fall back to ``Exception``."""
    if stored is None:
        return None
    kinds: list[type[BaseException]] = []
    for reference in stored.get("on", ()):
        try:
            kind = resolve(reference)
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

    A reference that no longer imports does not stop the load: the task keeps it, and each
    run fails with the ``ImportError``.
    """
    known = functions.get(fn_ref)
    if known is None:
        try:
            fn: Callable[..., object] = resolve(fn_ref)
        except (ImportError, TypeError, ValueError):
            fn = LazyReference(fn_ref)  # each run raises the ImportError, as a failed run
        known = functions[fn_ref] = (fn, is_coroutine_function(fn))
    return known


def _arguments(args_json: str, kwargs_json: str) -> tuple[tuple[Any, ...], Any]:
    """A stored task's arguments, from their JSON text (a parked task's, as it gets its record)."""
    return _args(args_json), _kwargs(kwargs_json)


def _args(text: str) -> tuple[Any, ...]:
    return () if text == _NO_ARGS else tuple(json.loads(text))


def _kwargs(text: str) -> Any:
    return EMPTY_KWARGS if text == _NO_KWARGS else json.loads(text)


def _reference_name(fn_ref: str) -> str:
    """The name a task gets by default: its function's qualified name (as ``default_name``)."""
    return parse_reference(fn_ref)[1]


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"
