"""Concurrency storm on the real clock: 8 threads schedule, cancel and query at once.

Each thread schedules its share of the tasks (one-time, fixed-rate and fixed-delay; some fail,
some recurring ones stop themselves with ``max_consecutive_failures``), cancels some at random
(and every recurring one a little later; half by id, half through the handle, which decides on
the caller's thread and so races the workers for real), and queries ``info``/``stats``/``tasks`` as it goes.
Then every recurring task still live is cancelled, every handle waited for, and the scheduler
shut down. Checked for every task: exactly one terminal state; the runs the task itself
counted equal ``run_count`` and the runs the listener saw (numbered 1..n, each started and
ended once); a recurring task never overlapped itself; ``CANCELLED`` comes last, once, exactly
when a ``cancel`` call returned ``True``. No thread is left after shutdown.
"""

from __future__ import annotations

import gc
import random
import threading
import time
from collections import Counter
from concurrent.futures import CancelledError
from dataclasses import dataclass, field

import pytest

from actors import Scheduler, TaskHandle, UnknownTaskError
from messages import TERMINAL_STATUSES, EventKind, Once, TaskEvent, TaskStatus
from tests.reliability.helpers import new_threads, peak_rss_mib, report, rss_mib

THREADS = 8
WAIT = 60.0


class Probe:
    """A task body that counts its runs, fails when told to, and detects overlapping runs."""

    __slots__ = ("busy", "fail", "overlaps", "runs")

    def __init__(self, fail: bool) -> None:
        self.fail = fail
        self.runs = 0
        self.overlaps = 0
        self.busy = threading.Lock()

    def __call__(self) -> int:
        if not self.busy.acquire(blocking=False):
            self.overlaps += 1  # another run of this very task is in progress
            return -1
        try:
            self.runs += 1
            if self.fail:
                raise ValueError("planned failure")
            return self.runs
        finally:
            self.busy.release()


@dataclass
class Task:
    kind: str
    probe: Probe
    handle: TaskHandle
    limit: int | None
    cancels: list[bool] = field(default_factory=list)


class Ledger:
    """The listener: per task, the runs started and ended (in order) and the CANCELLED events."""

    def __init__(self) -> None:
        self.started: Counter[str] = Counter()
        self.completed: Counter[str] = Counter()
        self.failed: Counter[str] = Counter()
        self.cancelled: Counter[str] = Counter()
        self.problems: list[str] = []
        self.events = 0

    def __call__(self, event: TaskEvent) -> None:
        self.events += 1
        task_id = event.task_id
        if self.cancelled[task_id]:
            self.problems.append(f"{event.kind} after CANCELLED for {task_id}")
        ended = self.completed[task_id] + self.failed[task_id]
        if event.kind is EventKind.STARTED:
            if event.run != self.started[task_id] + 1 or ended != self.started[task_id]:
                self.problems.append(f"STARTED run {event.run} of {task_id} out of turn")
            self.started[task_id] += 1
        elif event.kind in (EventKind.COMPLETED, EventKind.FAILED):
            if event.run != ended + 1 or event.run != self.started[task_id]:
                self.problems.append(f"{event.kind} run {event.run} of {task_id} out of turn")
            (self.completed if event.kind is EventKind.COMPLETED else self.failed)[task_id] += 1
        elif event.kind is EventKind.CANCELLED:
            self.cancelled[task_id] += 1


