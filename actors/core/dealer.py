"""The pure core's dealer: due tasks waiting for a worker, the idle workers, and who holds what.

Part of the pure core (see ``actors/core/timetable.py``): owned by the ``Timetable``, called only on
the scheduler's thread.

Due tasks wait in a FIFO for an idle worker. When more runs are due than workers are idle, an
idle worker is handed a batch of up to ``BATCH`` of them at once, so that a busy pool is not
paced by one message round trip per run. Each run in a batch carries a ``Claim``
(``actors/sync/claim.py``): the worker takes it to start the run, the dealer takes it to take back a
run not yet started. When a worker falls idle while others still hold runs they have not
started, it is given half of the largest such backlog: so a slow task never delays another
due task while any worker is free.

The dealer never looks at a claim to see whether it was taken: it only tries to take claims,
and treats the result of that atomic move as an input, like a report. So what it believes is
fixed by the messages it has seen: a worker's *current* run is the first run of its batch that
it has not reported yet (it is running it, or about to), and the others wait their turn.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Mapping
from typing import Final

from actors.core.effects import PlainRun
from actors.core.task_record import INLINE, PLAIN, PROCESSES, THREADS, RunInstance, TaskRecord
from actors.core.task_state import HANDED, PENDING, READY, move_to
from actors.sync.claim import Claim
from messages import RunTask, TaskId

BATCH: Final = 64
"""Most runs handed to one idle worker at once (only when more are due than workers are idle)."""

INLINE_WORKER: Final = -1
"""The worker number of the ``INLINE`` pool: the scheduler itself, making message tasks' runs."""


class _Pool:
    """Workers of one kind (threads, processes, an executor's slots) and the due runs that need that kind."""

    __slots__ = ("idle", "ready", "size")

    def __init__(self, workers: range) -> None:
        self.ready: deque[TaskRecord] = deque()  # due tasks waiting for a worker, FIFO
        self.idle: list[int] = list(reversed(workers))  # a stack: warm workers first
        self.size = len(workers)  # workers it has, idle or not (0: what it gets can never run)


class _Pools(dict[str, _Pool]):
    """The pools by executor; a missing one (a stored task's executor not registered) is made empty.

    A dict, not a method: looking a pool up is on every run's path, and ``__missing__`` costs
    nothing until a lookup misses.
    """

    dealer: Dealer

    def __missing__(self, executor: str) -> _Pool:
        return self.dealer._no_such_pool(executor)


