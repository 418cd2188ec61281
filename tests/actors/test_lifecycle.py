"""Shutdown, history, bad input, and no busy waiting."""

from __future__ import annotations

import math
import threading

import pytest

from actors import DuplicateTaskError, FakeClock, Scheduler, SchedulerShutdownError, UnknownTaskError
from messages import EventKind, TaskStatus
from tests.conftest import Gate


def test_shutdown_cancels_pending_and_lets_running_finish(make_scheduler, clock: FakeClock, recorder) -> None:
    s = make_scheduler(workers=2)
    s.subscribe(recorder)
    gate = Gate(result="finished")
    running = s.schedule_once(gate, delay=0)
    recurring = s.schedule_at_fixed_rate(lambda: None, 5.0, initial_delay=1.0)
    pending = [s.schedule_once(lambda: None, delay=60) for _ in range(3)]
    gate.wait_started()
    threading.Timer(0.05, gate.open).start()
    s.shutdown(wait=True, timeout=10)
    assert running.result(timeout=0) == "finished"
    assert recurring.info().status is TaskStatus.CANCELLED
    for handle in pending:
        assert handle.info().status is TaskStatus.CANCELLED
    cancelled = [e.task_id for e in recorder.events if e.kind is EventKind.CANCELLED]
    assert sorted(cancelled) == sorted([recurring.task_id] + [h.task_id for h in pending])
    assert recorder.kinds(running.task_id)[-1] is EventKind.COMPLETED


def test_shutdown_is_idempotent_and_refuses_new_work(make_scheduler) -> None:
    s = make_scheduler()
    s.shutdown()
    s.shutdown()
    s.shutdown(wait=False)
    with pytest.raises(SchedulerShutdownError):
        s.schedule_once(lambda: None, delay=1)
    with pytest.raises(SchedulerShutdownError):
        s.subscribe(print)
    assert s.cancel("task-1") is False
    s.settle()  # returns at once


def test_context_manager_shuts_down() -> None:
    with Scheduler(workers=1, clock=FakeClock()) as s:
        handle = s.schedule_once(lambda: 7, delay=0)
        assert handle.result(timeout=5) == 7
    with pytest.raises(SchedulerShutdownError):
        s.schedule_once(lambda: None, delay=0)


def test_shutdown_without_wait_lets_threads_end_on_their_own() -> None:
    s = Scheduler(workers=2, clock=FakeClock())
    gate = Gate(result="ok")
    handle = s.schedule_once(gate, delay=0)
    gate.wait_started()
    s.shutdown(wait=False)
    gate.open()
    assert handle.result(timeout=5) == "ok"
    s.shutdown(wait=True, timeout=10)  # joins the threads that are ending anyway


def test_history_is_bounded_but_handles_keep_their_final_state(make_scheduler) -> None:
    s = make_scheduler(workers=1, history=3)  # one worker: tasks finish in order
    handles = [s.schedule_once(lambda n=n: n, delay=0) for n in range(10)]
    s.settle()
    with pytest.raises(UnknownTaskError):
        s.info(handles[0].task_id)
    assert s.info(handles[-1].task_id).status is TaskStatus.COMPLETED
    assert [h.info().status for h in handles] == [TaskStatus.COMPLETED] * 10
    assert [h.result(timeout=0) for h in handles] == list(range(10))


def test_unknown_task_error_is_a_key_error(make_scheduler) -> None:
    s = make_scheduler()
    with pytest.raises(KeyError, match="no task with id 'ghost'"):
        s.info("ghost")


def test_tasks_lists_live_tasks_in_scheduling_order(make_scheduler) -> None:
    s = make_scheduler()
    a = s.schedule_once(lambda: None, delay=5, task_id="a", name="first")
    b = s.schedule_at_fixed_rate(lambda: None, 1.0, initial_delay=2, task_id="b")
    assert [(i.task_id, i.name) for i in s.tasks()] == [("a", "first"), ("b", b.info().name)]
    a.cancel()
    assert [i.task_id for i in s.tasks()] == ["b"]


NOT_NUMBERS = ["1", None, True, [1]]


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda s: s.schedule_once(42, delay=1), TypeError),
        (lambda s: s.schedule_once("no reference", delay=1), ValueError),
        (lambda s: s.schedule_once("no_such_module_xyz:fn", delay=1), ValueError),
        (lambda s: s.schedule_once(print), ValueError),
        (lambda s: s.schedule_once(print, delay=1, at=2), ValueError),
        (lambda s: s.schedule_once(print, delay=math.nan), ValueError),
        (lambda s: s.schedule_once(print, at=math.inf), ValueError),
        (lambda s: s.schedule_once(print, delay="1"), TypeError),
        (lambda s: s.schedule_at_fixed_rate(print, 0), ValueError),
        (lambda s: s.schedule_at_fixed_rate(print, -1), ValueError),
        (lambda s: s.schedule_at_fixed_rate(print, math.nan), ValueError),
        (lambda s: s.schedule_at_fixed_rate(print, math.inf), ValueError),
        (lambda s: s.schedule_at_fixed_rate(print, 1, initial_delay=math.nan), ValueError),
        (lambda s: s.schedule_with_fixed_delay(print, 0), ValueError),
        (lambda s: s.schedule_with_fixed_delay(print, math.inf), ValueError),
        (lambda s: s.schedule_with_fixed_delay(print, 1, max_consecutive_failures=0), ValueError),
        (lambda s: s.schedule_once(print, delay=1, task_id="task-7"), ValueError),
        (lambda s: s.schedule_once(print, delay=1, task_id=7), TypeError),
        (lambda s: s.schedule_once(print, delay=1, args=[1]), TypeError),
        (lambda s: s.subscribe("not callable"), TypeError),
        (lambda s: s.subscribe(print, kinds=[]), ValueError),
        (lambda s: s.subscribe(print, kinds=["due"]), TypeError),
    ],
)
def test_bad_input_is_rejected_and_changes_nothing(make_scheduler, clock: FakeClock, call, error) -> None:
    s = make_scheduler()
    survivor = s.schedule_once(lambda: "survived", delay=1, task_id="survivor")
    with pytest.raises(error):
        call(s)
    s.advance(1)
    assert survivor.result(timeout=5) == "survived"
    assert s.tasks() == []


def test_duplicate_live_task_id(make_scheduler) -> None:
    s = make_scheduler()
    first = s.schedule_once(lambda: "first", delay=1, task_id="job")
    with pytest.raises(DuplicateTaskError, match="'job'"):
        s.schedule_once(lambda: "second", delay=1, task_id="job")
    with pytest.raises(ValueError, match="job"):
        s.schedule_at_fixed_rate(lambda: None, 1, task_id="job")
    s.advance(1)
    assert first.result(timeout=5) == "first"


@pytest.mark.parametrize("workers", [0, -1])
def test_workers_must_be_positive(workers: int) -> None:
    with pytest.raises(ValueError, match="workers"):
        Scheduler(workers=workers)


def test_no_busy_waiting_over_a_long_idle_period(make_scheduler, clock: FakeClock) -> None:
    s = make_scheduler()
    s.schedule_once(lambda: None, delay=3600)
    s.settle()
    before = s.stats()
    for _ in range(1000):
        clock.advance(3.0)  # 50 minutes of fake time in small steps, nothing due
    after = s.stats()
    assert after.timer_wakeups == before.timer_wakeups
    assert after.ticks == before.ticks
    clock.advance(600.0)
    s.settle()
    assert s.stats().live_tasks == 0
