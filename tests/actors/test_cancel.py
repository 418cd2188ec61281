"""Cancellation: before a run, during a run, while waiting for a worker, and the no-ops.

Both ways: ``TaskHandle.cancel`` (decided on the caller's thread) and ``Scheduler.cancel`` (by id).
"""

from __future__ import annotations

import threading
from concurrent.futures import CancelledError

import pytest

from actors import FakeClock
from messages import EventKind, TaskStatus
from tests.conftest import Gate


def test_cancel_before_the_run(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ran: list[float] = []
    handle = s.schedule_once(lambda: ran.append(clock.now()), delay=5)
    assert handle.cancel() is True
    s.advance(10)
    assert ran == []
    assert handle.info().status is TaskStatus.CANCELLED
    assert recorder.kinds() == [EventKind.CANCELLED]
    with pytest.raises(CancelledError):
        handle.result(timeout=5)


@pytest.mark.parametrize("by_handle", [False, True], ids=["by id", "by handle"])
def test_cancel_during_a_recurring_run(make_scheduler, clock: FakeClock, recorder, by_handle: bool) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    gate = Gate()
    handle = s.schedule_with_fixed_delay(gate, 1.0)
    gate.wait_started()
    assert (handle.cancel() if by_handle else s.cancel(handle.task_id)) is True
    assert s.info(handle.task_id).status is TaskStatus.RUNNING
    gate.open()
    s.advance(10)
    assert recorder.kinds() == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED, EventKind.CANCELLED]
    info = handle.info()
    assert (info.status, info.run_count) == (TaskStatus.CANCELLED, 1)


def test_cancel_during_a_one_time_run_lets_it_finish(make_scheduler, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    gate = Gate(result="done")
    handle = s.schedule_once(gate, delay=0)
    gate.wait_started()
    assert handle.cancel() is False  # its worker took the token
    assert not handle.done()
    gate.open()
    assert handle.result(timeout=5) == "done"
    s.settle()
    assert recorder.kinds() == [EventKind.DUE, EventKind.STARTED, EventKind.COMPLETED]


def test_cancel_of_a_due_task_waiting_for_a_worker(make_scheduler, recorder) -> None:
    s = make_scheduler(workers=1)
    s.subscribe(recorder)
    release = threading.Event()
    s.schedule_once(lambda: release.wait(10), delay=0)
    waiting = s.schedule_once(lambda: None, delay=0)
    recorder.wait_for(lambda events: sum(e.kind is EventKind.DUE for e in events) == 2)
    assert waiting.cancel() is True
    release.set()
    s.settle()
    assert recorder.kinds(waiting.task_id) == [EventKind.DUE, EventKind.CANCELLED]
    assert waiting.info().run_count == 0


def test_cancel_no_ops_return_false(make_scheduler) -> None:
    s = make_scheduler()
    assert s.cancel("nope") is False
    finished = s.schedule_once(lambda: None, delay=0)
    finished.result(timeout=5)
    assert finished.cancel() is False
    assert s.cancel(finished.task_id) is False
    pending = s.schedule_once(lambda: None, delay=5)
    assert pending.cancel() is True
    assert pending.cancel() is False
    assert s.cancel(pending.task_id) is False


def test_cancelled_id_can_be_reused(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    old = s.schedule_once(lambda: "old", delay=5, task_id="report")
    old.cancel()
    new = s.schedule_once(lambda: "new", delay=5, task_id="report")
    assert old.cancel() is False  # the old handle must not cancel the new task
    s.advance(5)
    assert new.result(timeout=5) == "new"


def test_cancel_churn_keeps_the_heap_bounded(make_scheduler) -> None:
    s = make_scheduler()
    for _ in range(20):
        handles = [s.schedule_once(lambda: None, delay=3600) for _ in range(500)]
        for handle in handles:
            handle.cancel()
    stats = s.stats()
    assert stats.live_tasks == 0
    assert (stats.heap_size, stats.stale_heap_entries) == (0, stats.stale_heap_entries)
    assert stats.stale_heap_entries <= 2 * 64 + 2  # pruned as they pile up


# -- TaskHandle.cancel: decided on the caller's thread ---------------------------------------


def test_handle_cancel_is_done_at_once(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler()
    s.subscribe(recorder)
    ran: list[float] = []
    handle = s.schedule_once(lambda: ran.append(clock.now()), delay=5)
    assert handle.cancel() is True
    assert handle.done()  # before the scheduler has heard of it, as concurrent.futures does
    with pytest.raises(CancelledError):
        handle.result(timeout=0)
    assert handle.info().status is TaskStatus.CANCELLED  # this thread's cancel is seen first
    assert handle.cancel() is False
    assert s.cancel(handle.task_id) is False
    s.advance(10)
    assert ran == []
    assert recorder.kinds() == [EventKind.CANCELLED]


def test_handle_cancel_wakes_a_waiter(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: None, delay=60)
    outcome: list[BaseException] = []
    waiting = threading.Event()

    def wait() -> None:
        waiting.set()
        try:
            handle.result(timeout=10)
        except BaseException as error:
            outcome.append(error)

    waiter = threading.Thread(target=wait)
    waiter.start()
    assert waiting.wait(5)
    assert handle.cancel() is True
    waiter.join(10)
    assert not waiter.is_alive()
    assert [type(error) for error in outcome] == [CancelledError]


def test_handle_cancel_of_a_run_waiting_in_a_batch(make_scheduler, clock: FakeClock, recorder) -> None:
    """Runs handed to a busy worker but not started yet are cancelled for good by their handles."""
    s = make_scheduler(workers=1)
    s.subscribe(recorder)
    gate = Gate()
    s.schedule_once(gate, delay=1, task_id="first")
    ran: list[int] = []
    handles = [s.schedule_once(lambda n=n: ran.append(n), delay=1, task_id=f"t{n}") for n in range(5)]
    clock.advance(1)
    gate.wait_started()
    assert all(handle.cancel() for handle in handles[1::2])
    gate.open()
    s.settle()
    assert ran == [0, 2, 4]
    assert [h.info().status for h in handles] == [
        TaskStatus.COMPLETED,
        TaskStatus.CANCELLED,
        TaskStatus.COMPLETED,
        TaskStatus.CANCELLED,
        TaskStatus.COMPLETED,
    ]
    assert recorder.kinds().count(EventKind.CANCELLED) == 2


def test_handle_cancel_after_the_end_returns_false(make_scheduler) -> None:
    s = make_scheduler()
    handle = s.schedule_once(lambda: 1, delay=0)
    assert handle.result(timeout=5) == 1
    assert handle.cancel() is False
    s.shutdown()
    assert handle.cancel() is False  # the scheduler is gone; the handle still answers
    assert handle.info().status is TaskStatus.COMPLETED


# Regression (issue 22, point 12): stats() showed heap_size=4 beside live_tasks=3 after a cancel:
# the heap's stale entry counted as a task. heap_size counts the tasks waiting in the heap; the
# entries a cancel left behind, not pruned yet, are stale_heap_entries.
def test_stats_do_not_count_a_cancelled_tasks_stale_entry_as_a_waiting_task(make_scheduler) -> None:
    s = make_scheduler()
    handles = [s.schedule_once(lambda: None, delay=60 + n) for n in range(4)]
    assert handles[2].cancel()  # not the head of the heap (that one would be popped at once)
    stats = s.stats()
    assert (stats.live_tasks, stats.heap_size, stats.stale_heap_entries) == (3, 3, 1)
