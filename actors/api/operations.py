"""``Scheduler.pause``, ``resume``, ``run_now`` and ``reschedule``: operating a live task (issue 24).

``LiveTaskOperations`` is a base class of the ``Scheduler`` facade (``actors/api/facade.py``).

Which thread decides. For a memory task (``token_decides``, ``actors/core/operations.py``: not
``overlap="allow"``; ``run_now`` only with ``overlap="skip"``), the caller's thread does, on
the task's token (``hold``, ``release_hold``, ``claim_manual``: ``actors/sync/token.py``), the
atomic arbiter every start and cancel of the task goes through; the move puts its report
(``Paused``, ``Resumed``, ``RunNowClaimed``) in the scheduler's outbox, and the scheduler's
thread does the bookkeeping later, in the order the moves were made. No wait for the scheduler:
about 1-3 µs a call, as a handle's ``cancel``. Otherwise (a durable task, committed before the
answer; ``"allow"``; ``run_now`` with ``"queue"``/``"replace"``; an id not live here yet; a
token that cannot tell) the caller builds the message (``messages/operations.py``), asks the
scheduler actor and waits for its ``bool``: the scheduler's thread decides (the core) and, for
a durable task, commits the change to the store before it answers (one ``ask`` round trip).

Both ways hold the facade's ``_lock`` as ``cancel`` does: while putting or sending, so nothing
is put or sent after ``Shutdown`` (after shutdown every method returns ``False``). Lock order:
the facade's ``_lock``, then the tokens' (the move, and its put, inside).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from actors.api.plumbing import OUTBOX_BACKLOG
from actors.core.cron import CronSchedule
from actors.core.operations import PAUSE, RESUME, RUN_NOW, core_refuses, token_decides
from actors.core.task_record import TaskRecord
from actors.errors import SchedulerShutdownError
from actors.sync.token import DONE, REFUSED, UNSURE
from messages import Cron, Pause, Paused, Reschedule, Resume, Resumed, RunNow, RunNowClaimed, TaskId, Trigger
from messages.operations import require_trigger

if TYPE_CHECKING:
    import pykka

    from actors.sync.outbox import Outbox

_Move = Callable[[object, Callable[[Any], bool]], tuple[int, bool]]
"""A token's operation move bound to its token: ``(report, put) -> (verdict, tell)``."""

__all__ = ["LiveTaskOperations"]


