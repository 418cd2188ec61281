"""Calling the facade from inside: from a task, from a listener, from another thread.

``docs/reliability.md`` has the table; these tests pin each row that could deadlock or lose
work: ``shutdown`` from a task never waits for itself and the calling run's result is
delivered; ``settle``/``advance`` from a task or a listener fail at once with a clear error;
work a listener creates while events are being flushed is part of what ``settle`` waits for.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import CancelledError

import pytest

from actors import FakeClock, Scheduler, SchedulerShutdownError, WouldDeadlockError
from messages import EventKind, TaskEvent, TaskStatus

WAIT = 5.0


def test_shutdown_from_a_task_returns_and_the_runs_result_is_delivered(clock: FakeClock) -> None:
    s = Scheduler(workers=2, clock=clock)
    pending = s.schedule_once(lambda: "never", delay=60)

    def stop_from_inside() -> str:
        s.shutdown()  # must not wait for the run that called it
        return "finished after shutdown"

    inside = s.schedule_once(stop_from_inside, delay=0)
    assert inside.result(timeout=WAIT) == "finished after shutdown"
    with pytest.raises(CancelledError):
        pending.result(timeout=WAIT)
    started = time.monotonic()
    s.shutdown()  # as a `with` block's exit would: returns once every thread has ended
    assert time.monotonic() - started < WAIT


@pytest.mark.parametrize("timeout", [None, 1.0])
def test_shutdown_with_a_timeout_from_a_task_still_delivers_the_result(
    clock: FakeClock, timeout: float | None
) -> None:
    s = Scheduler(workers=1, clock=clock)
    handle = s.schedule_once(lambda: s.shutdown(timeout=timeout) or "done", delay=0)
    assert handle.result(timeout=WAIT) == "done"
    s.shutdown(timeout=WAIT)
    assert handle.info().status is TaskStatus.COMPLETED


def test_shutdown_from_a_listener_does_not_wait_for_the_bus(clock: FakeClock) -> None:
    s = Scheduler(workers=1, clock=clock)
    returned = threading.Event()

    def listener(event: TaskEvent) -> None:
        s.shutdown()
        returned.set()

    s.subscribe(listener, [EventKind.COMPLETED])
    s.schedule_once(lambda: None, delay=0)
    assert returned.wait(WAIT)
    s.shutdown(timeout=WAIT)


@pytest.mark.parametrize("call", ["settle", "advance"])
def test_settle_and_advance_from_a_task_fail_at_once(make_scheduler, call: str) -> None:
    s = make_scheduler()
    errors: list[BaseException] = []

    def task() -> None:
        started = time.monotonic()
        try:
            s.settle() if call == "settle" else s.advance(1)
        except WouldDeadlockError as error:
            errors.append(error)
        assert time.monotonic() - started < 1.0

    s.schedule_once(task, delay=0).result(timeout=WAIT)
    assert len(errors) == 1
    assert "worker thread" in str(errors[0])


def test_settle_from_a_listener_fails_at_once(make_scheduler) -> None:
    s = make_scheduler()
    errors: list[BaseException] = []
    seen = threading.Event()

    def listener(event: TaskEvent) -> None:
        try:
            s.settle()
        except WouldDeadlockError as error:
            errors.append(error)
        seen.set()

    s.subscribe(listener, [EventKind.COMPLETED])
    s.schedule_once(lambda: None, delay=0)
    assert seen.wait(WAIT)
    assert "event bus thread" in str(errors[0])


def test_waiting_for_ones_own_result_inside_the_run_fails_at_once(make_scheduler) -> None:
    s = make_scheduler()
    handles = []

    def task() -> str:
        with pytest.raises(WouldDeadlockError):
            handles[0].result()
        return "ok"

    handles.append(s.schedule_once(task, delay=1))
    s.advance(1)
    assert handles[0].result(timeout=WAIT) == "ok"


def test_other_facade_calls_work_from_a_task(make_scheduler) -> None:
    s = make_scheduler(workers=2)
    other = s.schedule_once(lambda: "other", delay=100)

    def task() -> tuple[object, ...]:
        later = s.schedule_once(lambda: None, delay=50)
        return (
            s.info(other.task_id).status,
            len(s.tasks()),
            s.stats().workers,
            s.cancel(later.task_id),
            other.cancel(),
        )

    result = s.schedule_once(task, delay=0).result(timeout=WAIT)
    assert result == (TaskStatus.SCHEDULED, 3, 2, True, True)


@pytest.mark.parametrize("trial", range(50))
def test_settle_waits_for_what_a_listener_schedules_while_flushing(make_scheduler, trial: int) -> None:
    # The dependency pattern: schedule B from A's COMPLETED listener.
    s = make_scheduler()
    ran: list[str] = []

    def on_completed(event: TaskEvent) -> None:
        if event.task_id == "a":
            s.schedule_once(lambda: ran.append("b"), delay=0, task_id="b")

    s.subscribe(on_completed, [EventKind.COMPLETED])
    s.schedule_once(lambda: ran.append("a"), delay=0, task_id="a")
    s.settle()
    assert ran == ["a", "b"]


@pytest.mark.parametrize("trial", range(20))
def test_advance_runs_what_a_listener_schedules_at_its_own_time(
    make_scheduler, clock: FakeClock, trial: int
) -> None:
    s = make_scheduler()
    seen_at: list[float] = []

    def on_completed(event: TaskEvent) -> None:
        if event.task_id == "a":
            s.schedule_once(lambda: seen_at.append(clock.now()), delay=1.0, task_id="b")

    s.subscribe(on_completed, [EventKind.COMPLETED])
    s.schedule_once(lambda: None, delay=0, task_id="a")
    s.advance(100)
    assert seen_at == [1001.0]


def test_calls_after_a_shutdown_from_inside(clock: FakeClock) -> None:
    s = Scheduler(workers=1, clock=clock)
    done = threading.Event()

    def task() -> None:
        s.shutdown(wait=False)
        with pytest.raises(SchedulerShutdownError):
            s.schedule_once(lambda: None, delay=0)
        assert s.cancel("nothing") is False
        done.set()

    s.schedule_once(task, delay=0)
    assert done.wait(WAIT)
    s.shutdown(timeout=WAIT)
