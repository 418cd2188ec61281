"""Shutdown under load, on the real clock: thousands of tasks due and running.

Thousands of one-time tasks (each takes about a millisecond) and a few hundred recurring ones
are due at once on 8 workers. Once a good number of runs have started, ``shutdown(wait=True)``
is called. It must return; then every task has ended: a task that never started ends
``CANCELLED`` with exactly one ``CANCELLED`` event; a run in progress finished and reported
(a recurring task then ends ``CANCELLED``); every scheduler thread has ended, so nothing can
run any more (and no run started after ``shutdown`` returned).
"""

from __future__ import annotations

import gc
import threading
import time
from collections import defaultdict

import pytest

from actors import Scheduler, SchedulerShutdownError, TaskHandle
from messages import EventKind, TaskEvent, TaskStatus
from tests.reliability.helpers import new_threads, peak_rss_mib, report, rss_mib

WORKERS = 8
WAIT = 60.0


class Work:
    """A task body: records each run's start and end (monotonic), takes ~1 ms of real time."""

    __slots__ = ("ends", "starts")

    def __init__(self) -> None:
        self.starts: list[float] = []
        self.ends: list[float] = []

    def __call__(self, started: threading.Semaphore) -> None:
        self.starts.append(time.monotonic())
        started.release()
        time.sleep(0.001)  # the task's own work
        self.ends.append(time.monotonic())


def shutdown_under_load(once: int, recurring: int, started_before_shutdown: int) -> None:
    gc.collect()  # start from a clean heap: figures and GC pauses are this test's own
    threads_before = threading.enumerate()
    events: dict[str, list[TaskEvent]] = defaultdict(list)
    s = Scheduler(workers=WORKERS)

    def listen(event: TaskEvent) -> None:
        events[event.task_id].append(event)

    s.subscribe(listen)
    started = threading.Semaphore(0)
    works: dict[str, tuple[str, Work, TaskHandle]] = {}
    try:
        every = (once + recurring) // recurring
        for i in range(once + recurring):
            work = Work()
            if i % every == 0 and i // every < recurring:
                handle = s.schedule_at_fixed_rate(work, 0.005, args=(started,))
                works[handle.task_id] = ("rate", work, handle)
            else:
                handle = s.schedule_once(work, i * 1e-5, args=(started,))
                works[handle.task_id] = ("once", work, handle)
        for _ in range(started_before_shutdown):  # wait until that many runs have started
            assert started.acquire(timeout=WAIT)
    finally:
        loaded_rss = rss_mib()
        begun = time.monotonic()
        s.shutdown(wait=True, timeout=WAIT)
        returned = time.monotonic()
    assert not new_threads(threads_before)  # every thread has ended: nothing can run any more
    with pytest.raises(SchedulerShutdownError):
        s.schedule_once(lambda: None, 0)

    outcomes: dict[str, int] = defaultdict(int)
    runs = 0
    for task_id, (kind, work, handle) in works.items():
        assert handle.done(), task_id
        status = handle.info().status
        seen = [e.kind for e in events[task_id]]
        runs += len(work.starts)
        assert len(work.starts) == len(work.ends), task_id  # no run was cut short
        assert all(t < returned for t in work.starts), task_id  # nothing ran after shutdown returned
        assert seen.count(EventKind.STARTED) == len(work.starts), (task_id, seen)
        ended = seen.count(EventKind.COMPLETED) + seen.count(EventKind.FAILED)
        assert ended == len(work.starts), (task_id, seen)
        if kind == "once" and work.starts:
            assert status is TaskStatus.COMPLETED, (task_id, seen)
            assert seen[-1] is EventKind.COMPLETED, (task_id, seen)
            assert EventKind.CANCELLED not in seen, (task_id, seen)
            outcomes["once ran"] += 1
        else:
            assert status is TaskStatus.CANCELLED, (task_id, seen)
            assert seen[-1] is EventKind.CANCELLED, (task_id, seen)
            assert seen.count(EventKind.CANCELLED) == 1, (task_id, seen)
            outcomes[f"{kind} {'ran, then ' if work.starts else ''}cancelled"] += 1
    report(
        "shutdown under load",
        tasks=len(works),
        runs=runs,
        outcomes=dict(outcomes),
        shutdown_s=round(returned - begun, 3),
        rss_mib_at_shutdown=round(loaded_rss),
        peak_rss_mib=round(peak_rss_mib()),
    )
    assert outcomes["once cancelled"] > 0  # the load was real: work was pending at shutdown


def test_shutdown_under_load() -> None:
    shutdown_under_load(once=3_000, recurring=200, started_before_shutdown=500)


@pytest.mark.stress
@pytest.mark.timeout(600)
def test_shutdown_under_heavy_load() -> None:
    shutdown_under_load(once=50_000, recurring=2_000, started_before_shutdown=5_000)
