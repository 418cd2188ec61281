"""The worker pool: at most `workers` at once, FIFO for ties, failures contained, thread safety."""

from __future__ import annotations

import threading

from actors import FakeClock
from messages import EventKind, TaskStatus


def test_at_most_workers_run_at_once_and_others_wait(make_scheduler, recorder) -> None:
    s = make_scheduler(workers=2)
    s.subscribe(recorder)
    release = threading.Event()
    handles = [s.schedule_once(lambda: release.wait(10), delay=0) for _ in range(5)]
    recorder.wait_for(lambda events: sum(e.kind is EventKind.STARTED for e in events) == 2)
    assert s.stats().running == 2
    assert [h.info().status for h in handles].count(TaskStatus.RUNNING) == 2
    release.set()
    s.settle()
    assert all(h.info().status is TaskStatus.COMPLETED for h in handles)


def test_a_slow_task_does_not_delay_other_due_tasks(make_scheduler) -> None:
    s = make_scheduler(workers=2)
    release = threading.Event()
    slow = s.schedule_once(lambda: release.wait(10), delay=0)
    quick = [s.schedule_once(lambda: None, delay=0) for _ in range(20)]
    for handle in quick:
        handle.result(timeout=5)
    assert not slow.done()
    release.set()
    slow.result(timeout=5)


def test_ties_start_in_scheduling_order(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler(workers=1)
    s.subscribe(recorder, kinds=[EventKind.STARTED])
    order: list[int] = []
    for n in range(20):
        s.schedule_once(order.append, at=1010.0, args=(n,))
    s.advance(10)
    assert order == list(range(20))
    assert [e.task_id for e in recorder.events] == [f"task-{n}" for n in range(1, 21)]


def test_facade_is_safe_from_many_threads(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler(workers=4)
    counts: dict[str, int] = {}
    cancelled: list[str] = []
    lock = threading.Lock()

    def count(key: str) -> None:
        with lock:
            counts[key] = counts.get(key, 0) + 1

    def client(n: int) -> None:
        for i in range(200):
            handle = s.schedule_once(count, delay=i % 3, args=(f"{n}-{i}",))
            if i % 10 == 0 and handle.cancel():
                cancelled.append(f"{n}-{i}")
            if i % 50 == 0:
                s.tasks()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    s.advance(3)
    assert len(cancelled) >= 8 * 13  # every cancel of a delayed task prevented its run
    assert set(counts) | set(cancelled) == {f"{n}-{i}" for n in range(8) for i in range(200)}
    assert not set(counts) & set(cancelled)
    assert set(counts.values()) == {1}