class Dealer:
    """Per pool, the ready FIFO and the idle workers; for every busy worker, its batch.

    There are three pools: ``THREADS`` (workers ``0 .. workers-1``), ``PROCESSES`` (the next
    ``processes`` numbers) and ``INLINE`` (``INLINE_WORKER``: the scheduler itself, which makes
    the runs of message tasks as it hands them out); a task's ``spec.executor`` says which one
    runs it. ``executors`` adds one pool per registered executor (Celery, Dask...), the next
    numbers after the processes, in its order: as many workers as runs it may have in flight.
    A task naming an executor this dealer has no pool for (loaded from a store) gets an
    empty pool: its runs are stranded (``deal``).
    """

    def __init__(self, workers: int, processes: int = 0, executors: Mapping[str, int] | None = None) -> None:
        """Start with every worker idle and nothing due."""
        self._pools = _Pools(
            {
                THREADS: _Pool(range(workers)),
                PROCESSES: _Pool(range(workers, workers + processes)),
                INLINE: _Pool(range(INLINE_WORKER, INLINE_WORKER + 1)),
            }
        )
        self._pools.dealer = self
        first = workers + processes
        for name, in_flight in (executors or {}).items():
            self._pools[name] = _Pool(range(first, first + in_flight))
            first += in_flight
        self._pool_of = {worker: pool for pool in self._pools.values() for worker in pool.idle}
        self._worker_pools = tuple(pool for name, pool in self._pools.items() if name != INLINE)
        self._inline = self._pools[INLINE]
        self._batches: dict[int, deque[TaskRecord]] = {}  # busy worker -> runs handed, not yet reported
        # Ids of tasks whose next run is a run_now run (the timetable's dict: it adds and removes).
        self.manual: Container[TaskId] = {}

    # -- changes ----------------------------------------------------------------------------

    def queue(self, task: TaskRecord) -> None:
        """Put a task that has fallen due at the back of its pool's FIFO."""
        if task.state is PENDING:
            task.state = READY  # the move of nearly every task due, which the table allows
        else:
            move_to(task, READY)
        self._pools[task.spec.executor].ready.append(task)

    @property
    def plain_ready(self) -> deque[TaskRecord]:
        """The ``THREADS`` pool's FIFO, where a plain task due now is queued (``Timetable.add``).

        Whoever appends a task here has moved it ``PENDING -> READY`` first, as ``queue`` does.
        """
        return self._pools[THREADS].ready

    def queue_all(self, tasks: list[TaskRecord]) -> None:
        """``queue`` each of ``tasks``, in order (the release of what fell due at once).

        ``PENDING -> READY`` (what nearly every task due makes) is set here without a call to
        ``move_to``: the table allows it (``actors/core/task_state.py``). Any other state goes
        through ``move_to``, which refuses what the table does not allow.
        """
        pools = self._pools
        for task in tasks:
            if task.state is PENDING:
                task.state = READY
            else:
                move_to(task, READY)
            pools[task.spec.executor].ready.append(task)

    def deal(
        self,
        handed: list[tuple[int, list[RunTask | PlainRun]]],
        *,
        announce: bool,
        now: float = 0.0,
        missed: list[TaskRecord] | None = None,
        stranded: list[TaskRecord] | None = None,
    ) -> None:
        """Hand out work while a worker is idle: first the FIFO, then runs taken back from a backlog.

        Appends each ``(worker, runs)`` batch to ``handed``; ``announce`` asks the workers to
        report ``Started``. A run that would start at ``now`` later than its task's
        ``misfire_grace`` allows is not dealt but appended to ``missed`` (still ``READY``).
        A run due in a pool that has no workers at all (``executor="process"`` with no worker
        processes: a task loaded from a store) can never be dealt: it is taken off the FIFO and
        appended to ``stranded`` (still ``READY``), for the caller to fail.
        """
        for pool in self._worker_pools:
            while pool.idle and (self._hand_out(pool, handed, announce, now, missed) or self._steal(pool)):
                pass
            if not pool.size and pool.ready and stranded is not None:
                stranded.extend(task for task in pool.ready if task.state is READY)
                pool.ready.clear()
        inline = self._inline  # made at once, one batch after another: nothing to steal from
        while inline.ready and inline.idle and self._hand_out(inline, handed, announce, now, missed):
            pass

    def unqueue(self, task: TaskRecord) -> None:
        """Take a ``READY`` task off its pool's FIFO (paused, or rescheduled); its state is the caller's.

        O(length of the FIFO): only operations on a live task call it, never the hot path.
        """
        ready = self._pools[task.spec.executor].ready
        if task in ready:
            ready.remove(task)
            return
        for pool in self._pools.values():  # its spec was replaced while it waited: another pool's
            if task in pool.ready:
                pool.ready.remove(task)
                return

    def take_back(self, task: TaskRecord) -> bool:
        """Take back a handed run before its worker starts it; whether that worked.

        Its state is left to the caller (requeue it, or end it).
        """
        if not _take_claim(task):
            return False
        for worker, batch in self._batches.items():
            if task in batch:
                batch.remove(task)
                if not batch:  # the worker will find nothing to claim: it is idle now
                    del self._batches[worker]
                    self._pool_of[worker].idle.append(worker)
                break
        return True

    def requeue(self, tasks: list[TaskRecord]) -> None:
        """Put runs taken back at the front of their pools' FIFOs, in their order."""
        for task in reversed(tasks):
            move_to(task, READY)
            self._pools[task.spec.executor].ready.appendleft(task)

    def report(self, worker: int, task_id: TaskId, run: int, *, idle: bool) -> TaskRecord | None:
        """Take the run ``worker`` reports from its batch; ``None`` for a stale report.

        The task keeps its run's claim: the caller reads how the run was asked to stop, then clears it.
        """
        batch = self._batches.get(worker)
        if not batch:
            return None  # a stale report (the run was already accounted for, e.g. worker lost)
        task = batch[0]
        if task.task_id != task_id or task.run_count + 1 != run:
            return None
        batch.popleft()
        if idle:  # it could claim nothing after this run: the rest were taken back already
            assert not batch, f"worker {worker} reported idle with {len(batch)} runs unclaimed"
            del self._batches[worker]
            self._pool_of[worker].idle.append(worker)
        return task

    def report_plain(self, worker: int, task: TaskRecord, idle: bool) -> bool:
        """``report`` of a ``PlainDone``: take ``task``'s run from ``worker``'s batch; ``False`` if stale.

        Stale unless ``task`` is the batch's current run (the same record: a report names it).
        """
        batch = self._batches.get(worker)
        if not batch or batch[0] is not task:
            return False
        batch.popleft()
        if idle:  # it could claim nothing after this run: the rest were taken back already
            assert not batch, f"worker {worker} reported idle with {len(batch)} runs unclaimed"
            del self._batches[worker]
            self._pool_of[worker].idle.append(worker)
        return True

    def worker_of(self, task: TaskRecord) -> int | None:
        """The worker whose batch holds ``task``'s run, if one does."""
        for worker, batch in self._batches.items():
            if task in batch:
                return worker
        return None

    def lose(self, worker: int) -> tuple[list[TaskRecord], list[TaskRecord]]:
        """Forget ``worker``; return its runs it had started and those taken back (not yet started).

        A started run's task keeps its claim: the caller reads how the run was asked to stop, then clears it.
        """
        idle = self._pool_of[worker].idle
        if worker in idle:
            idle.remove(worker)
        started: list[TaskRecord] = []
        taken_back: list[TaskRecord] = []
        for task in self._batches.pop(worker, ()):
            (taken_back if _take_claim(task) else started).append(task)
        return started, taken_back

    def add(self, worker: int, executor: str = THREADS) -> None:
        """Make ``worker`` available: a replacement, in the pool it was in, or a new one in ``executor``'s."""
        pool = self._pool_of.get(worker)
        if pool is None:
            pool = self._pool_of[worker] = self._pools[executor]
            pool.size += 1
        idle = pool.idle
        if worker not in idle and worker not in self._batches:
            idle.append(worker)

    def take_back_all(self) -> list[TaskRecord]:
        """Take every run not yet started off the FIFOs and out of the batches (for shutdown); return them."""
        waiting = [task for pool in self._pools.values() for task in pool.ready if task.state is READY]
        for pool in self._pools.values():
            pool.ready.clear()
        for batch in list(self._batches.values()):
            waiting.extend(task for task in list(batch) if self.take_back(task))
        return waiting

    # -- queries ----------------------------------------------------------------------------

    def handed(self, worker: int, task_id: TaskId, run: int) -> TaskRecord | None:
        """Return the task whose run ``run`` ``worker`` holds, if it does."""
        for task in self._batches.get(worker, ()):  # near the front: at most one before it unreported
            if task.task_id == task_id and task.run_count + 1 == run:
                return task
        return None

    def is_current(self, task: TaskRecord) -> bool:
        """Whether ``task``'s run is its worker's current one (first in its batch, not yet reported)."""
        return any(batch[0] is task for batch in self._batches.values())

    def current(self) -> list[TaskRecord]:
        """The tasks whose run is their worker's current one (``is_current`` of many tasks at once)."""
        return [batch[0] for batch in self._batches.values()]

    @property
    def busy(self) -> bool:
        """Whether any worker holds a run (started or not) that it has not reported yet."""
        return bool(self._batches)

    @property
    def running_count(self) -> int:
        """Workers on a run: those holding a batch."""
        return len(self._batches)

    def idle_count(self, executor: str) -> int:
        """Idle workers of ``executor``'s pool (``THREADS``, ``PROCESSES`` or a registered executor's)."""
        return len(self._pools[executor].idle)

    # -- internals --------------------------------------------------------------------------

    def _no_such_pool(self, executor: str) -> _Pool:
        """An empty pool, made now, for ``executor``, which is not registered here (``_Pools``)."""
        pool = self._pools[executor] = _Pool(range(0))
        self._worker_pools = (*self._worker_pools, pool)
        return pool

    def _hand_out(  # noqa: PLR0912 - the deal of every run, written out
        self,
        pool: _Pool,
        handed: list[tuple[int, list[RunTask | PlainRun]]],
        announce: bool,
        now: float,
        missed: list[TaskRecord] | None,
    ) -> bool:
        """Deal a pool's FIFO round-robin to its idle workers; return whether any was dealt."""
        ready, idle = pool.ready, pool.idle
        while ready and ready[0].state is not READY:
            ready.popleft()  # cancelled while it waited
        if not ready:
            return False
        count = min(len(idle), len(ready))
        per_worker = min(BATCH, -(-len(ready) // count))
        workers = [idle.pop() for _ in range(count)]
        batches: list[list[TaskRecord]] = [[] for _ in workers]
        for _ in range(per_worker):
            for batch in batches:
                task = None
                while ready:  # the next run still READY (not cancelled while it waited), in time
                    task = ready.popleft()
                    if task.state is not READY:
                        task = None
                        continue
                    grace = task.spec.misfire_grace
                    if grace is None or missed is None or now - task.due_at <= grace + spec_jitter(task):
                        break
                    missed.append(task)  # too late: a run starting now would be later than its grace
                    task = None
                if task is None:
                    break
                batch.append(task)
        manual = self.manual  # empty but for a run_now: a plain run pays one test
        free = Claim.free
        for worker, batch in zip(workers, batches, strict=True):
            if not batch:
                idle.append(worker)
                continue
            self._batches[worker] = deque(batch)
            runs: list[RunTask | PlainRun] = []
            for task in batch:
                task.state = HANDED  # READY -> HANDED, the move the table allows: each was READY above
                claim = task.claim = free()
                spec = task.spec
                if spec is PLAIN and not announce and not manual:  # nearly every run: a tuple (effects.py)
                    runs.append((task, claim, task.fn, task.args, task.kwargs, task.due_at))
                    continue
                run = RunTask(
                    task,
                    task.task_id,
                    task.run_count + 1,
                    task.due_at,
                    task.fn,
                    task.args,
                    task.kwargs,
                    claim,
                    spec.trigger is None,
                    announce,
                )
                if not spec.plain_run or manual:  # rare: a run with more to say (off the common path)
                    run = _detailed(run, task, task.task_id in manual)
                runs.append(run)
            handed.append((worker, runs))
        return True

    def _steal(self, pool: _Pool) -> bool:
        """Take back half the waiting runs of the pool's fullest batch (from its back) for its FIFO's front.

        A batch's first run is its worker's current one; the rest are waiting. A take that
        fails means the worker has got that far already, and so past everything before it.
        """
        victim: deque[TaskRecord] | None = None
        most = 0
        for worker, batch in self._batches.items():
            if len(batch) - 1 > most and self._pool_of[worker] is pool:
                victim, most = batch, len(batch) - 1
        if victim is None:
            return False
        stolen: list[TaskRecord] = []
        for _ in range((most + 1) // 2):
            if not _take_claim(victim[-1]):
                break
            stolen.append(victim.pop())
        stolen.reverse()
        self.requeue(stolen)
        return bool(stolen)


def _detailed(run: RunTask, task: TaskRecord, manual: bool = False) -> RunTask:
    """``run`` with what a task with options adds: its token rule, attempt, timeout, coroutine.

    ``manual``: a run of ``run_now`` (``RunContext.manual``).
    """
    spec = task.spec
    failures = task.failures
    if isinstance(task, RunInstance):  # a run of an overlap="allow" task says itself if run_now made it
        manual = task.manual
    return RunTask(
        run.task,
        run.task_id,
        run.run,
        run.due_at,
        run.fn,
        run.args,
        run.kwargs,
        run.claim,
        spec.single_start,
        # A deadline counts from the reported start; a replacing task's next slot is watched from it.
        run.announce or spec.timeout is not None or spec.policies.replaces,
        failures.attempt if failures is not None else 1,
        spec.timeout,
        spec.coroutine,
        manual,
    )


def spec_jitter(task: TaskRecord) -> float:
    """The jitter a run's start may add to its lateness (a grace counts from the jittered start)."""
    return task.spec.policies.jitter


def _take_claim(task: TaskRecord) -> bool:
    """Take ``task``'s claim from its worker (the worker has not started the run, and now never will)."""
    claim = task.claim
    if claim is None or not claim.take():
        return False
    task.claim = None
    return True
