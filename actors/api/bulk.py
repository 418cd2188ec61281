"""Durable bulk scheduling: ``Scheduler.schedule_many(..., durable=True)``.

The tasks of one call are committed to the scheduler's store in one transaction
(``Store.add_many``) before the call returns, with ids minted in the store's id space
(``task-<n>``, one reservation for the lot). Everything that can refuse them is checked first,
on the caller's thread, so bad input commits nothing: the function must have an importable name
(it is stored by reference), and every task's arguments must round-trip through JSON (they
are stored as JSON text, and the task gets what JSON gives back: lists for tuples).

Then, as for a durable ``schedule_once``:

- on a store of this scheduler's own (SQLite), the tasks are handed to the scheduler in parts,
  parked as a restart would load them (``actors/core/parked.py``: their arguments stay JSON
  text until each gets its record), and run as usual; a restart loads those still pending;
- on a shared store (PostgreSQL), the committed rows are all there is: whichever node claims a
  run runs it (``docs/scale-out.md``). One hint tells the nodes at commit.

Runs on the caller's thread; see ``BulkPort`` for the scheduler's members it uses.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Final, Protocol

from actors.core.parked import Batch, Parcel
from actors.core.task_record import TaskSpec
from actors.errors import SchedulerShutdownError
from actors.references import check_json_arguments, reference_of
from actors.runtime.durable import one_time_columns, stored_batch
from actors.runtime.minting import IdMint
from actors.store.protocol import Store, TaskDefinition
from messages import TaskId
from messages.commands import EMPTY_KWARGS

if TYPE_CHECKING:
    from actors.api.directory import TaskDirectory
    from actors.runtime.scheduler import OutboxItem

__all__ = ["DURABLE_PARCEL", "BulkPort", "schedule_durable_many"]

DURABLE_PARCEL: Final = 1024
"""Committed tasks per part handed to the scheduler (as ``schedule_many``'s memory parts)."""

DURABLE_PARCELS_AHEAD: Final = 2
"""Parts left in the outbox before the caller waits for the scheduler to take them."""

# Argument values JSON holds as they are: a task's arguments made of these alone need no
# walk before they are encoded (the encoder refuses a NaN or an int of too many digits).
_ATOMS: Final = frozenset({str, int, float, bool, type(None)})
_ENCODER: Final = json.JSONEncoder(allow_nan=False)  # as json.dumps(..., allow_nan=False)
_NO_ARGS: Final = "[]"
_NO_KWARGS: Final = "{}"


class BulkPort(Protocol):
    """The members of ``Scheduler`` durable bulk scheduling uses (only here and in tests)."""

    @property
    def _mint(self) -> IdMint:
        """The scheduler's ids; ``many`` takes ``IdMint._lock`` and may reserve numbers (one transaction)."""
        ...

    @property
    def _store(self) -> Store | None:
        """The scheduler's store (never ``None`` here: ``durable=True`` without one is refused first)."""
        ...

    @property
    def _directory(self) -> TaskDirectory:
        """Where the scheduler's tasks live: whether committed ones are this node's to run."""
        ...

    def _while_open(self) -> AbstractContextManager[None]:
        """Hold ``_lock`` for a block; ``SchedulerShutdownError`` once shut down."""
        ...

    def _wall_offset(self) -> float:
        """Wall-clock time minus clock time, now. No lock."""
        ...

    def _check_due_time(self, due_at: float) -> None:
        """``ValueError`` for a due time past ``LATEST_DUE``."""
        ...

    def _put(self, item: OutboxItem) -> None:
        """Put ``item`` in the scheduler's outbox (under ``_lock``)."""
        ...

    def _make_room(self, limit: int) -> None:
        """Wait until at most ``limit`` items are in the outbox (not under ``_lock``)."""
        ...


def schedule_durable_many(
    scheduler: BulkPort,
    fn: Callable[..., object] | str,
    target: Callable[..., object],
    kwargs: Mapping[str, Any],
    name: str,
    spec: TaskSpec,
    due_at: list[float],
    arguments: list[tuple[Any, ...]] | None,
) -> list[TaskId]:
    """Commit one-time tasks ``target(*arguments[i], **kwargs)`` due at ``due_at[i]``; return their ids.

    ``fn`` is what the caller passed (a reference is stored as given), ``target`` the function
    it names; ``kwargs``, ``name``, ``spec``, ``due_at`` and ``arguments`` are checked already
    (``Scheduler.schedule_many``). The caller's thread.

    Raises:
        ValueError: ``fn`` has no importable name; a due time is past ``LATEST_DUE``.
        TypeError: an argument does not round-trip through JSON (the message names the task,
            ``args[3]``, and the value in its arguments).
        StoreError: the store could not commit them (nothing is committed).
        SchedulerShutdownError: the scheduler was shut down before the commit (nothing is
            committed). After the commit the call returns the ids: the tasks are stored, and
            run when a scheduler next starts on the store, if this one stops first.
    """
    store = scheduler._store
    assert store is not None  # TaskOptions.check refuses durable=True without a store
    if due_at:
        scheduler._check_due_time(max(due_at))
    fn_ref = fn if isinstance(fn, str) else reference_of(fn)
    args_json = _json_arguments(arguments, kwargs, len(due_at))
    kwargs_json = json.dumps(dict(kwargs), allow_nan=False) if kwargs else _NO_KWARGS
    trigger_json, options_json = one_time_columns(name, fn_ref, spec)
    offset = scheduler._wall_offset()
    due_wall = [due + offset for due in due_at]
    ids = scheduler._mint.many(len(due_at))  # numbers left unused by a failed commit are gaps
    definitions = [
        TaskDefinition(
            task_id=task_id,
            fn_ref=fn_ref,
            args_json=args,
            kwargs_json=kwargs_json,
            trigger_json=trigger_json,
            options_json=options_json,
            next_due=wall,
        )
        for task_id, args, wall in zip(ids, args_json, due_wall, strict=True)
    ]
    with scheduler._while_open():  # across the commit, so that nothing is committed after shutdown
        seqs = store.add_many(definitions)
    if scheduler._directory.runs_stored_tasks:  # the store is this scheduler's own: it runs them
        batch = stored_batch(target, name, spec, store.location)
        _hand_over(scheduler, batch, ids, due_at, (args_json, seqs, due_wall, kwargs_json))
    return ids


def _json_arguments(
    arguments: list[tuple[Any, ...]] | None, kwargs: Mapping[str, Any], count: int
) -> list[str]:
    """Each task's positional arguments as JSON text, all checked before any is stored.

    Raises:
        TypeError: an argument does not round-trip through JSON; the message names it.
    """
    check_json_arguments((), kwargs)  # names kwargs['key']
    if arguments is None:
        return [_NO_ARGS] * count
    texts: list[str] = []
    encode = _ENCODER.encode
    for index, args in enumerate(arguments):
        if not args:
            texts.append(_NO_ARGS)
            continue
        try:
            if not all(type(value) in _ATOMS for value in args):  # containers: checked in full first
                check_json_arguments(args, EMPTY_KWARGS)
            try:
                texts.append(encode(list(args)))
            except ValueError:  # a NaN, or an int of too many digits: the full check says where
                check_json_arguments(args, EMPTY_KWARGS)
                raise
        except (TypeError, ValueError) as error:
            raise TypeError(f"the arguments of task {index} (args[{index}]): {error}") from None
    return texts


def _hand_over(
    scheduler: BulkPort,
    batch: Batch,
    ids: list[TaskId],
    due_at: list[float],
    rows: tuple[list[str], list[int], list[float], str],
) -> None:
    """Give the committed tasks to the scheduler in parts, parked (backpressure as ``schedule_many``'s).

    ``rows``: what was committed of each (arguments' JSON, ``seq``, due time on the wall clock)
    and the batch's ``kwargs_json``. A shutdown meanwhile stops the hand-over: what is not
    handed over stays in the store, for the next scheduler on it.
    """
    args_json, seqs, due_wall, kwargs_json = rows
    for start in range(0, len(ids), DURABLE_PARCEL):
        end = start + DURABLE_PARCEL
        stored = (seqs[start:end], due_wall[start:end], kwargs_json)
        parcel = Parcel(batch, ids[start:end], due_at[start:end], args_json[start:end], stored)
        try:
            with scheduler._while_open():  # one part at a time: other callers get in between
                scheduler._put(parcel)
        except SchedulerShutdownError:
            return
        scheduler._make_room(DURABLE_PARCELS_AHEAD)
