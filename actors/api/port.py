"""``SchedulerPort``: the members of ``Scheduler`` its friends may use, and nothing else.

The friends are the objects the facade hands out or leans on: ``TaskHandle`` and
``Subscription`` (``handles.py``), ``settle``/``advance`` (``stepping.py``), ``SharedTasks``
(``shared_tasks.py``, the directory of a shared store) and ``SharedTaskHandle``
(``shared_handles.py``). They name this protocol, never ``Scheduler``, so none of them imports
the facade (``tests/unit/test_layers.py`` checks it, ``TYPE_CHECKING`` imports included); the
facade builds them and passes itself.

As ``concurrent.futures.Future`` marks ``set_running_or_notify_cancel`` and the like "only used
by Executors and in tests", the underscored members here are only used by these friends and in
tests: not by users, who have the public methods of ``Scheduler``. Each says which thread calls
it and what lock it takes. ``_lock`` is the facade's: it guards ``_closed`` and is held while
sending, so nothing is sent or committed after ``Shutdown``; it is not reentrant, so no member
that takes it is called while it is held.

A protocol is a type, not a wrapper: a friend holds the ``Scheduler`` itself, and a call through
the port is the same attribute lookup as before (``handle.cancel()`` is one call of
``_revoke``).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Protocol

from actors.core.task_record import TaskRecord
from actors.sync.clock import Clock
from actors.sync.waiting import Deadline
from messages import TaskId, TaskInfo

__all__ = ["SchedulerPort"]


class SchedulerPort(Protocol):
    """What a handle, a subscription, stepping and the shared tasks may ask of their ``Scheduler``."""

    # -- public members the friends use too ---------------------------------------------------

    @property
    def clock(self) -> Clock:
        """The scheduler's clock (``stepping.advance`` moves a ``FakeClock``). Any thread; no lock."""
        ...

    def info(self, task_id: TaskId) -> TaskInfo:
        """``Scheduler.info`` (``TaskHandle.info`` of a task not yet ended). Any thread; no lock held."""
        ...

    # -- only used by the friends and in tests ------------------------------------------------

    def _revoke(self, task: TaskRecord, interrupt: bool = False) -> bool:
        """Cancel ``task`` through its token; if that won, tell the scheduler (``TaskHandle.cancel``).

        The caller's thread. Takes no lock to decide (the token's move does); takes ``_lock``
        briefly to put the cancel in the outbox. A durable task's cancel is committed to the
        store first (on a shared store, ``SharedTasks.revoke`` decides, outside ``_lock``). The
        facade's ``TaskDirectory`` does it: ``LocalTasks.revoke`` or ``SharedTasks.revoke``.
        """
        ...

    def _unsubscribe(self, subscription_id: int) -> None:
        """Tell the scheduler to drop a subscription; nothing after shutdown (``Subscription.cancel``).

        The caller's thread; takes ``_lock`` while it sends.
        """
        ...

    def _send(self, message: object) -> None:
        """Tell the scheduler actor ``message`` (``SharedTasks.cancel`` tells ``CancelledInStore``).

        The caller's thread; takes ``_lock`` while it sends.

        Raises:
            SchedulerShutdownError: the scheduler is shut down.
        """
        ...

    def _while_open(self) -> AbstractContextManager[None]:
        """Hold ``_lock`` for a block, refusing it once the scheduler is shut down.

        The caller's thread (``SharedTasks.submit``, around minting an id and committing the
        task, so nothing is committed after shutdown). Inside the block call only ``_mint_id``
        and ``_wall_offset``, which take no lock.

        Raises:
            SchedulerShutdownError: the scheduler is shut down (raised on entering).
        """
        ...

    def _is_open(self) -> bool:
        """Whether ``shutdown`` has not been called yet (``SharedTasks.cancel``: none is committed after it).

        Any thread; no lock: a read of ``_closed``, which only ever goes from false to true.
        """
        ...

    def _mint_id(self) -> TaskId:
        """A new task id, unique in the store (``IdMint``).

        The caller's thread; takes ``IdMint._lock`` (which may reserve a block of numbers from
        the store: one transaction).

        Raises:
            StoreError: a block of numbers had to be reserved, and the store failed.
        """
        ...

    def _wall_offset(self) -> float:
        """Wall-clock time (UTC epoch seconds) minus clock time, now. Any thread; no lock."""
        ...

    def _settle_step(self, deadline: Deadline, until: float | None = None) -> int | None:
        """Ask the scheduler to settle (up to ``until``); wait for its activity count (``None``: stopped).

        The caller's thread (``stepping``), never one of the scheduler's; takes ``_lock`` while
        it sends, then waits unlocked until ``deadline``.

        Raises:
            TimeoutError: no answer by ``deadline``.
        """
        ...

    def _next_due(self) -> float | None:
        """The earliest due time the scheduler holds, or ``None`` (also once shut down).

        The caller's thread (``stepping.advance``); no lock: it asks the scheduler and waits.
        """
        ...
