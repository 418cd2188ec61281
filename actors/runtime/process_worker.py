"""The process worker: a worker actor whose runs execute in a child process it owns.

A ``ProcessWorkerActor`` speaks the worker protocol exactly as ``WorkerActor`` does (batches,
claims, tokens, reports); only the call itself goes to its ``ProcessSlot``, which runs the
task's function, named by reference, in a child process. While the child runs, this actor's
thread waits in ``poll()`` without the GIL, so a CPU-bound task there never slows the
scheduler, the timer or the thread workers. A child that dies (``os._exit``, a crash, a
signal) fails its run with ``ProcessDiedError``; the slot starts a new child for the next run.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pykka

from actors.process.slot import ProcessSlot
from actors.references import LazyReference, reference_of
from actors.runtime.worker import WorkerActor
from actors.sync.clock import Clock
from actors.sync.outbox import Outbox
from actors.sync.threads import ThreadRegistry
from messages import RunTask


class ProcessWorkerActor(WorkerActor):
    """A worker whose runs execute in the child process of its ``ProcessSlot``.

    The slot belongs to the scheduler actor, which made it (so it can kill a child whose run
    must be abandoned); this actor calls it from its own thread and stops it when it stops.
    """

    def __init__(
        self,
        index: int,
        scheduler: pykka.ActorRef[Any],
        clock: Clock,
        slot: ProcessSlot,
        reports: Outbox[Any] | None = None,
        threads: ThreadRegistry | None = None,
        start_check: Callable[[RunTask], bool] | None = None,
    ) -> None:
        """Create process worker ``index`` (runs on the caller's thread; no child starts until a run)."""
        super().__init__(index, scheduler, clock, reports, threads, start_check)
        self._slot = slot

    def _call(self, run: RunTask) -> object:
        """Run the task in the child process (this thread waits without the GIL)."""
        fn = run.fn
        reference = fn.reference if isinstance(fn, LazyReference) else reference_of(fn)
        return self._slot.call(reference, run.args, run.kwargs)

    def on_stop(self) -> None:
        """End the child process, then report as any worker does (worker thread)."""
        self._slot.stop()
        super().on_stop()

    def on_failure(self, *details: object) -> None:
        """End the child process, then report as any worker does (worker thread)."""
        self._slot.stop()
        super().on_failure(*details)
