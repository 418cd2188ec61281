"""The plumbing every part of ``Scheduler`` shares: sending, asking, the outbox and its backpressure.

``Plumbing`` is the base of the facade's parts (``submitting.py``, ``scheduling.py``, ``messaging.py``,
``queries.py``, ``observing.py``) and so of ``Scheduler`` (``facade.py``), which sets the fields it
declares. Every method runs on the caller's thread.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

import pykka

from actors.api.directory import TaskDirectory
from actors.core.task_record import TaskRecord
from actors.errors import SchedulerInternalError, SchedulerShutdownError, WouldDeadlockError
from actors.runtime.executor_protocol import Executor
from actors.runtime.minting import IdMint
from actors.runtime.scheduler import OutboxItem, SchedulerActor
from actors.store import Store
from actors.sync.clock import Clock
from actors.sync.outbox import Outbox
from actors.sync.threads import Role, ThreadRegistry
from actors.sync.waiting import Deadline
from messages import Drain, TaskId, TaskInfo

if TYPE_CHECKING:
    from actors.api.handles import TaskHandle

LATEST_DUE: Final = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
"""The latest instant a task may first be due (``schedule_*`` refuses a later one: ``ValueError``)."""

FAR_MARGIN: Final = 366 * 86400.0
"""Seconds below ``LATEST_DUE`` under which a due time needs no exact check (a year: wall-clock jumps)."""

_ROUNDING: Final = 0.5  # seconds: float rounding in placing LATEST_DUE on the clock is far less

ASK_TIMEOUT: Final = 30.0
"""Seconds any query waits for the scheduler's reply before raising ``TimeoutError``."""

_DRAIN: Final = Drain()

OUTBOX_BACKLOG: Final = 512
"""Items a caller may leave in the scheduler's outbox before it waits for the scheduler to take
them (a few milliseconds of the scheduler's work). The wait also lets the other threads have
the GIL: a thread filling a big schedule would otherwise hold it for whole switch intervals, and
every hop of a due task (timer, scheduler, worker) would wait one out."""

ROOM_TIMEOUT: Final = 1.0
"""The longest a caller waits for that (a stuck scheduler must not hang its callers)."""


class Plumbing:
    """How the facade talks to its scheduler actor: the members every part of it uses."""

    # Set by ``Scheduler.__init__``; declared here for the parts that use them.
    _clock: Clock
    _processes: int
    _executors: Mapping[str, Executor]  # registered by name (Scheduler(executors=...))
    _store: Store | None
    _directory: TaskDirectory  # where the tasks are: this node's scheduler, or a shared store too
    # schedule_once's plain path (LocalTasks.add_memory), or None with a store (every task
    # then asks what its options and the store make of it)
    _add_plain: Callable[[TaskRecord], TaskHandle] | None
    _far_at: float
    _threads: ThreadRegistry
    _outbox: Outbox[OutboxItem]
    _live: Mapping[TaskId, TaskRecord]
    _mint: IdMint
    _ref: pykka.ActorRef[SchedulerActor]
    _lock: threading.Lock  # guards _closed, and is held while sending (see Scheduler.__init__)
    _closed: bool
    _subscription_ids: Iterator[int]

    if TYPE_CHECKING:
        # The port's members the other parts define (info and _revoke: queries.py; the rest:
        # observing.py), named for the type checker only: so each part is a SchedulerPort.

        def info(self, task_id: TaskId) -> TaskInfo:
            """``Queries.info``."""

        def _revoke(self, task: TaskRecord, interrupt: bool = False) -> bool: ...

        def _unsubscribe(self, subscription_id: int) -> None: ...

        def _settle_step(self, deadline: Deadline, until: float | None = None) -> int | None: ...

        def _next_due(self) -> float | None: ...

    @property
    def clock(self) -> Clock:
        """The clock the scheduler reads."""
        return self._clock

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

    def _put(self, item: OutboxItem) -> None:
        """Put ``item`` in the scheduler's outbox; tell it ``Drain`` if the put says so (under ``_lock``)."""
        if self._outbox.put(item):
            self._tell_drain()

    def _tell_drain(self) -> None:
        """Tell the scheduler ``Drain``, as a put said to (under ``_lock``; ``SchedulerShutdownError``)."""
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

    def _is_open(self) -> bool:
        """Whether ``shutdown`` has not been called yet (``SchedulerPort``)."""
        return not self._closed

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
