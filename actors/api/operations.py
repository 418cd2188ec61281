"""``Scheduler.pause``, ``resume``, ``run_now`` and ``reschedule``: operating a live task (issue 24).

``LiveTaskOperations`` is a base class of the ``Scheduler`` facade (``actors/api/facade.py``):
each method builds its message (``messages/operations.py``), asks the scheduler actor and waits
for its ``bool``. The caller's thread only checks arguments and waits; the scheduler's thread
decides (``actors/core/operations.py``) and, for a durable task, commits the change to the store
before it answers. It uses the facade's ``_lock`` as ``cancel`` does: held while sending, so
nothing is sent after ``Shutdown`` (after shutdown every method returns ``False``).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from actors.core.cron import CronSchedule
from messages import Cron, Pause, Reschedule, Resume, RunNow, TaskId, Trigger
from messages.operations import require_trigger

if TYPE_CHECKING:
    import pykka

__all__ = ["LiveTaskOperations"]


class LiveTaskOperations:
    """Pause, resume, run now and reschedule (a base class of ``Scheduler``: the state is the facade's)."""

    if TYPE_CHECKING:  # the facade's members these methods use
        _lock: threading.Lock
        _closed: bool

        def _ask(self, message: object) -> pykka.Future[Any]: ...
        @staticmethod
        def _get(reply: pykka.Future[Any]) -> Any: ...

    def pause(self, task_id: TaskId) -> bool:
        """Pause a task: no new run of it starts until ``resume``; a run in progress finishes.

        ``True`` if it paused a live task; ``False`` if the task is unknown, ended or already
        paused (and after shutdown). While paused, ``info(task_id).status`` is
        ``TaskStatus.PAUSED`` (not terminal); ``PAUSED`` is published. A paused task can still
        be cancelled, rescheduled and run now. Runs on the calling thread, which waits for the
        scheduler's thread to decide.
        """
        return self._operate(Pause(task_id)) if isinstance(task_id, str) else False

    def resume(self, task_id: TaskId) -> bool:
        """Resume a paused task; ``True`` if it was paused (``RESUMED`` is published).

        The due times it missed while paused are its catch-up policy's (``"latest"``: one late
        run if within ``misfire_grace``, exactly as after a restart). A fixed-delay task runs
        next ``delay`` after the resume. Runs on the calling thread, which waits for the
        scheduler's thread to decide.
        """
        return self._operate(Resume(task_id)) if isinstance(task_id, str) else False

    def run_now(self, task_id: TaskId) -> bool:
        """Run a task once now, outside its schedule; whether a run was started.

        The run does not move a fixed-rate or cron grid (the slot it waited for keeps its
        time; a slot that passes while this run is going is skipped, as a slot missed during
        any run); a fixed-delay task counts its next delay from this run's end; a one-time
        task's one run is brought forward. The run is counted like any other, and
        ``current_run().manual`` is ``True`` in it. A paused task gets one run and stays paused.
        ``False`` for an unknown or ended task, one waiting for its dependencies
        (``schedule_after``), and one whose run is in progress or about to start (the overlap
        policy ``"skip"``: nothing is queued). Runs on the calling thread, which waits for the
        scheduler's thread to decide.
        """
        return self._operate(RunNow(task_id)) if isinstance(task_id, str) else False

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