def storm(total: int, workers: int = 4) -> None:
    gc.collect()  # start from a clean heap: figures and GC pauses are this test's own
    threads_before = threading.enumerate()
    ledger = Ledger()
    tasks: dict[str, Task] = {}
    lock = threading.Lock()
    errors: list[BaseException] = []
    barrier = threading.Barrier(THREADS)
    started = time.monotonic()
    s = Scheduler(workers=workers)
    try:
        s.subscribe(ledger)

        def client(seed: int) -> None:
            rng = random.Random(seed)
            mine: list[str] = []
            recurring: list[str] = []
            try:
                barrier.wait(WAIT)
                for i in range(total // THREADS):
                    roll = rng.random()
                    fail = rng.random() < 0.1
                    probe = Probe(fail)
                    limit = None
                    if roll < 0.7:
                        kind = "once"
                        handle = s.schedule_once(probe, rng.uniform(-0.005, 0.02))
                    elif roll < 0.85:
                        kind = "rate"
                        limit = 2 if fail else None
                        handle = s.schedule_at_fixed_rate(
                            probe,
                            rng.uniform(0.002, 0.02),
                            rng.uniform(0, 0.01),
                            max_consecutive_failures=limit,
                        )
                    else:
                        kind = "delay"
                        limit = 2 if fail else None
                        handle = s.schedule_with_fixed_delay(
                            probe,
                            rng.uniform(0.002, 0.02),
                            rng.uniform(0, 0.01),
                            max_consecutive_failures=limit,
                        )
                    with lock:
                        tasks[handle.task_id] = Task(kind, probe, handle, limit)
                    mine.append(handle.task_id)
                    if kind != "once":
                        recurring.append(handle.task_id)
                    if rng.random() < 0.15:  # cancel a recent one of mine: pending, running or ended
                        victim = mine[-rng.randint(1, min(len(mine), 30))]
                        tasks[victim].cancels.append(cancel(s, tasks[victim], rng))
                    if len(recurring) > 20:  # keep some 20 recurring tasks per thread alive
                        victim = recurring.pop(rng.randrange(len(recurring)))
                        tasks[victim].cancels.append(cancel(s, tasks[victim], rng))
                    if i % 50 == 0:
                        query(s, tasks[rng.choice(mine)])
                    if i % 2000 == 0:
                        assert all(info.status not in TERMINAL_STATUSES for info in s.tasks())
                        s.stats()
            except BaseException as error:
                errors.append(error)
                raise

        clients = [threading.Thread(target=client, args=(n,), name=f"client-{n}") for n in range(THREADS)]
        for thread in clients:
            thread.start()
        for thread in clients:
            thread.join(WAIT * 5)
        assert not errors, errors
        assert not any(thread.is_alive() for thread in clients)
        storm_done = time.monotonic()
        loaded_rss = rss_mib()

        for info in s.tasks():  # stop the recurring tasks still going
            if not isinstance(info.trigger, Once):
                tasks[info.task_id].cancels.append(s.cancel(info.task_id))
        for task in tasks.values():
            try:
                task.handle.result(timeout=WAIT)
            except TimeoutError:
                raise
            except (CancelledError, ValueError):
                pass
        s.settle()
        stats = s.stats()
        assert (stats.live_tasks, stats.running) == (0, 0), stats
    finally:
        s.shutdown(wait=True, timeout=WAIT)
    elapsed = time.monotonic() - started
    assert not new_threads(threads_before)

    assert not ledger.problems, ledger.problems[:10]
    assert len(tasks) == total
    outcomes: Counter[str] = Counter()
    for task_id, task in tasks.items():
        outcomes[f"{task.kind}:{check_task(task_id, task, ledger).value}"] += 1
    runs = sum(task.probe.runs for task in tasks.values())
    report(
        "storm",
        tasks=total,
        threads=THREADS,
        workers=workers,
        runs=runs,
        events=ledger.events,
        storm_s=round(storm_done - started, 1),
        total_s=round(elapsed, 1),
        outcomes=dict(sorted(outcomes.items())),
        rss_mib_after_storm=round(loaded_rss),
        peak_rss_mib=round(peak_rss_mib()),
    )


def cancel(s: Scheduler, task: Task, rng: random.Random) -> bool:
    """Cancel by id (decided on the scheduler's thread) or by handle (decided on this one)."""
    return s.cancel(task.handle.task_id) if rng.random() < 0.5 else task.handle.cancel()


def check_task(task_id: str, task: Task, ledger: Ledger) -> TaskStatus:
    """Check one task's end against its own count of runs, the listener and its cancel calls."""
    info = task.handle.info()
    probe = task.probe
    assert probe.overlaps == 0, task_id
    assert info.status in TERMINAL_STATUSES, (task_id, info)
    assert probe.runs == info.run_count == ledger.started[task_id], (task_id, info, probe.runs)
    assert ledger.completed[task_id] + ledger.failed[task_id] == info.run_count, (task_id, info)
    assert ledger.failed[task_id] == info.failure_count, (task_id, info)
    cancelled = info.status is TaskStatus.CANCELLED
    assert ledger.cancelled[task_id] == int(cancelled), (task_id, info)
    assert task.cancels.count(True) == int(cancelled), (task_id, info, task.cancels)
    if task.kind == "once":
        assert info.run_count == (0 if cancelled else 1), (task_id, info)
        if not cancelled:
            assert info.status is (TaskStatus.FAILED if probe.fail else TaskStatus.COMPLETED)
    elif info.status is TaskStatus.FAILED:  # stopped by max_consecutive_failures
        assert probe.fail, (task_id, info)
        assert info.consecutive_failures == task.limit, (task_id, info)
    else:
        assert cancelled, (task_id, info)
    return info.status


def query(s: Scheduler, task: Task) -> None:
    """``info`` on a task: consistent with its handle; unknown only once it ended and left the history."""
    task_id = task.handle.task_id
    done_before = task.handle.done()
    try:
        info = s.info(task_id)
    except UnknownTaskError:
        assert task.handle.done(), task_id
        return
    assert info.task_id == task_id
    if done_before:
        assert info.status in TERMINAL_STATUSES, info


def test_storm_small() -> None:
    storm(10_000)


@pytest.mark.stress
@pytest.mark.timeout(1800)
def test_storm_100k() -> None:
    storm(100_000)
