"""The pure core's dealer: due tasks waiting for a worker, the idle workers, and who holds what.

Part of the pure core (see ``actors/timetable.py``): no threads, no clock, no pykka; owned by
the ``Timetable`` and called only on the scheduler's thread.

Due tasks wait in a FIFO for an idle worker. An idle worker is handed a batch of up to
``BATCH`` of them at once when there is a backlog (so a busy pool is not paced by one message
round trip per task), and each run in a batch carries a ``Claim``: the worker takes it to start
the run, the dealer takes it to revoke a run not yet started. When a worker falls idle while
others still hold unstarted runs, it is given half of the largest such backlog, so a slow task
never delays another due task while any worker is free.
"""

from __future__ import annotations

from collections import deque
from typing import Final

from actors.task_record import State, TaskRecord
from messages import Claim, RunTask, TaskId

BATCH: Final = 64
"""Most runs handed to one idle worker at once (only when more are due than workers are idle).

Each batch costs a message to the worker; 64 shares that among four times as many runs as
16 did (throughput 0.74x -> 0.87x the textbook at 100k tasks), and stealing keeps a large
batch from delaying anyone.
"""


class Dealer:
    """The ready FIFO, the idle workers (a stack: warm workers first) and each busy worker's batch."""

    def __init__(self, workers: int) -> None:
        """Start with workers ``0 .. workers-1`` idle and nothing due."""
        self._ready: deque[TaskRecord] = deque()  # due tasks waiting for a worker, FIFO
        self._idle: list[int] = list(range(workers - 1, -1, -1))
        self._batches: dict[int, deque[TaskRecord]] = {}  # busy worker -> runs handed, not yet reported

    # -- changes ----------------------------------------------------------------------------

    def queue(self, task: TaskRecord) -> None:
        """Put a task that has fallen due at the back of the FIFO."""
        task.state = State.READY
        self._ready.append(task)

    def deal(self, handed: list[tuple[int, list[RunTask]]], *, announce: bool) -> None:
        """Hand out work while a worker is idle: first the FIFO, then runs stolen from a backlog.

        Appends each ``(worker, runs)`` batch to ``handed``; ``announce`` asks the workers to
        report ``Started``.
        """
        while self._idle and (self._hand_out(handed, announce) or self._steal()):
            pass

    def revoke(self, task: TaskRecord) -> bool:
        """Take back a handed run before its worker starts it; return whether that worked."""
        if not _revoke_claim(task):
            return False
        for worker, batch in self._batches.items():
            if task in batch:
                batch.remove(task)
                if not batch:  # the worker will find nothing to claim: it is idle now
                    del self._batches[worker]
                    self._idle.append(worker)
                break
        return True

    def report(self, worker: int, task_id: TaskId, run: int, *, idle: bool) -> TaskRecord | None:
        """Take the run ``worker`` reports from its batch; ``None`` for a stale report."""
        batch = self._batches.get(worker)
        if not batch:
            return None  # a stale report (the run was already accounted for, e.g. worker lost)
        task = batch[0]
        if task.task_id != task_id or task.run_count + 1 != run:
            return None
        batch.popleft()
        task.claim = None
        if idle:
            del self._batches[worker]
            self._requeue_unstarted(batch)  # normally none: the worker found nothing to claim
            self._idle.append(worker)
        return task

    def lose(self, worker: int) -> list[TaskRecord]:
        """Forget ``worker``: its unstarted runs go back to the front of the FIFO; return its started ones."""
        if worker in self._idle:
            self._idle.remove(worker)
        batch = self._batches.pop(worker, deque())
        self._requeue_unstarted(batch)
        started = [task for task in batch if task.claim is not None]
        for task in started:
            task.claim = None
        return started

    def add(self, worker: int) -> None:
        """Make ``worker`` (new, or a replacement) available."""
        if worker not in self._idle and worker not in self._batches:
            self._idle.append(worker)

    def clear(self) -> None:
        """Forget every task waiting for a worker (they have all been cancelled)."""
        self._ready.clear()

    # -- queries ----------------------------------------------------------------------------

    def handed(self, worker: int, task_id: TaskId, run: int) -> TaskRecord | None:
        """Return the task whose run ``run`` ``worker`` holds, if it does."""
        for task in self._batches.get(worker, ()):  # near the front: at most one before it unreported
            if task.task_id == task_id and task.run_count + 1 == run:
                return task
        return None

    @property
    def busy(self) -> bool:
        """Whether any worker holds a run (started or not) that it has not reported yet."""
        return bool(self._batches)

    @property
    def running_count(self) -> int:
        """Runs a worker has started and not yet reported."""
        return sum(task.started() for batch in self._batches.values() for task in batch)

    # -- internals --------------------------------------------------------------------------

    def _hand_out(self, handed: list[tuple[int, list[RunTask]]], announce: bool) -> bool:
        """Deal the FIFO round-robin to the idle workers; return whether any was dealt."""
        ready, idle = self._ready, self._idle
        while ready and ready[0].state is not State.READY:
            ready.popleft()  # cancelled while it waited
        if not ready:
            return False
        count = min(len(idle), len(ready))
        per_worker = min(BATCH, -(-len(ready) // count))
        workers = [idle.pop() for _ in range(count)]
        batches: list[list[TaskRecord]] = [[] for _ in workers]
        for _ in range(per_worker):
            for batch in batches:
                task = self._next_ready()
                if task is None:
                    break
                batch.append(task)
        handed_state = State.HANDED
        for worker, batch in zip(workers, batches, strict=True):
            if not batch:
                idle.append(worker)
                continue
            self._batches[worker] = deque(batch)
            runs: list[RunTask] = []
            for task in batch:
                task.state = handed_state
                claim = task.claim = Claim()
                runs.append(
                    RunTask(
                        task.task_id,
                        task.run_count + 1,
                        task.fn,
                        task.args,
                        task.kwargs,
                        claim,
                        announce,
                        task.sink,
                        task.trigger is None,
                    )
                )
            handed.append((worker, runs))
        return True

    def _next_ready(self) -> TaskRecord | None:
        ready = self._ready
        while ready:
            task = ready.popleft()
            if task.state is State.READY:
                return task
        return None

    def _steal(self) -> bool:
        """Move unstarted runs of the batch with the most to spare back to the FIFO.

        A batch can spare its unstarted runs, less one if it has not started any (its worker
        is about to); half of that spare (rounded up) is taken, from the back.
        """
        victim: deque[TaskRecord] | None = None
        most = 0
        for batch in self._batches.values():
            unstarted = sum(not task.started() for task in batch)
            spare = unstarted if unstarted < len(batch) else unstarted - 1
            if spare > most:
                victim, most = batch, spare
        if victim is None:
            return False
        stolen: list[TaskRecord] = []
        for _ in range((most + 1) // 2):
            if not _revoke_claim(victim[-1]):
                break  # its worker just started it, and so everything before it
            stolen.append(victim.pop())
        self._ready.extendleft(stolen)  # reversed twice: original order, at the front
        return bool(stolen)

    def _requeue_unstarted(self, batch: deque[TaskRecord]) -> None:
        """Take back the runs of ``batch`` not yet started; put them at the front of the FIFO, in order."""
        self._ready.extendleft(reversed([task for task in batch if _revoke_claim(task)]))


def _revoke_claim(task: TaskRecord) -> bool:
    claim = task.claim
    if claim is None or not claim.take():
        return False
    task.claim = None
    task.state = State.READY
    return True