class LiveTaskOperations:
    """Pause, resume, run now and reschedule (a base class of ``Scheduler``: the state is the facade's)."""

    if TYPE_CHECKING:  # the facade's members these methods use
        _lock: threading.Lock
        _closed: bool
        _live: Mapping[TaskId, TaskRecord]
        _outbox: Outbox[Any]

        def _tell_drain(self) -> None: ...
        def _make_room(self, limit: int) -> None: ...
        def _ask(self, message: object) -> pykka.Future[Any]: ...
        @staticmethod
        def _get(reply: pykka.Future[Any]) -> Any: ...

    def pause(self, task_id: TaskId) -> bool:
        """Pause a task: no new run of it starts until ``resume``; a run in progress finishes.

        ``True`` if it paused a live task; ``False`` if the task is unknown, ended or already
        paused (and after shutdown). While paused, ``info(task_id).status`` is
        ``TaskStatus.PAUSED`` (not terminal); ``PAUSED`` is published. A paused task can still
        be cancelled, rescheduled and run now. Runs on the calling thread, which decides on the
        task's token for a memory task (no wait), else waits for the scheduler's thread to decide.
        """
        verdict = self._on_token(task_id, PAUSE) if isinstance(task_id, str) else REFUSED
        return verdict == DONE if verdict != UNSURE else self._operate(Pause(task_id))

    def resume(self, task_id: TaskId) -> bool:
        """Resume a paused task; ``True`` if it was paused (``RESUMED`` is published).

        The due times it missed while paused are its catch-up policy's (``"latest"``: one late
        run if within ``misfire_grace``, exactly as after a restart). A fixed-delay task runs
        next ``delay`` after the resume. Runs on the calling thread, as ``pause`` says.
        """
        verdict = self._on_token(task_id, RESUME) if isinstance(task_id, str) else REFUSED
        return verdict == DONE if verdict != UNSURE else self._operate(Resume(task_id))

    def run_now(self, task_id: TaskId) -> bool:
        """Run a task once now, outside its schedule; whether a run was started.

        The run does not move a fixed-rate or cron grid (the slot it waited for keeps its
        time; a slot that passes while this run is going is skipped, as a slot missed during
        any run); a fixed-delay task counts its next delay from this run's end; a one-time
        task's one run is brought forward. The run is counted like any other, and
        ``current_run().manual`` is ``True`` in it. A paused task gets one run and stays paused.
        ``False`` for an unknown or ended task, one waiting for its dependencies
        (``schedule_after``), and one whose run is in progress or about to start (the overlap
        policy ``"skip"``: nothing is queued). With ``"skip"``, a run that has come due but not yet
        started becomes the manual run (as if this call had come just before it fell due: one
        run, not two). Runs on the calling thread, which decides on the task's token for a
        memory task with ``"skip"`` (no wait), else waits for the scheduler's thread to decide.
        """
        verdict = self._on_token(task_id, RUN_NOW) if isinstance(task_id, str) else REFUSED
        return verdict == DONE if verdict != UNSURE else self._operate(RunNow(task_id))

    def reschedule(self, task_id: TaskId, trigger: Trigger) -> bool:
        """Give a live task a new trigger (``Once``, ``FixedRate``, ``FixedDelay`` or ``Cron``).

        Its function, arguments, options and counters stay. The next run is the new trigger's
        first, counted from now: nothing runs at once unless the trigger says so (a
        ``FixedRate``/``FixedDelay`` with neither ``first_at`` nor ``initial_delay`` runs first
        one interval from now; ``initial_delay=0`` runs it at once). A run in progress goes on,
        and the new trigger applies from its end. ``False`` for an unknown or ended task, one
        whose one-time run is in progress, and one waiting for its dependencies. Runs on the
        calling thread, which waits for the scheduler's thread to decide.

        Raises:
            TypeError: ``trigger`` is not one of the four triggers (nothing changed).
            ValueError: a ``Cron`` whose expression or zone does not parse, or that never
                fires (nothing changed).
        """
        require_trigger(trigger)
        if isinstance(trigger, Cron):
            CronSchedule.parse(trigger.expr, trigger.tz)  # a bad one raises here, at the call
        return self._operate(Reschedule(task_id, trigger)) if isinstance(task_id, str) else False

    def _on_token(self, task_id: TaskId, operation: str) -> int:
        """Decide ``operation`` on the token of the live task ``task_id`` (caller's thread).

        ``DONE`` or ``REFUSED`` (always after shutdown); ``UNSURE`` if the token does not
        decide it (``token_decides``; an id not live here) or cannot tell: then ask.
        """
        task = self._live.get(task_id)
        if task is None or not token_decides(task, operation):
            return UNSURE
        if operation is PAUSE:  # (a pause or resume is the token's alone: its state is not read)
            return self._by_token(task.hold, Paused(task))
        if operation is RESUME:
            return self._by_token(task.release_hold, Resumed(task))
        if core_refuses(task, RUN_NOW):  # a moment's reading, sound as core_refuses says
            return REFUSED
        return self._by_token(task.claim_manual, RunNowClaimed(task))

    def _by_token(self, move: _Move, report: object) -> int:
        """Make ``move`` on a task's token (caller's thread); its verdict (``REFUSED`` after shutdown).

        The move puts ``report`` in the outbox if it wins (under the token's lock, so reports
        are in the order of the moves); this tells the scheduler ``Drain`` if it must.
        """
        outbox = self._outbox
        with self._lock:
            if self._closed:
                return REFUSED
            verdict, tell = move(report, outbox.put)
            if tell:
                with contextlib.suppress(SchedulerShutdownError):  # stopped by force: all ended
                    self._tell_drain()
        if outbox.backlog > OUTBOX_BACKLOG:  # tested here: the common case costs no call
            self._make_room(OUTBOX_BACKLOG)
        return verdict

    def _operate(self, message: Pause | Resume | RunNow | Reschedule) -> bool:
        """Ask the scheduler to apply ``message`` and wait for its answer (caller's thread)."""
        with self._lock:
            if self._closed:
                return False
            reply = self._ask(message)
        answer = self._get(reply)
        if isinstance(answer, BaseException):  # a Cron that never fires: nothing changed
            raise answer
        return bool(answer)
